"""benchmarks/gpu_step_probe.py on the CPU: a tiny card, tiny sizes (skipped where torch or transformers is absent:
neither is a dependency of the project); its predictions and the report of what it measured on a GPU (no torch)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from doc_sections import marked

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "probe" / "tiny-qwen2.yaml"


def _probe():
    spec = importlib.util.spec_from_file_location("gpu_step_probe", ROOT / "benchmarks" / "gpu_step_probe.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_step_probe"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_probe_times_every_priced_term_and_prints_it_beside_our_prediction(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "probe.json"
    rc = _probe().main(["--device", "cpu", "--model", str(TINY), "--gpu", "h100", "--train-sizes", "1x16,2x32",
                        "--decode-sizes", "2x8x4", "--repeats", "1", "--json", str(out)])
    assert rc == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["term"] for r in rows] == ["forward", "train", "forward", "train", "optimizer", "prefill", "decode"]
    for r in rows:
        assert r["measured_s"] > 0 and r["predicted_s"] > 0 and r["predicted_fitted_s"] > 0, r
    printed = capsys.readouterr().out
    assert printed.count("measured") == len(rows) and "predicted for h100" in printed


def test_the_predictions_are_the_cost_model_s_own():
    """The probe's predicted decode step is time.hf_decode_step_seconds, as _hf_generate prices it: the host's time
    per layer (HF_EAGER_S_PER_LAYER, measured) until the batch's GPU work is longer."""
    mod = _probe()
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C

    ours = mod.Model(load_model("qwen2.5-1.5b"), "h100")
    floor = C.HF_EAGER_S_PER_LAYER * 28
    assert ours.decode_step(1, 256, 64) == pytest.approx(floor)
    assert ours.decode_step(64, 256, 64) == pytest.approx(floor)
    assert ours.decode_step(4096, 2048, 64) > floor
    assert ours.passes(4, 1024, 3.0) > ours.passes(4, 1024, 1.0) > 0
    assert ours.optimizer() == pytest.approx(28 * ours.mc.params / (3350e9 * C.HBM_EFF_OPTIMIZER), rel=0.05)


def _report():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import probe_report

    return probe_report


def test_the_measured_table_in_the_docs_is_today_s_model_against_what_the_gpu_measured():
    """docs/accuracy.md's GPU table recomputes every prediction from the current model: a change to the cost model
    that moves it fails here until `python benchmarks/probe_report.py` rewrites the section."""
    rep = _report()
    assert marked(rep.DOC.read_text(), rep.BEGIN, rep.END) == rep.section()


def test_the_measurements_support_the_constants_they_are_cited_for():
    """HF_EAGER_S_PER_LAYER is the median host time per layer of the measured decode steps; the update's memory
    is within 10% once its logits are priced by the accounting of the same operations; the AdamW step within 10%
    of its derivation with HBM_EFF_OPTIMIZER."""
    import statistics

    from rlbatch_solver.costmodel import constants as C

    rep = _report()
    per_layer = [r["measured_s"] / rep._layers(d["model"]) for d in rep._step_files() for r in d["rows"]
                 if r["term"] == "decode"]
    assert len(per_layer) >= 10
    assert C.HF_EAGER_S_PER_LAYER == pytest.approx(statistics.median(per_layer), rel=0.02)
    ratios = rep.ratios()
    for model, terms in ratios.items():
        for ratio in terms.get("mem-train", []) + terms.get("mem-ckpt", []):
            assert 0.9 <= ratio <= 1.1, (model, ratio)
    from rlbatch_solver.catalog.models import load_model

    steps = [(d, r) for d in rep._step_files() for r in d["rows"] if r["term"] == "optimizer"]
    assert len(steps) >= 3
    for d, r in steps:
        derived = _probe().Model(load_model(d["model"]), d["gpu"]).optimizer()
        assert 0.9 <= r["measured_s"] / derived <= 1.1, (d["model"], r["measured_s"], derived)


def test_the_fp32_log_prob_accountings_are_what_the_h200_measured():
    """TRL's fp32 log-probs (selective_log_softmax: gather minus logsumexp, accounting "swift-ddp") and transformers'
    labels loss ("hf-labels", the step probe's loss) are priced at the H200 probe's update peak at long inputs: within
    5% above the largest measured, never below (benchmarks/results/h200-2026-11-26/logits_*.json)."""
    from rlbatch_solver.costmodel import constants as C

    files = sorted((ROOT / "benchmarks" / "results" / "h200-2026-11-26").glob("logits_*.json"))
    rows = [r for f in files for r in json.loads(f.read_text())["rows"]]
    for path, ours in (("update: fp32 logsumexp", C.LOGIT_BYTES["swift-ddp"][2]),
                       ("update: HF labels loss (fp32)", C.LOGIT_BYTES["hf-labels"][2])):
        measured = max(r["bytes_per_logit"] for r in rows if r["path"] == path)
        assert measured <= ours <= 1.05 * measured, (path, measured, ours)
    assert C.LOGIT_BYTES["swift-ddp"][2] == C.LOGIT_BYTES["openrlhf-0.5"][2]  # the same per-row logsumexp code


def test_a_lora_micro_batch_is_priced_as_the_h100_measured_it():
    """benchmarks/results/*/lora_*.json (one H100, peft 0.21): with the adapters in the base's dtype, or with
    gradient checkpointing, a LoRA micro batch's peak is our activations with ``Plan.lora_params`` within 5%; peft's
    fp32 adapters under autocast without checkpointing hold up to 11% more (docs/accuracy.md, not priced). Its time
    was never under 0.85 of the same model's full fine-tune (the frozen weights' gradients saved, the adapters'
    small GEMMs spent), which is why the step-time model prices a LoRA update as a full one's passes."""
    rep = _report()
    from rlbatch_solver.catalog.models import load_model

    files = rep._lora_files()
    assert len(files) >= 2
    for d in files:
        card = load_model(d["model"])
        model = _probe().Model(card, d["gpu"])
        for r in d["rows"]:
            if r["mode"] == "full":
                continue
            ours = model.update_bytes(*rep._size(r["size"]), r["ckpt"], card.lora_params(d["rank"]))
            ratio = r["measured_bytes"] / ours
            if r["ckpt"] or r["mode"] == "lora bf16":
                assert 0.95 <= ratio <= 1.05, (d["model"], r)
            else:
                assert 1.0 <= ratio <= 1.15, (d["model"], r)
            assert r["of_full"] >= 0.85, (d["model"], r)

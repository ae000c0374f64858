"""benchmarks/gpu_step_probe.py on the CPU: a tiny card, tiny sizes. Skipped where torch or transformers is absent
(neither is a dependency of the project; the probe is for the day a GPU is lent)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "probe" / "tiny-qwen2.yaml"


def _probe():
    spec = importlib.util.spec_from_file_location("gpu_step_probe", ROOT / "benchmarks" / "gpu_step_probe.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_step_probe"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_probe_times_every_priced_term_and_prints_it_beside_our_prediction(tmp_path, capsys):
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
    """The probe's predicted decode step is time.decode_step_seconds on an eager single-GPU plan, as _hf_generate
    prices it; a larger batch reads more KV and is slower."""
    mod = _probe()
    from rlbatch_solver.catalog.models import load_model

    ours = mod.Model(load_model("qwen2.5-1.5b"), "h100")
    assert ours.decode_step(64, 256, 64) > ours.decode_step(1, 256, 64) > 0
    assert ours.passes(4, 1024, 3.0) > ours.passes(4, 1024, 1.0) > 0
    assert ours.optimizer() == pytest.approx(28 * ours.mc.params / (3350e9 * 0.8), rel=0.05)


def test_bad_sizes_are_refused():
    with pytest.raises(SystemExit):
        _probe()._sizes("4x", 2)

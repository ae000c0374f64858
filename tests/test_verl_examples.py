"""verl's published FSDP examples, checked on the GPUs they were published for.

Data: tests/data/verl/fsdp_examples.yaml (values of the scripts, their sources and GPUs). Every
example must be VALID under the verl 0.9.1 rules; those marked ``fits: true`` must be predicted to
fit in memory. ``fits: false`` records a known gap of the cost model (at the worst-case lengths it
assumes) with its numbers: the test is an expected failure that turns red once the gap closes, so
the data get updated.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb

DATA = Path(__file__).resolve().parent / "data" / "verl" / "fsdp_examples.yaml"
EXAMPLES = yaml.safe_load(DATA.read_text())
GIB_MIB = 1024
AR = "actor_rollout_ref"


def _check(ex: dict, extra: list[str] | None = None, length_fraction: float = 1.0):
    return rb.check(ex["overrides"] + (extra or []), framework="verl", gpus=ex["gpus"], model=ex["model"],
                    gpu=ex["gpu"], length_fraction=length_fraction)


def test_data_names_gpu_and_source():
    names = [ex["name"] for ex in EXAMPLES]
    assert len(names) == len(set(names)) >= 8
    for ex in EXAMPLES:
        assert ex["source"] and ex["gpu"] and ex["gpus"] >= 1 and ex["model"]
        n = dict(o.split("=", 1) for o in ex["overrides"] if "=" in o)
        assert int(n["trainer.n_gpus_per_node"]) * int(n["trainer.nnodes"]) == ex["gpus"]


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_published_example_is_valid(ex):
    r = _check(ex)
    rule_errors = [v for v in r.violations if not v.rule.startswith("verl.memory.")]
    assert not rule_errors, [(v.rule, v.message) for v in rule_errors]


@pytest.mark.parametrize("ex", [pytest.param(e, id=e["name"], marks=() if e["fits"] else pytest.mark.xfail(
    strict=True, reason="known cost-model gap at worst-case lengths (see the data file)")) for e in EXAMPLES])
def test_published_example_fits_its_gpus(ex):
    """At the data's lengths (``length_fraction``: the longest micro batch's share of the limits,
    1.0 unless the data file says why it is less)."""
    r = _check(ex, length_fraction=ex.get("length_fraction", 1.0))
    assert r.memory is not None
    assert r.memory.fits, {p: round(m / GIB_MIB, 1) for p, m in r.memory.peaks.items()}
    assert r.valid


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if "fits_at_max_lengths" in e], ids=lambda e: e["name"])
def test_examples_that_fit_only_below_max_lengths_say_so(ex):
    """The worst case (every sequence at its limit) is what check reports by default."""
    r = _check(ex)
    assert r.memory.fits is ex["fits_at_max_lengths"]


def test_72b_scaling_script_fits_the_h200_its_header_names_not_the_h800():
    """run_qwen2_5_72b_fsdp.sh names "32xH800/H200". Its 24,576-token budget is full whatever the data (40
    sequences per GPU per mini-batch), so the update's peak does not depend on a length assumption: about
    86 GiB per GPU, under an H200's usable memory and over an H800's (states 33.9 + checkpoints 31.4 + gather
    10.2 (FSDP1's root unit, embedding + lm_head, beside two layers, + the lm_head's bf16 gradient, held to the
    backward's end, where the root is reduced; a layer's gradient and fp32 cast come once the logits are freed)
    + logits 7.0 + the recomputed layer's excess over the logits, its trained norms' bf16 inputs included + the
    sleeping engine's CUDA graphs; 90.3 with 6 B x the embedding beside the logits)."""
    ex = next(e for e in EXAMPLES if e["name"] == "scaling_qwen2_5_72b_fsdp")
    on_h200 = _check(ex)
    on_h800 = rb.check(ex["overrides"], framework="verl", gpus=ex["gpus"], model=ex["model"], gpu="h800")
    assert on_h200.memory.fits and not on_h800.memory.fits
    assert on_h200.memory.peaks["actor_update"] == on_h800.memory.peaks["actor_update"]
    assert 85 * GIB_MIB < on_h800.memory.peaks["actor_update"] < 87 * GIB_MIB
    assert on_h800.memory.phases["actor_update"]["rollout engine (kept between rollouts)"] > 0
    assert max(on_h800.memory.peaks, key=on_h800.memory.peaks.get) == "actor_update"


def _seed():
    return next(e for e in EXAMPLES if e["name"] == "seed_adpo_4x4090")


def test_seed_4090_example_fits_with_compiled_entropy():
    """verl 0.9.1 wraps the entropy in torch.compile by default: the old log-prob pass holds the
    bf16 logits (2 B per logit) only, 16 x 2160 tokens x 151,936 x 2 B = 9.8 GiB, not the 34 GiB of
    the 7 B/logit rule of thumb; the phase peaks at about 18.3 GiB of 21.8 usable on a 24 GB card."""
    r = _check(_seed())
    assert r.valid and r.memory.fits
    logits = r.memory.phases["old_log_prob"]["logits+entropy"]
    assert logits == pytest.approx(16 * 2160 * 151936 * 2 / 2**20, abs=1)
    assert r.memory.peaks["old_log_prob"] < r.memory.capacity_mib


def test_seed_4090_example_without_torch_compile_does_not_fit():
    """Eager entropy (fsdp_config.use_torch_compile=False): autocast's fp32 softmax, the product's fp32 copy of the
    logits and the fp32 product add 12 B per logit (measured on one H200): 14 B/logit = 68 GiB for the log-prob
    micro batch of 16."""
    r = _check(_seed(), [f"{AR}.actor.fsdp_config.use_torch_compile=False"])
    assert not r.memory.fits and not r.valid
    assert [v.rule for v in r.violations] == ["verl.memory.old_log_prob"]
    logits = r.memory.phases["old_log_prob"]["logits+entropy"]
    assert logits == pytest.approx(16 * 2160 * 151936 * 14 / 2**20, abs=1)
    # chunked entropy brings the eager case back to the edge: under the limit but for the sleeping engine's CUDA
    # graphs, which stay on the GPU beside the log-prob pass (tight, not OOM)
    rc = _check(_seed(), [f"{AR}.actor.fsdp_config.use_torch_compile=False",
                          f"{AR}.actor.entropy_from_logits_with_chunking=True"])
    graphs = rc.memory.phases["old_log_prob"]["rollout engine (kept between rollouts)"]
    assert rc.memory.peaks["old_log_prob"] - graphs <= rc.memory.capacity_mib
    assert rc.memory.outlook("old_log_prob") == "tight"


def test_actor_use_torch_compile_key_does_not_reach_the_fsdp_engine():
    """verl 0.9.1 FSDPEngine reads engine_config.use_torch_compile (actor.fsdp_config), not the actor's
    own use_torch_compile key: setting the latter changes nothing."""
    base = _check(_seed())
    other = _check(_seed(), [f"{AR}.actor.use_torch_compile=False"])
    assert other.memory.peaks == base.memory.peaks

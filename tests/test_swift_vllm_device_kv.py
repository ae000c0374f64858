"""ms-swift 3.1's --vllm_device engine sizes its KV cache as gpu_memory_utilization x the whole GPU with its weights,
activations and CUDA graphs on top (frameworks/swift/cost.py ``VLLM_DEVICE_KV_OF_TOTAL``: GRPOTrainer.__init__ builds
the engine in training rank 0's process with ``device=fast_infer_device``, and vLLM 0.7.2, 3.1.1's recommended
vLLM, profiles the process's current GPU, not the engine's; the class TRL 0.14/0.15's vllm_device engine shares,
Plan.engine_kv_of_total). Priced only for a config the flags date to 3.1 alone: one they date to 3.1.0 that 3.2 and
later also take is priced as the newest of those (SwiftFramework.newest_dated_release), as ms-swift's own v3.4.0 examples
are. Found on ms-swift #3361 (out of memory on 24 GB cards; its post names no release)."""

from __future__ import annotations

import pytest

import memory_corpus as mc
from rlbatch_solver import api
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.frameworks.swift import versions as swift_versions

MIB = 2**20
# Qwen2.5-7B LoRA, one training process (NPROC_PER_NODE=1) and --vllm_device auto: vLLM on the second of four 24 GB
# cards at --vllm_gpu_memory_utilization 0.8; its flags (--vllm_device, no later release's key) date it to 3.1.0 and
# fit up to 3.5.3
CASE_3361 = "swift_3361_qwen2_5_7b_grpo_lora_vllm_device_1proc_4x24gb"
KV = "vLLM KV cache"
# ran: ms-swift v3.4.0's example scripts with vLLM on a GPU of its own, dated to 3.1.0 by the same flags (their own
# release is 3.4.0)
RAN = ("swift_example_v3.4.0_full_vllm_qwen2_5_7b_full_8x80g", "swift_example_v3.4.0_lora_vllm_qwen2_5_7b_lora_2x80g")


def _case(name: str) -> mc.Case:
    return next(c for c in mc.cases() if c.name == name)


def _check(case: mc.Case, framework: str | None = None):
    return api.check(case.args, framework=framework or case.framework, gpus=case.gpus, model=case.model,
                     gpu=case.gpu, length_fraction=case.length_fraction)


def test_a_config_dated_3_1_by_its_flags_prices_the_engine_as_the_newest_release_they_allow():
    """--vllm_device dates a config to 3.1.0, the oldest release that has it, but 3.2-3.5.3 take it too and their
    engine sizes its KV cache off its own GPU: unnamed, ms-swift's own v3.4.0 examples and #3361 get the engine GPU a
    3.4.0 user gets (named), not 3.1's whole-GPU KV cache, and the note says what the 3.1 reading adds."""
    for name in (*RAN, CASE_3361):
        case = _case(name)
        dated, named = _check(case).memory, _check(case, "swift==3.4.0").memory
        assert dated.peaks[Phase.ROLLOUT] == named.peaks[Phase.ROLLOUT], name
        assert dated.phases[Phase.ROLLOUT][KV] == named.phases[Phase.ROLLOUT][KV], name
        total = load_gpu(case.gpu).memory_bytes / MIB
        util = float(case.args[case.args.index("--vllm_gpu_memory_utilization") + 1])
        assert dated.phases[Phase.ROLLOUT][KV] < util * total - 14 * 1024, name  # the weights came out of the share
    notes = " ".join(_check(_case(CASE_3361)).notes)
    assert "Its flags fit ms-swift 3.1.0 to 3.5.3" in notes and "Under ms-swift 3.1 with the vLLM it recommends" in notes


def test_3361_under_a_3_1_only_reading_holds_util_times_total_of_kv_and_the_weights_on_top(monkeypatch):
    """Flags only 3.1 has (none of KEY_RELEASES today; the span is patched to end at 3.1.1): the engine's KV cache is
    0.8 x the 24 GB card's whole memory, the 7B weights (14.2 GiB) on top, more than the card holds, out of memory as
    reported. Read as 3.2 and later run it (the real span) the weights come out of the share and it fits."""
    case = _case(CASE_3361)
    later = _check(case).memory
    monkeypatch.setattr(swift_versions, "dated_span", lambda flat: ("3.1.0", "3.1.1"))
    r = _check(case)
    rollout = r.memory.phases[Phase.ROLLOUT]
    total = load_gpu(case.gpu).memory_bytes
    assert rollout[KV] == pytest.approx(0.8 * total / MIB, rel=1e-3)
    assert not r.memory.fits
    assert r.memory.peaks[Phase.ROLLOUT] > r.memory.capacity_of(Phase.ROLLOUT)
    assert "ms-swift 3.1 (the release it is priced as)" in " ".join(r.notes)
    assert later.phases[Phase.ROLLOUT][KV] < rollout[KV] - 14 * 1024
    assert later.peaks[Phase.ROLLOUT] <= later.capacity_of(Phase.ROLLOUT)


def test_check_gives_the_3_1_readings_peak_beside_the_one_it_prices(monkeypatch):
    """The note of a config its flags date to 3.1.0 and later releases says what the 3.1 engine's GPU would hold (the
    peak a 3.1-only reading prices: #3361's 24 GB card out of memory), not only that it holds more; a config priced as
    3.1 has no second reading to give."""
    case = _case(CASE_3361)
    r = _check(case)
    line = next(n for n in r.notes if n.startswith("read as ms-swift 3.1.0 with vLLM 0.7.2 runs it"))
    monkeypatch.setattr(swift_versions, "dated_span", lambda flat: ("3.1.0", "3.1.1"))
    only = _check(case)
    worst = max(only.memory.peaks, key=lambda p: only.memory.peaks[p] - only.memory.capacity_of(p))
    assert f"peaks at {only.memory.peaks[worst] / 1024:.1f} of {only.memory.capacity_of(worst) / 1024:.1f}" in line
    assert "(out of memory)" in line and f"priced at {r.memory.peaks[worst] / 1024:.1f} GiB here" in line
    assert not any(n.startswith("read as ms-swift") for n in only.notes)


@pytest.mark.parametrize("name", RAN)
def test_ran_examples_with_vllm_on_its_own_gpu_still_fit(name):
    assert _check(_case(name)).memory.fits


def test_the_3_1_readings_note_and_its_peak_come_together(monkeypatch):
    """One predicate (SwiftFramework._legacy_vllm_config and _second_3_1_reading) decides both the note that says what
    ms-swift 3.1's engine adds and the 3.1 reading's peak beside it: each config has both or neither, whether dated to
    3.1 and later releases (both), named as a release (neither), without vLLM (neither) or priced as 3.1 (neither)."""
    def both(case: mc.Case, framework: str | None = None, extra: tuple[str, ...] = ()) -> tuple[bool, bool]:
        r = api.check(list(case.args) + list(extra), framework=framework or case.framework, gpus=case.gpus,
                      model=case.model, gpu=case.gpu, length_fraction=case.length_fraction)
        return (any("Under ms-swift 3.1 with the vLLM it recommends" in n for n in r.notes),
                any(n.startswith("read as ms-swift") for n in r.notes))

    for name in (*RAN, CASE_3361):
        assert both(_case(name)) == (True, True), name
    case = _case(CASE_3361)
    assert both(case, "swift==3.4.0") == (False, False)
    assert both(case, extra=("--use_vllm", "false")) == (False, False)
    monkeypatch.setattr(swift_versions, "dated_span", lambda flat: ("3.1.0", "3.1.1"))
    assert both(case) == (False, False)

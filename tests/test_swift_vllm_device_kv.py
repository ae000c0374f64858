"""ms-swift 3.1's --vllm_device engine sizes its KV cache as gpu_memory_utilization x the whole GPU with its weights,
activations and CUDA graphs on top (frameworks/swift/cost.py ``VLLM_DEVICE_KV_OF_TOTAL``: GRPOTrainer.__init__ builds
the engine in training rank 0's process with ``device=fast_infer_device``, and vLLM 0.7.2, 3.1.1's recommended
vLLM, profiles the process's current GPU, not the engine's; the class TRL 0.14/0.15's vllm_device engine shares,
Plan.engine_kv_of_total). Pinned on ms-swift #3361 (out of memory on 24 GB cards)."""

from __future__ import annotations

import pytest

import memory_corpus as mc
from rlbatch_solver import api
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.frameworks.swift.cost import vllm_device_kv_of_total

MIB = 2**20
# Qwen2.5-7B LoRA, one training process (NPROC_PER_NODE=1) and --vllm_device auto: vLLM on the second of four 24 GB
# cards at --vllm_gpu_memory_utilization 0.8; its flags (--vllm_device, no later release's key) date it to 3.1.0
CASE_3361 = "swift_3361_qwen2_5_7b_grpo_lora_vllm_device_1proc_4x24gb"
KV = "vLLM KV cache"
# ran: ms-swift v3.4.0's example scripts with vLLM on a GPU of its own, dated to 3.1.0 by the same flags
RAN = ("swift_example_v3.4.0_full_vllm_qwen2_5_7b_full_8x80g", "swift_example_v3.4.0_lora_vllm_qwen2_5_7b_lora_2x80g")


def _case(name: str) -> mc.Case:
    return next(c for c in mc.cases() if c.name == name)


def _check(case: mc.Case, framework: str | None = None):
    return api.check(case.args, framework=framework or case.framework, gpus=case.gpus, model=case.model,
                     gpu=case.gpu, length_fraction=case.length_fraction)


@pytest.mark.parametrize("release,own_gpu,expected", [
    ("3.1.0", True, True), ("3.1.1", True, True), ("3.1.0", False, False), ("3.2.0", True, False),
    ("3.4.1", True, False), (None, True, False),
])
def test_the_releases_whose_vllm_device_engine_profiles_another_gpu(release, own_gpu, expected):
    assert vllm_device_kv_of_total(release, own_gpu) is expected


def test_3361_vllm_gpu_holds_util_times_total_of_kv_and_the_weights_on_top():
    """The engine's KV cache is 0.8 x the 24 GB card's whole memory, the 7B weights (14.2 GiB) on top: more than the
    card holds, out of memory as reported. Named 3.3.1 (3.2-3.3's pack, an engine that profiles its own GPU) the
    KV cache is what the share leaves after the weights and the verdict is the old one."""
    case = _case(CASE_3361)
    r = _check(case)
    rollout = r.memory.phases[Phase.ROLLOUT]
    total = load_gpu(case.gpu).memory_bytes
    assert rollout[KV] == pytest.approx(0.8 * total / MIB, rel=1e-3)
    assert not r.memory.fits
    assert r.memory.peaks[Phase.ROLLOUT] > r.memory.capacity_of(Phase.ROLLOUT)
    later = _check(case, "swift==3.3.1").memory
    assert later.phases[Phase.ROLLOUT][KV] < rollout[KV] - 14 * 1024  # the weights came out of the share
    assert later.peaks[Phase.ROLLOUT] <= later.capacity_of(Phase.ROLLOUT)


@pytest.mark.parametrize("name", RAN)
def test_ran_examples_with_vllm_on_its_own_gpu_still_fit(name):
    assert _check(_case(name)).memory.fits

"""ms-swift 3.1.1-3.4.0 take a LoRA policy's log-probs from the logits of every position of the sequence, sliced to the
response's afterwards (grpo_trainer.py GRPOTrainer._get_per_token_logps: PEFT's forward has no ``logits_to_keep``
parameter, so TRL's response-only forward is skipped); 3.4.1 reads the base model's forward and keeps the response's
positions only (frameworks/swift/cost.py ``whole_sequence_logits``; costmodel/memory.py ``_sliced_off_logits``)."""

from __future__ import annotations

import pytest

import memory_corpus as mc
from rlbatch_solver import api
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel.memory import T_LOGITS, model_consts
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.frameworks.swift.cost import whole_sequence_logits

MIB = 2**20
BF16 = 2
# ms-swift #3361: Qwen2.5-7B LoRA, one training process on a 24 GB card, vLLM on the next GPU (--vllm_device auto),
# --per_device_train_batch_size 2, --max_length 2048, --max_completion_length 1024, ZeRO-3 (bf16 logits)
CASE_3361 = "swift_3361_qwen2_5_7b_grpo_lora_vllm_device_1proc_4x24gb"
# a ran neighbour: ms-swift v3.4.0's LoRA example with vLLM on a GPU of its own (2 x 80 GB)
CASE_RAN = "swift_example_v3.4.0_lora_vllm_qwen2_5_7b_lora_2x80g"


def _case(name: str) -> mc.Case:
    return next(c for c in mc.cases() if c.name == name)


def _check(case: mc.Case, framework: str | None = None):
    return api.check(case.args, framework=framework or case.framework, gpus=case.gpus, model=case.model,
                     gpu=case.gpu, length_fraction=case.length_fraction)


@pytest.mark.parametrize("release,lora,expected", [
    ("3.1.0", True, True), ("3.1.1", True, True), ("3.3.1", True, True), ("3.4.0", True, True),
    ("3.4.1", True, False), ("3.5.0", True, False), ("4.6.0", True, False),
    ("3.2.0", False, False), (None, True, False),
])
def test_the_releases_whose_lora_forward_keeps_every_position(release, lora, expected):
    assert whole_sequence_logits(release, lora) is expected


def test_3361_reference_and_update_hold_the_prompt_positions_logits():
    """#3361 dated to 3.1 by its flags: the reference pass (adapter disabled, no grad) holds the bf16 logits of both
    sequences at every position, 2 x (2,048 + 1,024) x 152,064 x 2 B = 1,782 MiB (594 were the response's only);
    the update adds the prompt positions' 1,188 MiB to the response's 8 B per logit (the slice's full-size bf16
    gradient). Named 3.4.1, the response's positions only (with their temperature copy in the reference pass)."""
    case = _case(CASE_3361)
    vocab = model_consts(load_model(case.model)).vocab
    rows, prompt, response = 2, 2048, 1024
    r = _check(case)
    ref = r.memory.phases[Phase.REF][T_LOGITS]
    update = r.memory.phases[Phase.ACTOR_UPDATE][T_LOGITS]
    assert ref == pytest.approx(rows * (prompt + response) * vocab * BF16 / MIB, rel=1e-3)
    assert update == pytest.approx(rows * vocab * (response * 4 * BF16 + prompt * BF16) / MIB, rel=1e-3)
    fixed = _check(case, "swift==3.4.1")
    # 3.4.1's own forward also divides the response logits by the temperature out of place (a second bf16 copy in a
    # no-grad pass: tests/test_temperature_copy.py)
    assert fixed.memory.phases[Phase.REF][T_LOGITS] == pytest.approx(
        rows * response * vocab * 2 * BF16 / MIB, rel=1e-3)
    assert fixed.memory.phases[Phase.ACTOR_UPDATE][T_LOGITS] == pytest.approx(
        rows * response * vocab * 4 * BF16 / MIB, rel=1e-3)


def test_a_ran_lora_run_of_3_4_0_still_fits_with_the_prompt_positions():
    """The v3.4.0 LoRA example with vLLM on a GPU of its own ran as published: priced with every position's logits
    it still fits, by a wide margin."""
    case = _case(CASE_RAN)
    r = _check(case)
    assert r.memory.fits
    update = r.memory.phases[Phase.ACTOR_UPDATE][T_LOGITS]
    fixed = _check(case, "swift==3.4.1").memory.phases[Phase.ACTOR_UPDATE][T_LOGITS]
    assert update > fixed

"""The out-of-place temperature division of the response logits (``logits = logits / self.temperature``): TRL 0.16.0
to 0.29.x and ms-swift 3.3.0 to 4.1.x hold the logits and their quotient together in a forward-only pass (old
log-prob, reference); TRL 1.0.0 and ms-swift 4.2.0 on divide in place (``logits.div_``). The update's peak, in its
backward, is unchanged (costmodel/constants.py TEMPERATURE_COPY_FWD_BYTES_PER_LOGIT)."""

from __future__ import annotations

import pytest

import memory_corpus as mc
from rlbatch_solver import api
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel.memory import T_LOGITS, model_consts
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.frameworks.swift.cost import temperature_copy as swift_copy
from rlbatch_solver.frameworks.trl.versions import temperature_copy as trl_copy

MIB = 2**20
# TRL #3456: Qwen3-0.6B, one A100 without DeepSpeed (fp32 logits), 4 completions of 1,024 tokens per device
CASE_TRL = "trl_3456_qwen3_0_6b_grpo_1xa100_80gb"
# ms-swift #3871: QwQ-32B full fine-tune under ZeRO-3 (bf16 logits), one completion of 2,048 tokens per device
CASE_SWIFT = "swift_3871_qwq_32b_grpo_full_novllm_8xh20"


def _phases(name: str, framework: str):
    case = next(c for c in mc.cases() if c.name == name)
    r = api.check(case.args, framework=framework, gpus=case.gpus, model=case.model, gpu=case.gpu,
                  length_fraction=case.length_fraction)
    return r.memory.phases, model_consts(load_model(case.model)).vocab


@pytest.mark.parametrize("release,expected", [
    ("3.2.0", False), ("3.3.0", True), ("3.4.1", True), ("4.0.4", True), ("4.1.0", True),
    ("4.2.0", False), ("4.6.0", False), (None, False),
])
def test_the_swift_releases_whose_own_forward_divides_out_of_place(release, expected):
    assert swift_copy(release) is expected


@pytest.mark.parametrize("release,expected", [
    ("0.14.0", False), ("0.15.2", False), ("0.16.0", True), ("0.16.1", True), ("0.29.1", True),
    ("1.0.0", False), ("1.16.0", False),
])
def test_the_trl_releases_whose_forward_divides_out_of_place(release, expected):
    assert trl_copy(release) is expected


def test_trl_0_16_reference_pass_holds_the_fp32_copy():
    """Without DeepSpeed the logits are fp32 (accelerate's convert_outputs_to_fp32): 0.15.2's reference pass holds
    2 + 4 B per response logit, 0.16.0's the fp32 logits and their quotient, 4 + 4; the update is the same."""
    old, vocab = _phases(CASE_TRL, "trl==0.15.2")
    new, _ = _phases(CASE_TRL, "trl==0.16.0")
    rows = 4 * 1024
    assert old[Phase.REF][T_LOGITS] == pytest.approx(rows * vocab * 6 / MIB, rel=1e-3)
    assert new[Phase.REF][T_LOGITS] == pytest.approx(rows * vocab * 8 / MIB, rel=1e-3)
    assert new[Phase.ACTOR_UPDATE][T_LOGITS] == old[Phase.ACTOR_UPDATE][T_LOGITS]


@pytest.mark.parametrize("release,per_logit", [("3.2.0", 2), ("3.3.0", 4), ("4.1.0", 4), ("4.2.0", 2)])
def test_swift_reference_pass_holds_the_bf16_copy_where_the_release_makes_it(release, per_logit):
    """Under ZeRO-3 the logits stay bf16: 2 B per response logit, 2 + 2 while the quotient is made out of place."""
    phases, vocab = _phases(CASE_SWIFT, f"swift=={release}")
    assert phases[Phase.REF][T_LOGITS] == pytest.approx(2048 * vocab * per_logit / MIB, rel=1e-3)
    assert phases[Phase.ACTOR_UPDATE][T_LOGITS] == pytest.approx(2048 * vocab * 8 / MIB, rel=1e-3)

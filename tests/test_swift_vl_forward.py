"""What ms-swift 3.1-3.6 build in a vision-language model's forwards beyond its language model's usual terms, each
read from the code those releases run (frameworks/swift/cost.py): the log-prob forward's logits at every position
(``whole_sequence_logits``: ``GRPOTrainer._get_per_token_logps`` hands a multimodal model to its own
``model(**inputs).logits``, without ``logits_to_keep``, up to 3.6.0), transformers' generate prefill logits at every
prompt position (``generate_logits_every_position``: Qwen2.5-VL's forward has no ``logits_to_keep`` in the
transformers those releases pin), and the ViT's dense SDPA mask over the forward's patches (``vit_sdpa_mask``).
Pinned on ms-swift #4311 (Qwen2.5-VL-3B, full GRPO with transformers' generate, ZeRO-3 on 4 GPUs, an OOM)."""

from __future__ import annotations

import pytest

import memory_corpus as mc
from rlbatch_solver import api
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel import constants as C
from rlbatch_solver.costmodel.memory import (T_GEN_LOGITS_ALL, T_LOGITS, T_VIT_FWD, model_consts)
from rlbatch_solver.costmodel.phase import Phase

MIB = 2**20
BF16 = 2
CASE_4311 = "swift_4311_qwen2_5_vl_3b_grpo_full_nogen_vllm_zero3_4xh20"
# per_device_train_batch_size 8 x gradient_accumulation_steps 4 = 32 sequences generated at once per GPU (8 a loss
# micro batch), --max_length 2048, --max_completion_length 1024, MAX_PIXELS 602112 = 3072 ViT patches an image
SEQS, MICRO, PROMPT, RESPONSE, PATCHES = 32, 8, 2048, 1024, 3072
# a ran neighbour: the maintainer's Qwen2.5-VL-7B LoRA script on 2 x A800 (vLLM colocated)
CASE_RAN_VL = "swift_3426_qwen2_5_vl_7b_grpo_lora_colocate_offload_2xa800_maintainer"


def _case(name: str) -> mc.Case:
    return next(c for c in mc.cases() if c.name == name)


def _check(case: mc.Case, framework: str | None = None, extra: list[str] | None = None):
    return api.check(list(case.args) + (extra or []), framework=framework or case.framework, gpus=case.gpus,
                     model=case.model, gpu=case.gpu, length_fraction=case.length_fraction)


@pytest.mark.parametrize("release,priced", [("3.5.0", True), ("3.6.0", True), ("3.7.0", False), ("3.10.3", False)])
def test_4311_under_a_named_release_gets_the_vl_forwards_of_its_transformers(release, priced):
    """#4311 (Qwen2.5-VL-3B, full) named as each release: up to 3.6 (transformers < 4.53: no logits_to_keep in
    Qwen2.5-VL's forward, a dense SDPA mask in its ViT; ms-swift's log-prob forward over every position) the generate
    prefill's every-position logits, the ViT mask and the reference's whole-sequence logits are priced; from 3.7.0
    (model_kwarg_keys passes logits_to_keep) none of them, and the rollout peak falls by more than the mask."""
    case = _case(CASE_4311)
    vocab = model_consts(load_model(case.model)).vocab
    memory = _check(case, f"swift=={release}").memory
    rollout, ref = memory.phases[Phase.ROLLOUT], memory.phases[Phase.REF]
    assert (T_GEN_LOGITS_ALL in rollout) is priced and (T_VIT_FWD in rollout) is priced
    whole = MICRO * (PROMPT + RESPONSE) * vocab * BF16 / MIB
    assert (ref[T_LOGITS] >= whole * (1 - 1e-3)) is priced  # (3.5-3.6 add the temperature's copy of the response's)
    if priced:
        late = _check(case, "swift==3.7.0").memory
        mask = C.VIT_SDPA_MASK_BYTES_PER_PAIR * (SEQS * PATCHES) ** 2 / MIB
        assert memory.peaks[Phase.ROLLOUT] > late.peaks[Phase.ROLLOUT] + mask * 0.9


def test_4311_reference_holds_every_positions_logits():
    """#4311 is a full fine-tune (not LoRA): before, its reference pass held the response's logits only; a
    multimodal model's forward keeps all 8 x (2,048 + 1,024) positions' bf16 logits (3.4.1: plus the temperature's
    bf16 copy of the response's). From 3.10.3 (the forward passes logits_to_keep where the model takes it) the
    response's only."""
    case = _case(CASE_4311)
    vocab = model_consts(load_model(case.model)).vocab
    ref = _check(case).memory.phases[Phase.REF][T_LOGITS]
    assert ref == pytest.approx(MICRO * (PROMPT + RESPONSE) * vocab * BF16 / MIB, rel=1e-3)
    late = _check(case, "swift==3.10.3").memory.phases[Phase.REF][T_LOGITS]
    assert late < ref
    assert late == pytest.approx(MICRO * RESPONSE * vocab * 2 * BF16 / MIB, rel=1e-3)  # logits and their quotient


def test_4311_generate_prefill_holds_every_prompt_positions_logits():
    """transformers' generate on Qwen2.5-VL (no logits_to_keep in 4.46-4.52) builds the prefill's logits of all 32
    sequences' 2,048 prompt positions in bf16: 18.5 GiB beside the KV cache. 3.10.3 (transformers < 4.56 allowed):
    not priced."""
    case = _case(CASE_4311)
    vocab = model_consts(load_model(case.model)).vocab
    r = _check(case)
    rollout = r.memory.phases[Phase.ROLLOUT]
    assert rollout[T_GEN_LOGITS_ALL] == pytest.approx(SEQS * PROMPT * vocab * BF16 / MIB, rel=1e-3)
    late = _check(case, "swift==3.10.3").memory.phases[Phase.ROLLOUT]
    assert T_GEN_LOGITS_ALL not in late
    assert r.memory.peaks[Phase.ROLLOUT] > late.get(T_GEN_LOGITS_ALL, 0) + sum(late.values()) + 20 * 1024


def test_4311_vit_mask_over_the_generate_batchs_patches():
    """The ViT of the generate prefill runs over all 32 images at once: one block's dense SDPA mask is
    (32 x 3,072)^2 pairs at 1 + 2 B (the bool mask and torch's bf16 additive copy), 27 GiB, more than the language
    model's prefill (logits included), so its excess is the rollout's peak term. --attn_impl flash_attn (varlen
    attention): no mask, and the ViT adds nothing over the LM's prefill."""
    case = _case(CASE_4311)
    rollout = _check(case).memory.phases[Phase.ROLLOUT]
    mask = C.VIT_SDPA_MASK_BYTES_PER_PAIR * (SEQS * PATCHES) ** 2
    assert mask / 2**30 == pytest.approx(27.0, abs=0.1)
    lm_forward = sum(v for k, v in rollout.items() if k.startswith("generate prefill") or k.startswith(
        "generate logits")) * MIB
    assert rollout[T_VIT_FWD] * MIB > mask - lm_forward
    flash = _check(case, extra=["--attn_impl", "flash_attn"]).memory.phases[Phase.ROLLOUT]
    assert T_VIT_FWD not in flash


def test_a_ran_vl_lora_run_still_fits():
    """The maintainer's Qwen2.5-VL-7B LoRA script (2 x A800, ~70 GB a card) still fits: its frozen ViT and the
    reference pass's prompt logits were priced before (LoRA on 3.2); the mask of 8 images stays under its LM's
    forward."""
    r = _check(_case(CASE_RAN_VL))
    assert r.memory.fits


@pytest.mark.parametrize("release,priced", [("3.7.0", True), ("3.8.0", True), ("3.10.3", True), ("3.12.6", True),
                                            ("4.0.0", False)])
def test_qwen2_vl_keeps_every_positions_logits_until_its_forward_takes_logits_to_keep(release, priced):
    """Qwen2-VL's forward (Qwen2VLForConditionalGeneration.forward) has no logits_to_keep in transformers 4.55.4,
    4.56.2 or 4.57.6, the newest that ms-swift 3.7.0 (< 4.56), 3.8.0 (< 4.57) and 3.9-3.12 (< 4.58) allow, so 3.7.0's
    model_kwarg_keys passes none and transformers' generate keeps every prompt position: #4311's config on
    Qwen2-VL-7B keeps both terms there, where Qwen2.5-VL (logits_to_keep from 4.54.0) has neither. Transformers 5.0.0
    adds it (ms-swift 4.0.0 allows < 5.3.0): from 4.0.0 the response's logits only."""
    case = _case(CASE_4311)
    vocab = model_consts(load_model("qwen2-vl-7b")).vocab
    memory = api.check(list(case.args), framework=f"swift=={release}", gpus=case.gpus, model="qwen2-vl-7b",
                       gpu=case.gpu, length_fraction=case.length_fraction).memory
    rollout, ref = memory.phases[Phase.ROLLOUT], memory.phases[Phase.REF]
    assert (rollout.get(T_GEN_LOGITS_ALL, 0) == pytest.approx(SEQS * PROMPT * vocab * BF16 / MIB, rel=1e-3)) is priced
    assert (ref[T_LOGITS] >= MICRO * (PROMPT + RESPONSE) * vocab * BF16 / MIB * (1 - 1e-3)) is priced
    vl25 = _check(case, f"swift=={release}").memory.phases[Phase.ROLLOUT]
    assert T_GEN_LOGITS_ALL not in vl25  # Qwen2.5-VL's forward takes it in every transformers these allow

"""check without --gpu/--model prices nothing: the notes on how a config is read say what it "would be priced" at,
never that it "is priced" (``Framework.config_notes``' ``priced``, from ``commands.common.memory_evaluated``), and
with both given they say it is."""

from __future__ import annotations

import pytest

import rlbatch_solver as rb

SWIFT = ["--rlhf_type", "grpo", "--per_device_train_batch_size", "4", "--num_generations", "8"]
OPENRLHF = ["--train_batch_size", "128", "--micro_train_batch_size", "8"]
TRL = ["--per_device_train_batch_size", "8", "--num_generations", "8"]

CASES = [
    ("verl-megatron==0.5.0", ["actor_rollout_ref.actor.strategy=megatron", "data.train_batch_size=64",
                              "actor_rollout_ref.rollout.n=8",
                              "+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=true"],
     "does not read actor.optim.override_optimizer_config"),
    ("slime", ["--rollout-batch-size", "32", "--n-samples-per-prompt", "8", "--global-batch-size", "256"],
     "no --rollout-max-prompt-len"),
    ("openrlhf", [*OPENRLHF, "--ds.load_in_4bit"], "--ds.load_in_4bit without LoRA"),
    ("openrlhf", [*OPENRLHF, "--ds.lora.rank", "16"], "the critic's LoRA"),
    ("swift", [*SWIFT, "--quant_method", "hqq", "--quant_bits", "4"], "a hqq quantized base"),
    ("swift", [*SWIFT, "--tuner_type", "full", "--quant_method", "bnb", "--quant_bits", "4"], "with --tuner_type full"),
    ("swift", [*SWIFT, "--use_vllm", "true", "--vllm_mode", "server"], "the `swift rollout` server's GPU"),
    ("swift", [*SWIFT, "--use_vllm", "true", "--num_infer_workers", "1"], "written for ms-swift < 3.5"),
    ("swift", [*SWIFT, "--multi_turn_scheduler", "x", "--max_turns", "3"], "multi-turn rollout"),
    ("trl==1.16.0", [*TRL, "--use_vllm", "--vllm_device", "cuda:1"], "written for TRL 0.17 or before"),
    ("trl==0.14.0", TRL, "builds a reference model whatever beta is"),
]


def _said(notes: list[str], phrase: str) -> str:
    (note,) = [n for n in notes if phrase in n]
    return note


@pytest.mark.parametrize("framework, args, phrase", CASES)
def test_a_note_claims_no_pricing_where_memory_was_not_evaluated(framework, args, phrase):
    bare = rb.check(args, framework=framework, gpus=8)
    assert any(n.startswith("memory was not evaluated") for n in bare.notes), bare.notes
    note = _said(bare.notes, phrase)
    assert "would be priced" in note and "is priced" not in note and "are priced" not in note, note
    assert not [n for n in bare.notes if "priced" in n.replace("would be priced", "")], bare.notes


@pytest.mark.parametrize("framework, args, phrase", [c for c in CASES if not c[0].startswith("slime")])
def test_the_same_note_says_it_is_priced_where_memory_is_evaluated(framework, args, phrase):
    priced = rb.check(args, framework=framework, gpus=8, gpu="h100", model="qwen2.5-7b")
    assert priced.memory is not None
    note = _said(priced.notes, phrase)
    assert "is priced" in note or "are priced" in note, note
    assert "would be priced" not in note, note


def test_unsloths_changed_batch_note_claims_no_pricing_without_memory():
    """Unsloth's rewrite of per_device_train_batch_size is checked; without --gpu it is not priced."""
    config = "docs/examples/unsloth-qwen3-4b-grpo.yaml"
    bare = _said(rb.check(config, framework="unsloth").notes, "Unsloth changes per_device_train_batch_size")
    assert "would be priced" in bare, bare
    priced = _said(rb.check(config, framework="unsloth", gpu="t4", model="qwen3-4b").notes,
                   "Unsloth changes per_device_train_batch_size")
    assert "its memory is priced with it" in priced, priced

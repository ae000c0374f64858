"""The rules page of each framework, as written to docs/."""

from __future__ import annotations

from ..rules.describe import rules_markdown
from .base import Framework

INTROS = {
    "verl": (
        "Every batch-size and parallelism rule verl 0.9.1 enforces on the FSDP/FSDP2 path, in the order a "
        "run meets them: the driver's `validate_config` at launch, the GPU workers starting (model engines, "
        "then the rollout engine and its replicas), the first training step of the default v1 trainer "
        "(`trainer.use_v1=True`). Sizes: `train_batch_size` and `ppo_mini_batch_size` count "
        "prompts (global); `*_per_gpu` sizes and token budgets count samples per GPU. Rules marked (warning) "
        "are ours on purpose: verl does not check them. Memory rules (`verl.memory.*`) come from the cost "
        "model (docs/cost-model.md) when a GPU and model are given. A pasted config that selects the Megatron "
        "backend (`model_engine=megatron`, `actor_rollout_ref.actor.strategy=megatron` or "
        "`--config-name=ppo_megatron_trainer`) is checked against the Megatron rules instead of the FSDP-only "
        "ones: see docs/rules-verl-megatron.md. Sources are paths inside the verl 0.9.1 wheel."
    ),
    "verl-megatron": (
        "Every batch-size and parallelism rule verl 0.9.1 enforces on the Megatron backend "
        "(`model_engine=megatron`), in the order a run meets them: the driver's `validate_config` at launch, "
        "the GPU workers starting (megatron-core's process groups and `TransformerConfig`, the rollout engine), "
        "the first training step of the default v1 trainer. The rules without `megatron` in their id are the "
        "ones verl applies on both backends (docs/rules-verl.md), read here with Megatron's layout: dp = "
        "N/(TP*PP*CP), token budgets per GPU times CP. `ppo_micro_batch_size_per_gpu` counts samples per "
        "data-parallel rank. megatron-core's parallel state is process-global, so the critic (built first), "
        "reference and actor engines must use the same TP/PP/CP/EP/ETP/VPP. Head, layer and expert rules need "
        "`--model`. Dynamic context parallel and custom pipeline layouts (`pipeline_model_parallel_layout`) are "
        "not modelled. Sources are paths inside the verl 0.9.1 wheel and megatron-core 0.16.1. There is no "
        "Megatron memory model yet."
    ),
    "openrlhf": (
        "Every batch-size and parallelism rule OpenRLHF 0.11.2 (`python -m openrlhf.cli.train_ppo_ray`) "
        "enforces, in the order a run meets them: the asserts after argument parsing, `train()` building the "
        "placement groups, each model group's DeepSpeed init (DeepSpeed 0.19.6's batch assertion runs once per "
        "group: actor and critic unless dynamic batch is on, reference, reward model and EMA always when they "
        "run), the first rollout. Sizes: `rollout.batch_size` counts prompts; `train.batch_size` and the micro "
        "batch sizes count samples. Flags are the dotted 0.11.2 names; the pre-0.10.2 underscore names are "
        "accepted, mapped, and reported by a warning (0.11.2 rejects them). `runtime` rules are hangs, not "
        "errors. Rules marked (warning) are ours on purpose: OpenRLHF does not check them."
    ),
    "swift": (
        "Every batch-size and parallelism rule ms-swift 4.6.0 enforces on the HF/DeepSpeed GRPO path "
        "(`swift rlhf --rlhf_type grpo`; GSPO, DAPO, RLOO and REINFORCE++ run the same trainer), in the order a "
        "run meets them: argument parsing (`RLHFArguments.__post_init__` and the `GRPOConfig` it builds), then "
        "the trainer starting its vLLM engine and sequence-parallel mesh. Sizes count completions. The world "
        "size W is `NPROC_PER_NODE*NNODES` (paste the prefix, or give `--gpus`); the base batch of "
        "`generation_batch_size` is `per_device_train_batch_size*W`, without gradient accumulation (so a "
        "prompt's completions may span ranks). `generation_batch_size` and `steps_per_generation` may both be "
        "set when they agree. In server mode the `swift rollout` server runs on other GPUs: give its sizes as "
        "`--rollout.vllm_tensor_parallel_size` / `--rollout.vllm_data_parallel_size` and the job's GPUs as "
        "`--gpus` to check the budget. The docs' advice to make `steps_per_generation` a multiple of "
        "`gradient_accumulation_steps` (for mini-batch updates) is not enforced and not a rule. Sources are "
        "paths inside the ms-swift 4.6.0 wheel."
    ),
    "swift-megatron": (
        "Every batch-size and parallelism rule ms-swift 4.6.0 enforces on the Megatron GRPO path "
        "(`megatron rlhf --rlhf_type grpo`; GSPO is `--importance_sampling_level sequence`), in the order a run "
        "meets them: argument parsing (`_init_grpo`: unsupported options, `resolve_generation_batch_size`, "
        "`validate_batch_dp_alignment`; then megatron-core's `initialize_model_parallel` and the global-batch "
        "check), the model build (megatron-core `TransformerConfig`, given `--model`) and the trainer's vLLM "
        "engine, then asserts in the trainer that no argument check covers. `micro_batch_size` and "
        "`global_batch_size` count completions; dp = W // (TP*PP*CP), EP is not in it. The `runtime` rule "
        "`swift_megatron.runtime.generation_divisible_by_world` passes every argument check and then stops the "
        "first step (W=8, TP=2, micro 1, G=3, global 12 is such a case). The note in ms-swift's Megatron GRPO "
        "docs that `global_batch_size / num_generations / dp` must be a multiple of `micro_batch_size` is "
        "enforced by no code (the official `dense_colocate.sh` breaks it and runs), so it is not a rule. The Ray "
        "pipeline (`--use_ray`) is not modelled. Sources are paths inside the ms-swift 4.6.0 wheel, or inside "
        "megatron-core (>= 0.16, which ms-swift's megatron extra requires) where ms-swift delegates."
    ),
}


def rules_page(fw: Framework) -> str:
    # a framework that checks several backends documents one of them per page (``doc_ruleset``)
    ruleset = getattr(fw, "doc_ruleset", fw.ruleset)
    return rules_markdown(ruleset, f"{fw.name} {fw.version} rules", INTROS.get(fw.name, ""))

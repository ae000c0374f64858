"""The introduction of this framework's rules page (docs/rules-*.md, written by ``rlbatch rules``)."""

INTRO = (
    "Every batch-size and parallelism rule ms-swift 4.6.0 enforces on the HF/DeepSpeed GRPO path "
    "(`swift rlhf --rlhf_type grpo`; GSPO, DAPO, RLOO and REINFORCE++ run the same trainer), in the order a "
    "run meets them: argument parsing (`RLHFArguments.__post_init__` and the `GRPOConfig` it builds), then "
    "the trainer starting its vLLM engine and sequence-parallel mesh. Sizes count completions. The world "
    "size W is `NPROC_PER_NODE*NNODES` (paste the prefix, or give `--gpus`); the base batch of "
    "`generation_batch_size` is `per_device_train_batch_size*W`, without gradient accumulation (so a "
    "prompt's completions may span ranks). `generation_batch_size` and `steps_per_generation` may both be "
    "set when they agree. In server mode the `swift rollout` server runs on other GPUs: give its sizes as "
    "`--rollout.vllm_tensor_parallel_size` / `--rollout.vllm_data_parallel_size`, its vLLM memory share as "
    "`--rollout.vllm_gpu_memory_utilization` (default 0.9, as its own; the trainer's `vllm_gpu_memory_utilization` "
    "sizes a colocated engine only) and the job's GPUs as `--gpus` to check the budget. The docs' advice to make `steps_per_generation` a multiple of "
    "`gradient_accumulation_steps` (for mini-batch updates) is not enforced and not a rule. Sources are "
    "paths inside the ms-swift 4.6.0 wheel."
)


INTRO_MEGATRON = (
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
)


def versions_markdown() -> str:
    """docs/rules-swift.md's appendix: what each older release we follow does differently (versions.py)."""
    from ..docs import rule_changes_table
    from .versions import NEWEST, PACKS, SERIES, VERSIONS, changes

    # a pack no series maps to judges its own release only (3.4.0: the 3.4 series is 3.4.1's)
    judged = {v: sorted((s for s, p in SERIES.items() if p == v), key=lambda s: tuple(map(int, s.split("."))))
              or [v] for v in VERSIONS}
    lines = [f"## Other releases: what changes from {NEWEST}", "",
             f"`--framework swift=={VERSIONS[1]}` (or {', '.join(VERSIONS[2:])}; any release of a series below reads "
             "its pack's rules) checks with that release's rules. With no release named, `check`, `fix` and "
             "`explain` date the config by the flags only some releases have (`--num_infer_workers`, "
             "`--vllm_device`, `--mini_batch_size`, `--vllm_mode`, `--generation_batch_size`, "
             "`--num_generations_eval`, `--train_type`, `--tuner_type`, ...: `frameworks/swift/versions.py` "
             "KEY_RELEASES, read from each wheel's argument classes) and say which release judged it: the newest when "
             "it has them all, else the oldest release that has them all (docs/architecture.md). Only the HF/DeepSpeed "
             f"path (`swift rlhf`) has older packs; `swift-megatron` follows {NEWEST}. Sources are paths inside that "
             "release's wheel, or inside the TRL it installs where ms-swift hands the check to TRL.", "",
             "| pack | judges the series |", "|---|---|"]
    lines += [f"| {v} | {', '.join(judged[v])} |" for v in VERSIONS]
    lines.append("")
    for version in VERSIONS[1:]:
        pack, diff = PACKS[version], changes(version)
        lines += [f"### ms-swift {version}", "", f"What differs: {pack.summary}.", "",
                  *rule_changes_table(diff, NEWEST, "release"), ""]
    return "\n".join(lines)

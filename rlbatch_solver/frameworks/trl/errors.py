"""TRL's own error messages (1.16.0, and the wording of TRL before 1.0 that users still paste), mapped to our
rules. ``tests/test_explain.py`` checks that every rule id exists and that each pattern matches its example."""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..base import divisors
from ..error_text import ErrorPattern

n = r"\((?P<{}>\d+)\)".format
CONFIG = "trl/trainer/grpo_config.py:GRPOConfig.__post_init__"
TRAINER = "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__"


def _groups(x: dict[str, int]) -> str:
    total, g = x["gen"], x["g"]
    ok = [d for d in divisors(total) if d >= 2]
    return (f"{total} completions per rollout do not split into groups of {g}; num_generations that divide it: "
            f"{', '.join(map(str, ok[:8]))}{' ...' if len(ok) > 8 else ''}")


def _old_groups(x: dict[str, int]) -> str:
    total = x["w"] * x["b"]
    return _groups({"gen": total, "g": x["g"]}) + (" (TRL 0.15-0.16 checked the per-step global batch W x B; 0.17 "
                                                   "x gradient_accumulation_steps; 0.18 and later the generation "
                                                   "batch, x steps_per_generation)")


def _global(x: dict[str, int]) -> str:
    gen, gbs = x["gen"], x["gbs"]
    lo, hi = (gen // gbs) * gbs, -(-gen // gbs) * gbs
    return (f"generation_batch_size {gen} is not a whole number of global batches of {gbs} "
            f"(per_device_train_batch_size x num_processes): {lo or hi} or {hi} are")


def _tp(x: dict[str, int]) -> str:
    tp, world = x["tp"], x["world"]
    ok = [d for d in range(1, world + 1) if world % d == 0]
    return f"vllm_tensor_parallel_size {tp} does not divide the {world} processes; sizes that do: {', '.join(map(str, ok))}"


PATTERNS: list[ErrorPattern] = [
    # TRL 0.14.0 (grpo_trainer.py GRPOTrainer.__init__): vllm_device 'auto' is the GPU after the training ranks
    ErrorPattern("trl", r"requested device for vllm \(cuda:(?P<device>\d+)\) is not available",
                 ("trl.gpus.budget",), "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__ (TRL 0.14.0)",
                 "ValueError: The requested device for vllm (cuda:8) is not available. You are likely using vLLM "
                 "without restricting the number of GPUs for training. Set the `--num_processes` argument to a value "
                 "lower than the number of GPUs available on your machine—typically, reducing it by one is "
                 "sufficient. In your case: `--num_processes 7`.",
                 hint=lambda x: f"vLLM wants cuda:{x['device']}, the GPU after the {x['device']} training processes: "
                                "leave one GPU out of --num_processes", numbers=("device",), versions=("0.14.0",)),
    ErrorPattern("trl", rf"generation_batch_size {n('gen')} must be divisible by num_generations {n('g')}",
                 ("trl.config.gen_divisible_by_num_generations",), CONFIG,
                 "ValueError: generation_batch_size (96) must be divisible by num_generations (7).",
                 hint=_groups, numbers=("gen", "g")),
    ErrorPattern("trl", rf"global train batch size \((?P<w>\d+) x (?P<b>\d+)\) must be evenly divisible by the "
                        rf"number of generations per prompt {n('g')}",
                 ("trl.trainer.global_batch_divisible_by_num_generations",),
                 "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__ (TRL 0.15-0.16; open-r1 #249, trl #2858, #3061)",
                 "ValueError: The global train batch size (3 x 4) must be evenly divisible by the number of "
                 "generations per prompt (8). Given the current train batch size, the valid values for the number "
                 "of generations are: [2, 3, 4, 6, 12].", hint=_old_groups, numbers=("w", "b", "g"),
                 versions=("0.16.1", "0.15.2")),
    ErrorPattern("trl", rf"global eval batch size \((?P<w>\d+) x (?P<b>\d+)\) must be evenly divisible by the "
                        rf"number of generations per prompt {n('g')}",
                 ("trl.trainer.eval_batch_divisible_by_num_generations",),
                 "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__ (TRL 0.15-0.16, with an eval_strategy)",
                 "ValueError: The global eval batch size (4 x 8) must be evenly divisible by the number of "
                 "generations per prompt (6). Given the current eval batch size, the valid values for the number "
                 "of generations are: [2, 4, 8, 16, 32].",
                 hint=lambda x: f"num_processes x per_device_eval_batch_size = {x['w']} x {x['b']}: "
                                + _groups({"gen": x["w"] * x["b"], "g": x["g"]}).replace("per rollout", "per eval batch")
                                + " (or change per_device_eval_batch_size; only runs with an eval_strategy check it)",
                 numbers=("w", "b", "g"), versions=("0.16.1", "0.15.2")),
    ErrorPattern("trl", rf"effective eval batch size \((?P<w>\d+) x (?P<b>\d+)\) must be evenly divisible by the "
                        rf"number of generations per prompt {n('g')}",
                 ("trl.trainer.eval_batch_divisible_by_num_generations",),
                 "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__ (TRL 0.17)",
                 "ValueError: The effective eval batch size (3 x 2) must be evenly divisible by the number of "
                 "generations per prompt (4). Given the current effective eval batch size, the valid values for the "
                 "number of generations are: [2, 3, 6].",
                 hint=lambda x: f"num_processes x per_device_eval_batch_size = {x['w']} x {x['b']}: "
                                + _groups({"gen": x["w"] * x["b"], "g": x["g"]}),
                 numbers=("w", "b", "g"), versions=("0.17.0",)),
    ErrorPattern("trl", rf"effective train batch size \((?P<w>\d+) x (?P<b>\d+) x (?P<spg>\d+)\) must be evenly "
                        rf"divisible by the number of generations per prompt {n('g')}",
                 ("trl.config.gen_divisible_by_num_generations",),
                 "trl/trainer/grpo_config.py:GRPOConfig.__post_init__ (TRL 0.18-0.2x; 0.17's GRPOTrainer.__init__ "
                 "prints it with gradient_accumulation_steps in the third place: --framework trl==0.17.0)",
                 "ValueError: The effective train batch size (3 x 2 x 1) must be evenly divisible by the number of "
                 "generations per prompt (4). Given the current effective train batch size, the valid values for the "
                 "number of generations are: [2, 3, 6].",
                 hint=lambda x: f"num_processes x per_device_train_batch_size x steps_per_generation = {x['w']} x "
                                f"{x['b']} x {x['spg']}: " + _groups({"gen": x["w"] * x["b"] * x["spg"], "g": x["g"]}),
                 numbers=("w", "b", "spg", "g"), versions=("0.19.1", "0.18.2")),
    ErrorPattern("trl", rf"generation_batch_size {n('gen')} must be divisible by the global batch size {n('gbs')}",
                 ("trl.config.gen_divisible_by_global_batch",), CONFIG,
                 "ValueError: generation_batch_size (100) must be divisible by the global batch size (16).",
                 hint=_global, numbers=("gen", "gbs")),
    ErrorPattern("trl", r"'generation_batch_size' and 'steps_per_generation' can not be both configured",
                 ("trl.config.gen_and_spg_exclusive",), CONFIG,
                 "ValueError: 'generation_batch_size' and 'steps_per_generation' can not be both configured at the "
                 "same time",
                 hint=lambda x: ("TRL takes --generation_batch_size or --steps_per_generation, never both (even "
                                 "when they agree); remove one of them.")),
    # grpo_config.py GRPOConfig.__post_init__ prints per_device_eval_batch_size first, then num_processes
    ErrorPattern("trl", rf"global eval batch size (?:\((?P<b>\d+) \* (?P<w>\d+)\) )?.{{0,40}}must be divisible by the "
                        rf"number of generations used for evaluation(?: {n('g')})?",
                 ("trl.config.eval_batch_divisible_by_num_generations_eval",), CONFIG,
                 "ValueError: The global eval batch size (4 * 3) must be divisible by the number of generations "
                 "used for evaluation (8).",
                 hint=lambda x: f"per_device_eval_batch_size x num_processes = {x['b']} x {x['w']}: "
                                + _groups({"gen": x["w"] * x["b"], "g": x["g"]}).replace(
                                    "per rollout", "per eval batch").replace("num_generations that", "values that")
                                + " (num_generations_eval, else num_generations; or change per_device_eval_batch_size)",
                 numbers=("b", "w", "g")),
    ErrorPattern("trl", r"GRPO requires at least 2 generations per prompt", ("trl.config.num_generations_at_least_two",),
                 CONFIG, "ValueError: GRPO requires at least 2 generations per prompt to calculate the advantages. "
                 "You provided 1, which is less than the minimum required.",
                 hint=lambda x: ("GRPO computes advantages by comparing answers to one prompt; set "
                                 "--num_generations to 2 or more.")),
    ErrorPattern("trl", r"auto_find_batch_size is not supported by GRPO", ("trl.config.auto_find_batch_size_unsupported",),
                 CONFIG, "ValueError: auto_find_batch_size is not supported by GRPO, because the generation batch must "
                 "contain full prompt groups of num_generations completions, and reducing the batch size on "
                 "out-of-memory breaks this invariant.",
                 hint=lambda x: ("GRPO cannot halve the batch on out-of-memory (it would break the "
                                 "num_generations groups); remove --auto_find_batch_size and lower "
                                 "--per_device_train_batch_size yourself.")),
    ErrorPattern("trl", rf"tensor_parallel_size {n('tp')} must divide world size {n('world')} evenly",
                 ("trl.vllm.colocate_tp_divides_world",), "trl/generation/vllm_generation.py:VLLMGeneration._init_vllm",
                 "ValueError: tensor_parallel_size (3) must divide world size (8) evenly.", hint=_tp,
                 numbers=("tp", "world")),
    ErrorPattern("trl", r"sync_ref_model=True` while `beta=0\.0", ("trl.trainer.sync_ref_model_needs_beta",),
                 "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__",
                 "ValueError: You passed `sync_ref_model=True` while `beta=0.0`, which means the reference model is "
                 "not used during training.",
                 hint=lambda x: ("--sync_ref_model true with --beta 0.0: no reference model runs, so there is "
                                 "nothing to sync; set --beta above 0, or drop --sync_ref_model.")),
    ErrorPattern("trl", r"sync_ref_model=True` while using a PEFT model", ("trl.trainer.sync_ref_model_not_with_peft",),
                 "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__",
                 "NotImplementedError: You passed `sync_ref_model=True` while using a PEFT model, which is currently "
                 "not supported.",
                 hint=lambda x: ("with a PEFT (LoRA) model the reference is the policy with its adapter off, so "
                                 "nothing can be synced; drop --sync_ref_model.")),
] + [
    # what GRPOConfig.__post_init__ / GRPOTrainer.__init__ refuse beside the Liger flag (versions.LIGER_REFUSES: the
    # spans; versions: the packs whose releases print it)
    ErrorPattern("trl", pattern, (rule,), source, example, hint=lambda x, fix=fix: fix, versions=releases)
    for pattern, rule, source, example, fix, releases in (
        (r"Liger loss is not supported with a PEFT model", "trl.liger.no_peft", TRAINER,
         "TypeError: Liger loss is not supported with a PEFT model.",
         "TRL 0.17's Liger loss runs on full weights only: drop --use_peft or --use_liger_loss (0.18 takes both).",
         ("0.17.0",)),
        (r"not supported with `use_liger_loss`\. Liger loss only supports `bnpo`", "trl.liger.bnpo_loss_only", TRAINER,
         "ValueError: The provided loss type (`grpo`) is not supported with `use_liger_loss`. Liger loss only "
         "supports `bnpo` for now.",
         "TRL 0.17's Liger loss is bnpo only: set --loss_type bnpo (its default) or drop --use_liger_loss.",
         ("0.17.0",)),
        (r"Liger (?:loss|kernel) does not support two-sided GRPO loss", "trl.liger.no_two_sided", CONFIG,
         "ValueError: Liger loss does not support two-sided GRPO loss yet.",
         "--delta (two-sided clipping) beside the Liger flag: drop --delta or the flag (TRL 1.4 takes both).",
         ("0.29.1", "0.19.1", "0.18.2")),
        (r"Liger Kernels don't currently support masking token positions based on entropy",
         "trl.liger.no_entropy_mask", TRAINER,
         "NotImplementedError: Liger Kernels don't currently support masking token positions based on entropy.",
         "Liger's loss computes no entropy: set --top_entropy_quantile 1.0 or drop the Liger flag.", ("0.29.1",)),
        (r"Liger Kernels currently only support token-level importance sampling", "trl.liger.token_level_only",
         TRAINER, "NotImplementedError: Liger Kernels currently only support token-level importance sampling. Please "
         "set`importance_sampling_level` to 'token'.",
         "set --importance_sampling_level token, or drop the Liger flag (TRL 1.0 takes sequence too).", ("0.29.1",)),
        (r"Liger kernel does not support off-policy sequence masking", "trl.liger.no_off_policy_mask", TRAINER,
         "ValueError: Liger kernel does not support off-policy sequence masking yet.",
         "drop --off_policy_mask_threshold or --use_liger_kernel.", ("0.29.1",)),
        (r"fused_linear_cross_entropy\W+True\W+is not supported", "trl.liger.no_fused_linear_cross_entropy", TRAINER,
         "ValueError: `liger_kernel_config={\"fused_linear_cross_entropy\": True}` is not supported: it replaces the "
         "model's forward, which this trainer patches with a fused LM head.",
         "GRPOTrainer applies Liger's layer kernels only (its own fused lm head computes the log-probs): drop "
         "fused_linear_cross_entropy from --liger_kernel_config.", ()),
    )
]


# ----------------------------------------------------------------------------- out of memory (frameworks/oom_text.py)
# TRL's GRPOTrainer (trl/trainer/grpo_trainer.py): the loss, its backward and the optimizer step, the log-prob passes
# (the reference's call names ref_model / ref_per_token_logps), generation (_generate_and_score_completions,
# vllm_generation.py, unwrap_model_for_generation). transformers' Trainer.training_step is the outer frame of
# generation too (it prepares the inputs), so it names no phase.
OOM_FRAMES = (
    (r"ref_per_token_logps\s*=|self\.ref_model", Phase.REF),
    (r"compute_loss|_compute_loss|\.backward\(|optimizer\.step|torch/optim/|_multi_tensor_adam", Phase.ACTOR_UPDATE),
    (r"_get_per_token_logps|old_per_token_logps", Phase.OLD_LOG_PROB),
    (r"_generate_and_score_completions|_generate_single_turn|_generate\b|vllm_generation|"
     r"unwrap_model_for_generation|\.generate\(", Phase.ROLLOUT),
)
OOM_ADVICE = {
    Phase.ROLLOUT: (
        "--vllm_gpu_memory_utilization lower (colocate: the trainer's states come on top; TRL's default is 0.3)",
        "--vllm_enable_sleep_mode true: the engine sleeps (level 2) while the trainer trains",
        "--vllm_mode server on GPUs of its own (trl vllm-serve), or --vllm_tensor_parallel_size higher",
        "without vLLM: --per_device_train_batch_size lower (transformers' generate holds the whole local batch's KV)"),
    "engine_start": (
        "--vllm_max_model_length lower: one sequence of it must fit the KV cache",
        "--vllm_gpu_memory_utilization higher (TRL's default is 0.3), where the trainer's states leave room",
        "--vllm_tensor_parallel_size higher"),
    Phase.OLD_LOG_PROB: (
        "--per_device_train_batch_size lower",
        "--padding_free true"),
    Phase.REF: (
        "--beta 0.0 (TRL 1.x's default): no reference model",
        "--use_peft true: the reference is the model with its adapter off"),
    Phase.ACTOR_UPDATE: (
        "--per_device_train_batch_size lower (keep the batch with --gradient_accumulation_steps)",
        "--gradient_checkpointing true",
        "--dtype bfloat16: TRL loads the model in fp32 unless told (16 B per parameter under plain DDP)",
        "accelerate --config_file zero3.yaml (or fsdp2): states sharded over the GPUs",
        "--use_peft true: adapter states only"),
    Phase.HOST: (
        "a DeepSpeed config with offload_optimizer / offload_param to cpu keeps the states in host RAM: drop it "
        "where they fit the GPU",
        "fewer processes per node, or nodes with more RAM (--host-mem to check a node)"),
}

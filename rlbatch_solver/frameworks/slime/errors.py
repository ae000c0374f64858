"""slime 0.3.1's own error messages (and Megatron-LM's and SGLang's as slime runs them), mapped to our rules
(``explain``), and its out-of-memory phases.

``tests/test_explain.py`` checks that every rule id exists and that each pattern matches its example.
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern, _near, some_divisors
from .rules import ARGS, ENGINES, MG_ARGS, MG_CALC, MG_PS, MG_WRAP, PLACEMENT, SCHEDULE, SGL_ARGS


PATTERNS: list[ErrorPattern] = [
    ErrorPattern("slime", r"max_tokens_per_gpu must be set when use_dynamic_batch_size is set",
                 ("slime.args.dynamic_batch_needs_max_tokens",), ARGS,
                 "AssertionError: max_tokens_per_gpu must be set when use_dynamic_batch_size is set",
                 hint=lambda x: ("--use-dynamic-batch-size packs micro batches by tokens and needs a budget: add "
                                 "--max-tokens-per-gpu (tokens per GPU in one micro batch), or drop "
                                 "--use-dynamic-batch-size.")),
    ErrorPattern("slime", r"--balance-by-flops requires --use-dynamic-batch-size",
                 ("slime.args.balance_by_flops_needs_dynamic_batch",), ARGS,
                 "AssertionError: --balance-by-flops requires --use-dynamic-batch-size",
                 hint=lambda x: ("--balance-by-flops only works with --use-dynamic-batch-size; add it (with "
                                 "--max-tokens-per-gpu), or drop --balance-by-flops.")),
    ErrorPattern("slime", r"Only one of kl_coef and kl_loss_coef can be set",
                 ("slime.args.kl_coef_or_kl_loss_coef",), ARGS,
                 "AssertionError: Only one of kl_coef and kl_loss_coef can be set",
                 hint=lambda x: ("--kl-coef (KL in the reward) and --kl-loss-coef (KL in the loss) are both "
                                 "non-zero; keep one and set the other to 0.")),
    ErrorPattern("slime", r"advantage estimators require advantage normalization",
                 ("slime.args.reinforce_needs_normalized_advantages",), ARGS,
                 "AssertionError: The 'reinforce_plus_plus' and 'reinforce_plus_plus_baseline' advantage estimators "
                 "require advantage normalization. Please add `--normalize-advantages` to your command.",
                 hint=lambda x: ("--advantage-estimator reinforce_plus_plus(_baseline) needs normalized "
                                 "advantages: add --normalize-advantages.")),
    ErrorPattern("slime", r"global_batch_size (?P<gbs>\d+) is not equal to rollout_batch_size (?P<rb>\d+) \* "
                 r"n_samples_per_prompt (?P<n>\d+) // num_steps_per_rollout (?P<steps>\d+)",
                 ("slime.args.global_batch_matches_steps_per_rollout",), ARGS,
                 "AssertionError: global_batch_size 128 is not equal to rollout_batch_size 32 * n_samples_per_prompt 8 "
                 "// num_steps_per_rollout 4",
                 hint=lambda x: (f"--num-steps-per-rollout {x['steps']} already makes the global batch {x['rb']} x "
                                 f"{x['n']} // {x['steps']} = {x['rb'] * x['n'] // x['steps']}, not {x['gbs']}: drop "
                                 "--global-batch-size or make it that"),
                 numbers=("gbs", "rb", "n", "steps")),
    ErrorPattern("slime", r"over_sampling_batch_size (?P<osb>\d+) should be greater than or equal to rollout_batch_size "
                 r"(?P<rb>\d+)", ("slime.args.over_sampling_covers_rollout_batch",), ARGS,
                 "AssertionError: over_sampling_batch_size 16 should be greater than or equal to rollout_batch_size 32",
                 hint=lambda x: (f"--over-sampling-batch-size {x['osb']} samples fewer prompts than a rollout takes "
                                 f"({x['rb']}): raise it to at least {x['rb']}"), numbers=("osb", "rb")),
    ErrorPattern("slime", r"rollout_max_prompt_len \((?P<prompt>\d+)\) must be smaller than "
                 r"args\.rollout_max_context_len \((?P<context>\d+)\)",
                 ("slime.args.prompt_shorter_than_context",), ARGS,
                 "AssertionError: args.rollout_max_prompt_len (4096) must be smaller than args.rollout_max_context_len "
                 "(4096) so that there is at least one generated token to compute loss.",
                 hint=lambda x: (f"a prompt of {x['prompt']} tokens leaves no room to generate in a context of "
                                 f"{x['context']}: --rollout-max-prompt-len at most {x['context'] - 1}"),
                 numbers=("prompt", "context")),
    ErrorPattern("slime", r"world size \((?P<world>\d+)\) is not divisible by total_model_size",
                 ("slime.megatron.world_divisible_by_model_parallel",), MG_ARGS,
                 "AssertionError: world size (6) is not divisible by total_model_size (total_model_size=4)",
                 hint=lambda x: (f"--tensor-model-parallel-size x --pipeline-model-parallel-size x "
                                 f"--context-parallel-size must divide the actor's {x['world']} GPUs: products that do: "
                                 f"{some_divisors(x['world'])}"), numbers=("world",)),
    ErrorPattern("slime", r"Number of layers should be divisible by the pipeline-model-parallel size",
                 ("slime.megatron.layers_divisible_by_pp",), MG_ARGS,
                 "AssertionError: Number of layers should be divisible by the pipeline-model-parallel size",
                 hint=lambda x: ("the model's layers do not split over --pipeline-model-parallel-size; use a size "
                                 "that divides its num_layers, or set --decoder-first-pipeline-num-layers / "
                                 "--decoder-last-pipeline-num-layers for an uneven split.")),
    ErrorPattern("slime", r"decoder_first_pipeline_num_layers and decoder_last_pipeline_num_layers should be None",
                 ("slime.megatron.uneven_pipeline_needs_pp",), MG_WRAP,
                 "AssertionError: decoder_first_pipeline_num_layers and decoder_last_pipeline_num_layers should be None "
                 "when pipeline_model_parallel_size is 1.",
                 hint=lambda x: ("--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers only "
                                 "apply with pipeline parallel; remove them, or set "
                                 "--pipeline-model-parallel-size above 1.")),
    ErrorPattern("slime", r"rollout_num_gpus_per_engine \((?P<engine>\d+)\) must be divisible by "
                 r"sglang_pipeline_parallel_size \((?P<pp>\d+)\)",
                 ("slime.sglang.engine_gpus_divisible_by_pp",), SGL_ARGS,
                 "AssertionError: rollout_num_gpus_per_engine (2) must be divisible by sglang_pipeline_parallel_size (4)",
                 hint=lambda x: (f"an engine's {x['engine']} GPUs do not split into {x['pp']} pipeline stages: "
                                 f"--sglang-pp-size one of {some_divisors(x['engine'])}"), numbers=("engine", "pp")),
    ErrorPattern("slime", r"unsupported operand type\(s\) for \+: 'int' and 'NoneType'",
                 ("slime.placement.separate_needs_rollout_gpus",), PLACEMENT,
                 "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'",
                 hint=lambda x: ("without --colocate the SGLang engines need GPUs of their own but "
                                 "--rollout-num-gpus is unset; add --rollout-num-gpus (besides --actor-num-nodes "
                                 "x --actor-num-gpus-per-node), or add --colocate.")),
    ErrorPattern("slime", r"Waiting for placement group of (?P<need>\d+) GPUs .*?(?P<have>\d+) GPUs registered with Ray",
                 ("slime.placement.gpu_budget",), PLACEMENT,
                 "Waiting for placement group of 16 GPUs (elapsed 30s): 8 GPUs registered with Ray, 8 available.",
                 hint=lambda x: (f"the placement group asks for {x['need']} GPUs and the cluster has {x['have']}: "
                                 "use --colocate, fewer --rollout-num-gpus, or a smaller actor"),
                 numbers=("need", "have")),
    ErrorPattern("slime", r"world_size \((?P<world>\d+)\) is not divisible by expert_tensor_model_pipeline_parallel "
                 r"size \((?P<size>\d+)\)", ("slime.megatron.world_divisible_by_expert_parallel",), MG_PS,
                 "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)",
                 hint=lambda x: (f"--expert-tensor-parallel-size x --expert-model-parallel-size x "
                                 f"--pipeline-model-parallel-size = {x['size']} must divide the actor's {x['world']} "
                                 f"GPUs: products that do: {some_divisors(x['world'])}"), numbers=("world", "size")),
    ErrorPattern("slime", r"global batch size \((?P<gbs>\d+)\) is not divisible by micro batch size \((?P<micro>\d+)\) "
                 r"times data parallel size \((?P<dp>\d+)\)",
                 ("slime.megatron.global_batch_divisible_by_micro_dp",), MG_CALC,
                 "AssertionError: global batch size (100) is not divisible by micro batch size (1) times data parallel "
                 "size (8)",
                 hint=lambda x: (f"--global-batch-size {x['gbs']} must be a multiple of --micro-batch-size "
                                 f"{x['micro']} x dp {x['dp']} = {x['micro'] * x['dp']}: "
                                 f"{_near(x['gbs'], x['micro'] * x['dp'])}"), numbers=("gbs", "micro", "dp")),
    ErrorPattern("slime", r"num_rollouts \((?P<samples>\d+)\) < global_batch_size \((?P<gbs>\d+)\)",
                 ("slime.schedule.rollout_covers_global_batch",), SCHEDULE,
                 "AssertionError: num_rollouts (64) < global_batch_size (256); need at least one rollout per step.",
                 hint=lambda x: (f"a rollout makes {x['samples']} samples, fewer than one global batch of {x['gbs']}: "
                                 "raise --rollout-batch-size or --n-samples-per-prompt, or lower --global-batch-size"),
                 numbers=("samples", "gbs")),
    ErrorPattern("slime", r"Invalid rollout server group GPU placement"
                 r"(?:[^\n]*?rollout_num_gpus=(?P<rollout_gpus>\d+), rollout_num_gpus_per_engine=(?P<per_engine>\d+))?",
                 ("slime.rollout.engine_fits_rollout_gpus",), ENGINES,
                 "ValueError: Invalid rollout server group GPU placement: worker_type=regular, gpu_offset=0, "
                 "num_gpus_per_engine=8, num_gpus_per_engine_on_node=8, num_engines=1, required_gpu_slots=8, "
                 "len(reordered_gpu_ids)=4, rollout_num_gpus=4, rollout_num_gpus_per_engine=8.",
                 hint=lambda x: ("the " + (f"{x['rollout_gpus']} " if "rollout_gpus" in x else "")
                                 + "rollout GPUs (--rollout-num-gpus) hold no SGLang engine of "
                                 + (f"{x['per_engine']} GPUs " if "per_engine" in x else "")
                                 + "(--rollout-num-gpus-per-engine, capped at --num-gpus-per-node); lower "
                                 "--rollout-num-gpus-per-engine to at most --rollout-num-gpus, or give more rollout "
                                 "GPUs."),
                 numbers=("rollout_gpus", "per_engine")),
]

# slime's functions per phase: MegatronTrainRayActor (slime/backends/megatron_utils/actor.py) computes the reference's
# log-probs after _switch_model("ref"), the old log-probs with compute_log_prob, then train_actor / train_critic;
# SGLang generates (slime/rollout/sglang_rollout.py, sglang's scheduler), woken with wake_up / update_weights
OOM_FRAMES = (
    (r"_switch_model\(.ref|store_prefix=.ref_", Phase.REF),
    (r"\btrain_critic\b", Phase.CRITIC_UPDATE),
    (r"\btrain_one_step\b|\btrain_actor\b|optimizer\.step|_multi_tensor_adam", Phase.ACTOR_UPDATE),
    (r"\bcompute_log_prob\b|\bforward_only\b", Phase.OLD_LOG_PROB),
    (r"sglang|generate_rollout|wake_up|update_weights|resume_memory_occupation", Phase.ROLLOUT),
)
OOM_ADVICE = {
    Phase.ROLLOUT: (
        "--sglang-mem-fraction-static lower: SGLang's weights and KV pool take that share of what the trainer leaves",
        "--rollout-num-gpus-per-engine higher: the engine's weights and KV cache split over more GPUs",
        "--colocate (or --offload-train): Megatron's states leave the GPU while SGLang generates",
        "--rollout-max-context-len lower: one sequence of it must fit the KV pool"),
    Phase.OLD_LOG_PROB: (
        "--log-probs-max-tokens-per-gpu (or --max-tokens-per-gpu) lower with --use-dynamic-batch-size",
        "--micro-batch-size lower", "--context-parallel-size or --tensor-model-parallel-size higher"),
    Phase.REF: (
        "--log-probs-max-tokens-per-gpu lower (the reference's forward uses it too)", "--micro-batch-size lower"),
    Phase.ACTOR_UPDATE: (
        "--max-tokens-per-gpu lower (with --use-dynamic-batch-size) or --micro-batch-size lower",
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
        "--tensor-model-parallel-size / --pipeline-model-parallel-size / --context-parallel-size higher",
        "--optimizer-cpu-offload --overlap-cpu-optimizer-d2h-h2d --use-precision-aware-optimizer"),
    Phase.CRITIC_UPDATE: (
        "--max-tokens-per-gpu lower", "--recompute-granularity full"),
    Phase.HOST: (
        "a node with more RAM: slime keeps the reference's weights in host memory (its weights backuper) and, with "
        "--colocate, Megatron's released states",
        "without --colocate, --no-offload-train keeps Megatron's states on the GPU"),
}

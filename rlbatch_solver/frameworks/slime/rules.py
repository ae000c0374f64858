"""Every batch-size and parallelism rule slime 0.3.1 enforces (github.com/THUDM/slime, tag v0.3.1, a6272da).

slime trains with Megatron-LM and generates with SGLang. Its command line is Megatron's argument parser plus
slime's own arguments plus SGLang's ``ServerArgs`` under a ``--sglang-`` prefix (``slime/utils/arguments.py:
parse_args``): ``slime_validate_args``, then Megatron's ``validate_args`` (slime's wrapper in
``slime/backends/megatron_utils/arguments.py``, which calls Megatron-LM's), then SGLang's (``slime/backends/
sglang_utils/arguments.py:validate_args``). The Megatron-LM slime 0.3.1 builds on is the commit its Dockerfile
pins (``MEGATRON_COMMIT=1dcf0dafa884ad52ffb243625717a3471643e087``); its sources are cited as ``megatron/...``.

Each rule cites the file and function and the stage at which a run dies:

* ``driver``: argument parsing (the three validators above);
* ``trainer_init``: Ray placement groups and the SGLang engines (``slime/ray/placement_group.py``,
  ``slime/ray/rollout.py``);
* ``worker_init``: Megatron's process groups and micro-batch calculator (``slime/backends/megatron_utils/
  initialize.py:init``);
* ``first_step``: the per-rollout data-parallel schedule (``slime/utils/dp_schedule.py:build_dp_schedule``);
* ``advice``: ours on purpose.

Sizes: ``--rollout-batch-size`` counts prompts; ``--global-batch-size`` and ``--micro-batch-size`` count samples
(responses). ``dp = W // (TP*PP*CP)`` with ``W = actor_num_nodes * actor_num_gpus_per_node`` (EP is not in it).
An unset global batch is ``rollout_batch_size * n_samples_per_prompt // num_steps_per_rollout`` when
``--num-steps-per-rollout`` is given (``slime_validate_args``), else Megatron's ``micro_batch_size * dp``
(``validate_args``). With ``--use-dynamic-batch-size`` micro batches are packed by ``--max-tokens-per-gpu`` tokens,
but Megatron's calculator still divides the global batch by ``--micro-batch-size`` (default 1) times dp.
"""

from __future__ import annotations

from ...rules.base import Derived, Rule, RuleSet, Severity, Stage, VarSpec, is_set
from ...rules.expr import divides, if_then_else, maximum, minimum
from ..verl.rules import rule_vars

VERSION = "0.3.1"

ARGS = "slime/utils/arguments.py:slime_validate_args"
MG_WRAP = "slime/backends/megatron_utils/arguments.py:validate_args"
MG_ARGS = "megatron/training/arguments.py:validate_args (Megatron-LM 1dcf0da, called by " + MG_WRAP + ")"
MG_CALC = ("megatron/core/num_microbatches_calculator.py:ConstantNumMicroBatchesCalculator.__init__ (Megatron-LM "
           "1dcf0da, from slime/backends/megatron_utils/initialize.py:init -> init_num_microbatches_calculator)")
MG_PS = ("megatron/core/parallel_state.py:initialize_model_parallel (Megatron-LM 1dcf0da, from "
         "slime/backends/megatron_utils/initialize.py:init)")
SGL_ARGS = "slime/backends/sglang_utils/arguments.py:validate_args"
PLACEMENT = "slime/ray/placement_group.py:_get_placement_group_layout"
SCHEDULE = ("slime/utils/dp_schedule.py:build_dp_schedule (from slime/ray/rollout.py:"
            "RolloutManager._split_train_data_by_dp)")
ENGINES = "slime/ray/rollout.py:start_rollout_servers._make_group"

# name in rules -> (slime flag without its dashes, kind, default, optional, description); defaults are slime 0.3.1's
# argparse defaults (slime/utils/arguments.py, its reset_arg of Megatron's) and Megatron-LM's
ROWS = [
    # cluster (add_cluster_arguments)
    ("actor_nodes", "actor-num-nodes", "int", 1, False, "nodes of the training actor"),
    ("actor_gpus_per_node", "actor-num-gpus-per-node", "int", 8, False, "GPUs per node of the training actor"),
    ("rollout_gpus", "rollout-num-gpus", "int", None, True,
     "GPUs of the SGLang engines (unset: the actor's GPUs under --colocate)"),
    ("gpus_per_engine", "rollout-num-gpus-per-engine", "int", 1, False, "GPUs per SGLang engine (its TP x PP)"),
    ("num_gpus_per_node", "num-gpus-per-node", "int", 8, False, "GPUs per node for rollout"),
    ("colocate", "colocate", "bool", False, False, "engines on the actor's GPUs (offloads between phases)"),
    ("offload_train", "offload-train", "bool", False, False,
     "Megatron's states leave the GPU between phases (on with --colocate, --offload or a critic)"),
    ("offload_rollout", "offload-rollout", "bool", False, False,
     "SGLang releases its memory between rollouts (on with --colocate or --offload)"),
    # batch sizes (add_data_arguments)
    ("train_batch_size", "rollout-batch-size", "int", None, False, "prompts per rollout (required)"),
    ("n", "n-samples-per-prompt", "int", 1, False, "responses per prompt"),
    ("global_batch_size", "global-batch-size", "int", None, True, "samples per optimizer step"),
    ("steps_per_rollout", "num-steps-per-rollout", "int", None, True, "optimizer steps per rollout"),
    ("micro_batch_size", "micro-batch-size", "int", 1, False, "samples per forward/backward (static batching)"),
    ("dynamic_batch", "use-dynamic-batch-size", "bool", False, False, "micro batches packed by tokens"),
    ("max_tokens_per_gpu", "max-tokens-per-gpu", "int", None, True, "token budget of a micro batch per GPU"),
    ("logprob_max_tokens", "log-probs-max-tokens-per-gpu", "int", None, True,
     "token budget of a log-prob micro batch (unset: --max-tokens-per-gpu)"),
    ("balance_by_flops", "balance-by-flops", "bool", False, False, "micro batches by estimated FLOPs"),
    ("over_sampling", "over-sampling-batch-size", "int", None, True, "prompts sampled per rollout (dynamic sampling)"),
    # lengths (add_rollout_arguments)
    ("max_prompt_length", "rollout-max-prompt-len", "int", None, True, "longest prompt, tokens"),
    ("max_response_length", "rollout-max-response-len", "int", None, True, "longest response, tokens"),
    ("max_context_length", "rollout-max-context-len", "int", None, True, "SGLang context length"),
    # Megatron's parallel layout and memory switches
    ("tp", "tensor-model-parallel-size", "int", 1, False, "tensor parallel size"),
    ("pp", "pipeline-model-parallel-size", "int", 1, False, "pipeline parallel size"),
    ("cp", "context-parallel-size", "int", 1, False, "context parallel size"),
    ("ep", "expert-model-parallel-size", "int", 1, False, "expert parallel size"),
    ("etp", "expert-tensor-parallel-size", "int", None, True, "expert tensor parallel size (unset: TP)"),
    ("first_pp_layers", "decoder-first-pipeline-num-layers", "int", None, True, "layers of the first PP stage"),
    ("last_pp_layers", "decoder-last-pipeline-num-layers", "int", None, True, "layers of the last PP stage"),
    ("num_layers", "num-layers", "int", None, True, "decoder layers (the model's when not given)"),
    ("megatron_recompute", "recompute-granularity", "int", 0, False, "activation recompute: 0 none, 1 selective, 2 full"),
    ("megatron_recompute_modules", "recompute-modules", "int", 1, False,
     "modules selective recompute reruns: a bit per megatron-core name (1 = core_attn, the default)"),
    ("megatron_cpu_optimizer_permille", "optimizer-offload-fraction", "int", 0, False,
     "share x1000 of the optimizer on the CPU (--optimizer-cpu-offload)"),
    # SGLang (--sglang-* ServerArgs)
    ("sglang_pp", "sglang-pp-size", "int", 1, False, "SGLang pipeline parallel size"),
    ("sglang_dp", "sglang-dp-size", "int", 1, False, "SGLang data parallel size"),
    ("dp_attention", "sglang-enable-dp-attention", "bool", False, False, "SGLang DP attention"),
    ("gmu_permille", "sglang-mem-fraction-static", "int", None, True,
     "SGLang mem_fraction_static x1000 (unset: SGLang's own from the GPU's memory)"),
    # algorithm (add_algo_arguments)
    ("use_kl_loss", "use-kl-loss", "bool", False, False, "KL loss against the reference model"),
    ("kl_coef_on", "kl-coef", "bool", False, False, "--kl-coef is not 0 (KL in the reward)"),
    ("kl_loss_coef_on", "kl-loss-coef", "bool", False, False, "--kl-loss-coef is not 0"),
    ("reinforce_pp", "advantage-estimator", "bool", False, False,
     "advantage estimator reinforce_plus_plus or reinforce_plus_plus_baseline"),
    ("normalize_advantages", "normalize-advantages", "bool", False, False, "advantage normalization"),
    ("need_critic", "advantage-estimator==ppo", "bool", False, False, "a critic is trained (PPO)"),
    ("need_ref", "use-kl-loss or kl-coef != 0", "bool", False, False, "a reference model runs"),
    ("cluster_num_gpus", "--gpus", "int", None, True, "GPUs in the Ray cluster (unknown: the budget is not checked)"),
    ("custom_generate", "custom-generate-function-path or rollout-function-path", "bool", False, False,
     "a function of the user's generates the samples (not sglang_rollout.generate)"),
    ("response_len_given", "rollout-max-response-len given", "bool", True, False,
     "the config sets --rollout-max-response-len (the model's context fills an unset one for the cost model only)"),
]
VARIABLES = {name: VarSpec(name, key, kind, default, optional, desc) for name, key, kind, default, optional, desc in ROWS}
# variables a config does not set by its own key: decided from other keys (or --gpus)
DECIDED = frozenset({"need_critic", "need_ref", "reinforce_pp", "kl_coef_on", "kl_loss_coef_on", "cluster_num_gpus",
                     "offload_train", "offload_rollout", "custom_generate", "response_len_given"})
V = rule_vars(VARIABLES)

W = maximum(1, V["actor_nodes"] * V["actor_gpus_per_node"])
MP = V["tp"] * V["pp"] * V["cp"]
DP = maximum(1, W // maximum(1, MP))
SAMPLES = V["train_batch_size"] * V["n"]
GBS = if_then_else(is_set("global_batch_size"), V["global_batch_size"],
                   if_then_else(is_set("steps_per_rollout"), SAMPLES // maximum(1, V["steps_per_rollout"]),
                                V["micro_batch_size"] * DP))
ROLLOUT_GPUS = if_then_else(is_set("rollout_gpus"), V["rollout_gpus"], if_then_else(V["colocate"], W, 0))
ENGINE_ON_NODE = minimum(V["gpus_per_engine"], V["num_gpus_per_node"])
DERIVED = [
    Derived("W", V["actor_nodes"] * V["actor_gpus_per_node"], "GPUs of the training actor"),
    Derived("mp", MP, "model-parallel ranks of one data-parallel replica: TP*PP*CP"),
    Derived("dp", DP, "data-parallel size: W // (TP*PP*CP)"),
    Derived("samples", SAMPLES, "samples per rollout: rollout_batch_size * n_samples_per_prompt"),
    Derived("gbs", GBS, "samples per optimizer step (--global-batch-size, or as slime and Megatron set it)"),
    Derived("steps", SAMPLES // maximum(1, GBS), "optimizer steps per rollout"),
    Derived("dropped", SAMPLES - SAMPLES // maximum(1, GBS) * GBS, "samples of a rollout no step takes"),
    Derived("micro_dp", V["micro_batch_size"] * DP, "micro_batch_size * dp"),
    Derived("expert_mp", if_then_else(is_set("etp"), V["etp"], V["tp"]) * V["ep"] * V["pp"],
            "expert model-parallel ranks: ETP*EP*PP"),
    Derived("rollout_world", ROLLOUT_GPUS, "GPUs of the SGLang engines"),
    Derived("engine_gpus_on_node", ENGINE_ON_NODE, "an engine's GPUs on one node: min(per engine, per node)"),
    Derived("engines", ROLLOUT_GPUS // maximum(1, ENGINE_ON_NODE), "SGLang engines (their first nodes)"),
    Derived("gpus_needed", if_then_else(V["colocate"], maximum(W, ROLLOUT_GPUS), W + ROLLOUT_GPUS),
            "GPUs the placement group asks Ray for"),
]
D = rule_vars({d.name: VarSpec(d.name, d.name) for d in DERIVED})


def _rules() -> list[Rule]:
    r: list[Rule] = []
    add = r.append
    # ---------------- driver: slime_validate_args ----------------
    add(Rule(
        "slime.args.dynamic_batch_needs_max_tokens",
        is_set("max_tokens_per_gpu"),
        "--use-dynamic-batch-size without --max-tokens-per-gpu (slime: \"max_tokens_per_gpu must be set when "
        "use_dynamic_batch_size is set\")",
        Stage.DRIVER, ARGS, when=V["dynamic_batch"],
    ))
    add(Rule(
        "slime.rollout.response_len_required",
        V["response_len_given"],
        "no --rollout-max-response-len: slime passes it to SGLang as max_new_tokens (None when unset) and its "
        "generate asserts max_new_tokens >= 0, a TypeError at the first sample of the first rollout (set "
        "--rollout-max-response-len)",
        Stage.FIRST_STEP,
        "slime/rollout/sglang_rollout.py:GenerateState.__init__ (sampling_params max_new_tokens="
        "args.rollout_max_response_len) and generate (assert sampling_params[\"max_new_tokens\"] >= 0), v0.3.1",
        when=~V["custom_generate"],
    ))
    add(Rule(
        "slime.args.balance_by_flops_needs_dynamic_batch",
        V["dynamic_batch"],
        "--balance-by-flops without --use-dynamic-batch-size (slime: \"--balance-by-flops requires "
        "--use-dynamic-batch-size\")",
        Stage.DRIVER, ARGS, when=V["balance_by_flops"],
    ))
    add(Rule(
        "slime.args.kl_coef_or_kl_loss_coef",
        ~(V["kl_coef_on"] & V["kl_loss_coef_on"]),
        "--kl-coef and --kl-loss-coef are both non-zero (slime: \"Only one of kl_coef and kl_loss_coef can be set\")",
        Stage.DRIVER, ARGS,
    ))
    add(Rule(
        "slime.args.reinforce_needs_normalized_advantages",
        V["normalize_advantages"],
        "--advantage-estimator reinforce_plus_plus(_baseline) without --normalize-advantages (slime: \"The "
        "'reinforce_plus_plus' and 'reinforce_plus_plus_baseline' advantage estimators require advantage "
        "normalization.\")",
        Stage.DRIVER, ARGS, when=V["reinforce_pp"],
    ))
    add(Rule(
        "slime.args.global_batch_matches_steps_per_rollout",
        V["global_batch_size"].eq(SAMPLES // maximum(1, V["steps_per_rollout"])),
        "--global-batch-size {global_batch_size} is not rollout_batch_size {train_batch_size} * n_samples_per_prompt "
        "{n} // num_steps_per_rollout {steps_per_rollout} = {samples} // {steps_per_rollout} (slime: "
        "\"global_batch_size {global_batch_size} is not equal to rollout_batch_size {train_batch_size} * "
        "n_samples_per_prompt {n} // num_steps_per_rollout {steps_per_rollout}\")",
        Stage.DRIVER, ARGS, when=is_set("global_batch_size") & is_set("steps_per_rollout"),
        explanation="Give one of the two: slime derives the global batch from the steps per rollout.",
    ))
    add(Rule(
        "slime.args.over_sampling_covers_rollout_batch",
        V["over_sampling"] >= V["train_batch_size"],
        "--over-sampling-batch-size {over_sampling} is below --rollout-batch-size {train_batch_size} (slime: "
        "\"over_sampling_batch_size {over_sampling} should be greater than or equal to rollout_batch_size "
        "{train_batch_size}\")",
        Stage.DRIVER, ARGS, when=is_set("over_sampling"),
    ))
    add(Rule(
        "slime.args.prompt_shorter_than_context",
        V["max_prompt_length"] <= V["max_context_length"] - 1,
        "--rollout-max-prompt-len {max_prompt_length} leaves no generated token in --rollout-max-context-len "
        "{max_context_length} (slime: \"args.rollout_max_prompt_len ({max_prompt_length}) must be smaller than "
        "args.rollout_max_context_len ({max_context_length})\")",
        Stage.DRIVER, ARGS, when=is_set("max_prompt_length") & is_set("max_context_length"),
    ))
    # ---------------- driver: Megatron's validate_args ----------------
    add(Rule(
        "slime.megatron.world_divisible_by_model_parallel",
        divides(MP, W),
        "the actor's {W} GPUs (actor_num_nodes * actor_num_gpus_per_node) do not split into TP*PP*CP = "
        "{tp}*{pp}*{cp} = {mp} (Megatron: \"world size ({W}) is not divisible by total_model_size "
        "(total_model_size={mp})\")",
        Stage.DRIVER, MG_ARGS,
    ))
    add(Rule(
        "slime.megatron.global_batch_positive",
        D["gbs"] >= 1,
        "the global batch is {gbs} samples (rollout_batch_size * n_samples_per_prompt // num_steps_per_rollout = "
        "{samples} // {steps_per_rollout}): Megatron asserts global_batch_size > 0",
        Stage.DRIVER, MG_ARGS, when=is_set("steps_per_rollout"),
    ))
    add(Rule(
        "slime.megatron.layers_divisible_by_pp",
        divides(V["pp"], V["num_layers"]),
        "the model's {num_layers} layers do not split over --pipeline-model-parallel-size {pp} (Megatron: "
        "\"Number of layers should be divisible by the pipeline-model-parallel size\")",
        Stage.DRIVER, MG_ARGS,
        when=is_set("num_layers") & ~is_set("first_pp_layers") & ~is_set("last_pp_layers"),
    ))
    add(Rule(
        "slime.megatron.uneven_pipeline_needs_pp",
        ~is_set("first_pp_layers") & ~is_set("last_pp_layers"),
        "--decoder-first/last-pipeline-num-layers are set with --pipeline-model-parallel-size 1 (slime: "
        "\"decoder_first_pipeline_num_layers and decoder_last_pipeline_num_layers should be None when "
        "pipeline_model_parallel_size is 1.\")",
        Stage.DRIVER, MG_WRAP, when=V["pp"].eq(1),
    ))
    # ---------------- driver: SGLang's validate_args ----------------
    add(Rule(
        "slime.sglang.engine_gpus_divisible_by_pp",
        divides(V["sglang_pp"], V["gpus_per_engine"]),
        "rollout_num_gpus_per_engine ({gpus_per_engine}) must be divisible by sglang_pipeline_parallel_size "
        "({sglang_pp})",
        Stage.DRIVER, SGL_ARGS, when=V["sglang_pp"] > 1,
    ))
    add(Rule(
        "slime.sglang.dp_needs_dp_attention",
        V["dp_attention"],
        "--sglang-dp-size {sglang_dp} without --sglang-enable-dp-attention (slime asserts sglang_enable_dp_attention "
        "when sglang_dp_size > 1)",
        Stage.DRIVER, SGL_ARGS, when=V["sglang_dp"] > 1,
    ))
    # ---------------- trainer_init: Ray placement and the SGLang engines ----------------
    add(Rule(
        "slime.placement.separate_needs_rollout_gpus",
        is_set("rollout_gpus"),
        "without --colocate the engines need GPUs of their own: --rollout-num-gpus is unset (the placement group "
        "adds actor GPUs + None: TypeError)",
        Stage.TRAINER_INIT, PLACEMENT, when=~V["colocate"],
    ))
    add(Rule(
        "slime.placement.gpu_budget",
        D["gpus_needed"] <= V["cluster_num_gpus"],
        "the placement group needs {gpus_needed} GPUs (actor {W}, rollout {rollout_world}, "
        "colocate={colocate}) but the cluster has {cluster_num_gpus}: Ray waits for it forever (slime logs "
        "\"Waiting for placement group of {gpus_needed} GPUs\")",
        Stage.TRAINER_INIT, f"{PLACEMENT} and slime/ray/placement_group.py:_create_placement_group",
        when=is_set("cluster_num_gpus"),
    ))
    add(Rule(
        "slime.rollout.engine_fits_rollout_gpus",
        D["engines"] >= 1,
        "the {rollout_world} rollout GPUs hold no SGLang engine of min(rollout_num_gpus_per_engine "
        "{gpus_per_engine}, num_gpus_per_node {num_gpus_per_node}) = {engine_gpus_on_node} GPUs: nothing generates",
        Stage.TRAINER_INIT, ENGINES, when=D["rollout_world"] >= 1,
    ))
    # ---------------- worker_init: megatron-core ----------------
    add(Rule(
        "slime.megatron.world_divisible_by_expert_parallel",
        divides(D["expert_mp"], W),
        "the actor's {W} GPUs do not split into ETP*EP*PP = {expert_mp} (megatron-core: \"world_size ({W}) is not "
        "divisible by expert_tensor_model_pipeline_parallel size ({expert_mp})\")",
        Stage.WORKER_INIT, MG_PS,
    ))
    add(Rule(
        "slime.megatron.global_batch_divisible_by_micro_dp",
        divides(D["micro_dp"], D["gbs"]),
        "global batch {gbs} does not split into micro_batch_size {micro_batch_size} x dp {dp} = {micro_dp} "
        "(Megatron: \"global batch size ({gbs}) is not divisible by micro batch size ({micro_batch_size}) times "
        "data parallel size ({dp})\")",
        Stage.WORKER_INIT, MG_CALC, when=D["gbs"] >= 1,
        explanation="slime builds Megatron's micro-batch calculator even with --use-dynamic-batch-size (then "
        "--micro-batch-size stays 1 and the global batch must split over the data-parallel ranks).",
    ))
    # ---------------- first_step: the per-rollout DP schedule ----------------
    add(Rule(
        "slime.schedule.rollout_covers_global_batch",
        SAMPLES >= D["gbs"],
        "a rollout's {samples} samples (rollout_batch_size {train_batch_size} x n_samples_per_prompt {n}) are fewer "
        "than the global batch {gbs} (slime: \"num_rollouts ({samples}) < global_batch_size ({gbs}); need at least one "
        "rollout per step.\")",
        Stage.FIRST_STEP, SCHEDULE, when=D["gbs"] >= 1,
    ))
    # ---------------- advice ----------------
    add(Rule(
        "slime.advice.rollout_divisible_by_global_batch",
        # the divisor held >= 1 for the solver: gbs's bounds span every branch of its definition (an unset global
        # batch over a searched --num-steps-per-rollout may floor to 0), and the rule holds only where gbs >= 1
        divides(maximum(1, D["gbs"]), SAMPLES),
        "{dropped} of a rollout's {samples} samples fall outside the {steps} steps of {gbs}: build_dp_schedule "
        "drops the trailing ones every rollout",
        Stage.ADVICE, SCHEDULE, when=(D["gbs"] >= 1) & (SAMPLES >= D["gbs"]), severity=Severity.WARNING,
    ))
    add(Rule(
        "slime.advice.engines_use_rollout_gpus",
        divides(D["engine_gpus_on_node"], D["rollout_world"]),
        "{rollout_world} rollout GPUs hold {engines} engines of {engine_gpus_on_node} GPUs: the rest stay idle",
        Stage.ADVICE, ENGINES, when=D["engines"] >= 1, severity=Severity.WARNING,
    ))
    return r


RULES = _rules()
RULESET = RuleSet("slime", VERSION, VARIABLES, DERIVED, RULES)

"""verl 0.9.1 on the Megatron backend (``model_engine=megatron``, ``actor.strategy=megatron``).

Every rule verl applies whatever the backend (driver micro-batch keys, the
rollout engine, the per-step batch arithmetic) comes from
``rules.shared_rules()`` unchanged; it reads the parallel layout
through derived quantities, which here are Megatron's (``dp = N / (TP*PP*CP)``,
token budgets multiplied by CP). This module adds what only Megatron checks:
the driver's ``(B*n) % (dp*micro)`` (``utils/config.py:validate_config``, verl
PR #1811), megatron-core's process groups (``N % (TP*PP*CP)``,
``N % (ETP*EP*PP)``, VPP needs PP > 1), ``TransformerConfig`` (heads and
query groups vs TP, the layer split over PP and VPP, with first/last-stage
layer overrides), the MoE layer (experts % EP), the VPP micro-batch grouping
of the pipeline schedule, and the fact that megatron-core's parallel state is
process-global: the critic (built first), reference and actor engines share it.

Three rule sets come out:

* ``MEGATRON_RULESET`` (``verl-megatron``): shared rules + Megatron rules;
* ``ANY_RULESET`` (``verl``): both backends, switched by the variable
  ``megatron`` (``actor_rollout_ref.actor.strategy``); FSDP-only rules hold
  when it is False, Megatron-only rules when it is True. ``check --framework
  verl`` uses it, so a pasted Megatron config meets the Megatron rules;
* ``rules.RULESET``: shared rules + FSDP rules.

megatron-core sources are from megatron-core 0.16.1 (verl 0.9.1's wheel does not pin a
version); paths are inside the ``megatron`` package.
"""

from __future__ import annotations

from dataclasses import replace

from ...rules.base import Derived, Rule, RuleSet, Stage, is_set
from ...rules.expr import BoolExpr, BoolVar, Const, IntExpr, IntVar, divides, if_then_else, maximum
from .rules import (
    AR,
    skip_in_fully_async,
    CONFIG,
    D,
    FSDP_DERIVED,
    FSDP_LAYOUT,
    FSDP_RULES,
    FSDP_VARS,
    SHARED_RULES,
    SHARED_VARS,
    VERSION,
    make_variables,
    rule_vars,
    shared_derived,
)

MG = f"{AR}.actor.megatron"

# name in rules -> (native key, kind, default, optional, description)
MEGATRON_VARS = [
    ("tp", f"{MG}.tensor_model_parallel_size", "int", 1, False, "actor tensor parallel"),
    ("pp", f"{MG}.pipeline_model_parallel_size", "int", 1, False, "actor pipeline parallel"),
    ("cp", f"{MG}.context_parallel_size", "int", 1, False, "actor context parallel"),
    ("ep", f"{MG}.expert_model_parallel_size", "int", 1, False, "actor expert parallel"),
    ("etp", f"{MG}.expert_tensor_parallel_size", "int", None, True, "actor expert tensor parallel (unset: TP)"),
    ("vpp", f"{MG}.virtual_pipeline_model_parallel_size", "int", None, True, "virtual pipeline stages per PP rank (unset: none)"),
    ("first_stage_layers", f"{MG}.override_transformer_config.num_layers_in_first_pipeline_stage", "int", None, True,
     "layers on the first pipeline stage (unset: even split)"),
    ("last_stage_layers", f"{MG}.override_transformer_config.num_layers_in_last_pipeline_stage", "int", None, True,
     "layers on the last pipeline stage (unset: even split)"),
    ("pp_account_embedding", f"{MG}.override_transformer_config.account_for_embedding_in_pipeline_split", "bool",
     False, False, "count the embedding as a layer in the pipeline split"),
    ("pp_account_loss", f"{MG}.override_transformer_config.account_for_loss_in_pipeline_split", "bool", False, False,
     "count the loss as a layer in the pipeline split"),
    ("ref_tp", f"{AR}.ref.megatron.tensor_model_parallel_size", "int", 1, False, "ref tensor parallel (follows the actor's)"),
    ("ref_pp", f"{AR}.ref.megatron.pipeline_model_parallel_size", "int", 1, False, "ref pipeline parallel (follows the actor's)"),
    ("ref_cp", f"{AR}.ref.megatron.context_parallel_size", "int", 1, False, "ref context parallel (follows the actor's)"),
    ("ref_ep", f"{AR}.ref.megatron.expert_model_parallel_size", "int", 1, False, "ref expert parallel (follows the actor's)"),
    ("ref_etp", f"{AR}.ref.megatron.expert_tensor_parallel_size", "int", None, True, "ref expert tensor parallel (follows the actor's)"),
    ("ref_vpp", f"{AR}.ref.megatron.virtual_pipeline_model_parallel_size", "int", None, True, "ref virtual pipeline (follows the actor's)"),
    ("critic_tp", "critic.megatron.tensor_model_parallel_size", "int", 1, False, "critic tensor parallel (default 1, not the actor's)"),
    ("critic_pp", "critic.megatron.pipeline_model_parallel_size", "int", 1, False, "critic pipeline parallel"),
    ("critic_cp", "critic.megatron.context_parallel_size", "int", 1, False, "critic context parallel"),
    ("critic_ep", "critic.megatron.expert_model_parallel_size", "int", 1, False, "critic expert parallel"),
    ("critic_etp", "critic.megatron.expert_tensor_parallel_size", "int", None, True, "critic expert tensor parallel"),
    ("critic_vpp", "critic.megatron.virtual_pipeline_model_parallel_size", "int", None, True, "critic virtual pipeline"),
    # memory knobs (for the cost model)
    ("megatron_param_offload", f"{MG}.param_offload", "bool", False, False, "actor params (and grads) on CPU"),
    ("megatron_optimizer_offload", f"{MG}.optimizer_offload", "bool", False, False, "actor optimizer on CPU"),
    ("ref_megatron_param_offload", f"{AR}.ref.megatron.param_offload", "bool", False, False, "ref params on CPU (follows the actor's)"),
    ("critic_megatron_param_offload", "critic.megatron.param_offload", "bool", False, False, "critic params on CPU"),
    ("critic_megatron_optimizer_offload", "critic.megatron.optimizer_offload", "bool", False, False, "critic optimizer on CPU"),
    # model constants (from the model card)
    ("num_layers", "model.num_hidden_layers", "int", None, False, "decoder layers"),
    ("num_experts", "model.num_experts", "int", None, False, "routed experts (0: dense)"),
]

# The backend switch of the combined rule set.
BACKEND_VARS = [
    ("megatron", f"{AR}.actor.strategy", "bool", False, False,
     "training backend is Megatron (actor.strategy=megatron, set by model_engine=megatron)"),
]

MEGATRON_VARIABLES = make_variables(SHARED_VARS, MEGATRON_VARS)
ANY_VARIABLES = make_variables(SHARED_VARS, FSDP_VARS, MEGATRON_VARS, BACKEND_VARS)
V = rule_vars(ANY_VARIABLES)

M = {
    name: IntVar(name)
    for name in (
        "mp", "ref_mp", "critic_mp", "etp_eff", "ref_etp_eff", "critic_etp_eff", "expert_mp", "min_bsz",
        "pp_extra", "layers_pp", "layers_per_stage", "mid_per_stage", "first_n", "last_n", "mid_layers",
        "mid_stages", "logprob_n_micro", "ref_n_micro",
    )
}
N = D["N"]
dyn = V["actor_dyn"]


def _etp(prefix: str) -> IntExpr:
    tp = V[f"{prefix}tp"]
    return if_then_else(is_set(f"{prefix}etp"), V[f"{prefix}etp"], tp)


MEGATRON_LAYOUT: dict[str, IntExpr] = {
    # max(1, .) keeps a broken layout from dividing by 0 (verl.megatron.*gpus_divisible* report that case)
    "dp": maximum(1, N // M["mp"]),
    "ref_dp": maximum(1, N // M["ref_mp"]),
    "critic_dp": maximum(1, N // M["critic_mp"]),
    "seq_par": V["cp"],  # engine/megatron/transformer_impl.py: data sp_size = context_parallel_size
    "ref_seq_par": V["ref_cp"],
    "critic_seq_par": V["critic_cp"],
    "cfg_sp": Const(1),  # McoreActorConfig has no ulysses_sequence_parallel_size: validate() uses 1
}

# Derived quantities the layout reads come first (full_env computes them in order).
MEGATRON_PRE_DERIVED = [
    Derived("mp", V["tp"] * V["pp"] * V["cp"], "actor model-parallel size TP*PP*CP"),
    Derived("ref_mp", V["ref_tp"] * V["ref_pp"] * V["ref_cp"], "ref TP*PP*CP"),
    Derived("critic_mp", V["critic_tp"] * V["critic_pp"] * V["critic_cp"], "critic TP*PP*CP"),
]


def _int(b: BoolExpr) -> IntExpr:
    return if_then_else(b, 1, 0)


MEGATRON_DERIVED = [
    Derived("etp_eff", _etp(""), "actor expert tensor parallel (unset: TP)"),
    Derived("ref_etp_eff", _etp("ref_"), "ref expert tensor parallel"),
    Derived("critic_etp_eff", _etp("critic_"), "critic expert tensor parallel"),
    Derived("expert_mp", M["etp_eff"] * V["ep"] * V["pp"], "ETP*EP*PP: the expert model-parallel group"),
    Derived("min_bsz", D["dp"] * V["actor_micro_per_gpu"], "the driver's minimal batch: Megatron dp * micro"),
    Derived("pp_extra", _int(V["pp_account_embedding"]) + _int(V["pp_account_loss"]),
            "embedding/loss counted as layers in the pipeline split"),
    Derived("layers_pp", V["num_layers"] + M["pp_extra"], "layers the pipeline split divides"),
    Derived("layers_per_stage", M["layers_pp"] // V["pp"], "layers per pipeline stage (even split)"),
    Derived("first_n", if_then_else(is_set("first_stage_layers"), V["first_stage_layers"], 0), "first-stage layers"),
    Derived("last_n", if_then_else(is_set("last_stage_layers"), V["last_stage_layers"], 0), "last-stage layers"),
    Derived("mid_layers", V["num_layers"] - M["first_n"] - M["last_n"], "layers left for the middle stages"),
    Derived("mid_stages", V["pp"] - _int(is_set("first_stage_layers")) - _int(is_set("last_stage_layers")),
            "pipeline stages without a layer override"),
    Derived("mid_per_stage", maximum(0, M["mid_layers"]) // maximum(1, M["mid_stages"]), "layers per middle stage"),
    Derived("logprob_n_micro", D["local_batch"] // V["logprob_micro_per_gpu"], "micro batches per GPU in log-prob"),
    Derived("ref_n_micro", D["ref_local_batch"] // V["ref_micro_per_gpu"], "micro batches per GPU in ref log-prob"),
]

MCORE_PS = "megatron/core/parallel_state.py:initialize_model_parallel"
MCORE_TC = "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__"
MCORE_BLOCK = "megatron/core/transformer/transformer_block.py:get_num_layers_to_build"
MEGATRON_ENGINE = "verl/workers/engine/megatron/transformer_impl.py:MegatronEngine"
VIA_ENGINE = f"(via {MEGATRON_ENGINE}._init_device_mesh)"
VIA_BRIDGE = f"(via {MEGATRON_ENGINE}._build_tf_config)"


def megatron_rules() -> list[Rule]:
    """Rules only the Megatron backend has."""
    r: list[Rule] = []
    add = r.append
    not_dyn = ~dyn
    mp_ok = divides(M["mp"], N)
    # ---------------- driver: utils/config.py:validate_config (verl PR #1811) ----------------
    add(Rule(
        "verl.megatron.driver_micro_per_gpu_required",
        is_set("actor_micro_per_gpu"),
        "actor.ppo_micro_batch_size_per_gpu = {actor_micro_per_gpu}: the Megatron driver check multiplies dp by it "
        "(a None here is a TypeError; the deprecated ppo_micro_batch_size = {actor_micro} is not used)",
        Stage.DRIVER, CONFIG, when=not_dyn,
    ))
    add(Rule(
        "verl.megatron.driver_gpus_divisible_by_model_parallel",
        mp_ok,
        "n_gpus = {N} is not divisible by actor TP*PP*CP = {tp}*{pp}*{cp} = {mp}",
        Stage.DRIVER, CONFIG, when=not_dyn,
    ))
    add(Rule(
        "verl.megatron.driver_batch_divisible",
        divides(M["min_bsz"], D["B_n"]),
        "train_batch_size*rollout.n = {train_batch_size}*{n} = {B_n} is not divisible by the minimal batch "
        "Megatron dp*ppo_micro_batch_size_per_gpu = {dp}*{actor_micro_per_gpu} = {min_bsz}",
        Stage.DRIVER, CONFIG, when=not_dyn & is_set("actor_micro_per_gpu") & mp_ok,
        explanation="dp = N/(TP*PP*CP); each data-parallel rank must get whole micro batches.",
    ))
    # ---------------- GPU worker init: megatron-core parallel state and model config ----------------
    add(Rule(
        "verl.megatron.gpus_divisible_by_model_parallel",
        mp_ok,
        "world size {N} is not divisible by actor TP*PP*CP = {tp}*{pp}*{cp} = {mp}",
        Stage.WORKER_INIT, f"{MCORE_PS} {VIA_ENGINE}", when=dyn,  # without dynamic bsz the driver says it first
    ))
    add(Rule(
        "verl.megatron.vpp_needs_pp",
        V["pp"] > 1,
        "virtual_pipeline_model_parallel_size = {vpp} needs pipeline_model_parallel_size > 1 (it is {pp})",
        Stage.WORKER_INIT, f"{MCORE_PS} {VIA_ENGINE}", when=is_set("vpp"),
    ))
    add(Rule(
        "verl.megatron.gpus_divisible_by_expert_parallel",
        divides(M["expert_mp"], N),
        "world size {N} is not divisible by expert_tensor_parallel*expert_model_parallel*pipeline = "
        "{etp_eff}*{ep}*{pp} = {expert_mp} (expert_tensor_parallel_size unset means TP)",
        Stage.WORKER_INIT, f"{MCORE_PS} {VIA_ENGINE}",
    ))
    add(Rule(
        "verl.megatron.heads_divisible_by_tp",
        divides(V["tp"], V["num_heads"]),
        "num_attention_heads = {num_heads} is not a multiple of actor tensor_model_parallel_size = {tp}",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}",
    ))
    add(Rule(
        "verl.megatron.query_groups_vs_tp",
        divides(V["tp"], V["num_kv_heads"]) | divides(V["num_kv_heads"], V["tp"]),
        "num_query_groups (key/value heads) = {num_kv_heads} must be a multiple or a divisor of actor "
        "tensor_model_parallel_size = {tp}",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}",
    ))
    add(Rule(
        "verl.megatron.experts_divisible_by_ep",
        divides(V["ep"], V["num_experts"]),
        "num_moe_experts = {num_experts} is not divisible by expert_model_parallel_size = {ep}",
        Stage.WORKER_INIT, "megatron/core/transformer/moe/moe_layer.py:BaseMoELayer.__init__", when=V["num_experts"] > 0,
    ))
    # layer split over pipeline stages (and virtual stages)
    uneven = is_set("first_stage_layers") | is_set("last_stage_layers")
    accounted = V["pp_account_embedding"] | V["pp_account_loss"]
    add(Rule(
        "verl.megatron.layers_divisible_by_pp",
        divides(V["pp"], M["layers_pp"]),
        "num_layers = {num_layers} (+{pp_extra} for embedding/loss accounted in the split) is not divisible by "
        "pipeline_model_parallel_size = {pp}",
        Stage.WORKER_INIT, MCORE_BLOCK, when=~uneven,
    ))
    add(Rule(
        "verl.megatron.stage_layers_divisible_by_vpp",
        divides(V["vpp"], M["layers_per_stage"]),
        "{layers_pp} layers over pipeline_model_parallel_size = {pp} leave {layers_per_stage} per stage, not "
        "divisible by virtual_pipeline_model_parallel_size = {vpp}",
        Stage.WORKER_INIT, MCORE_BLOCK, when=~uneven & is_set("vpp") & (V["pp"] > 1) & divides(V["pp"], M["layers_pp"]),
    ))
    add(Rule(
        "verl.megatron.pp_layout_exclusive",
        ~accounted,
        "num_layers_in_first/last_pipeline_stage = {first_stage_layers}/{last_stage_layers} cannot be combined "
        "with account_for_embedding/loss_in_pipeline_split = {pp_account_embedding}/{pp_account_loss}",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}", when=uneven,
    ))
    has_mid_layers, has_mid_stages = M["mid_layers"] > 0, M["mid_stages"] > 0
    add(Rule(
        "verl.megatron.middle_layers_split",
        (M["mid_stages"] >= 0) & (M["mid_layers"] >= 0)
        & ((has_mid_layers & has_mid_stages) | (~has_mid_layers & ~has_mid_stages))
        & (~has_mid_stages | divides(maximum(1, M["mid_stages"]), maximum(0, M["mid_layers"]))),
        "with first/last pipeline stages of {first_stage_layers}/{last_stage_layers} layers, {mid_layers} of the "
        "{num_layers} layers are left for {mid_stages} middle stages (PP = {pp}): they must split evenly, and "
        "there are middle layers exactly when there are middle stages",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}", when=uneven,
    ))
    add(Rule(
        "verl.megatron.first_stage_layers_divisible_by_vpp",
        divides(V["vpp"], V["first_stage_layers"]),
        "num_layers_in_first_pipeline_stage = {first_stage_layers} is not divisible by "
        "virtual_pipeline_model_parallel_size = {vpp}",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}", when=is_set("first_stage_layers") & is_set("vpp"),
    ))
    add(Rule(
        "verl.megatron.last_stage_layers_divisible_by_vpp",
        divides(V["vpp"], V["last_stage_layers"]),
        "num_layers_in_last_pipeline_stage = {last_stage_layers} is not divisible by "
        "virtual_pipeline_model_parallel_size = {vpp}",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}", when=is_set("last_stage_layers") & is_set("vpp"),
    ))
    add(Rule(
        "verl.megatron.middle_stage_layers_divisible_by_vpp",
        divides(V["vpp"], M["mid_per_stage"]),
        "each of the {mid_stages} middle pipeline stages gets {mid_per_stage} layers ({mid_layers} in all), not "
        "divisible by virtual_pipeline_model_parallel_size = {vpp}",
        Stage.WORKER_INIT, f"{MCORE_TC} {VIA_BRIDGE}",
        when=uneven & is_set("vpp") & has_mid_stages & has_mid_layers
        & divides(maximum(1, M["mid_stages"]), maximum(0, M["mid_layers"])),
    ))
    # megatron-core's parallel state is process-global: the first engine built sets it, the others reuse it
    for who, gate, first in (("ref", V["need_ref"], "the reference engine is built before the actor's"),
                             ("critic", V["need_critic"], "the critic engine is built first, in the same process")):
        same = (V[f"{who}_tp"].eq(V["tp"]) & V[f"{who}_pp"].eq(V["pp"]) & V[f"{who}_cp"].eq(V["cp"])
                & V[f"{who}_ep"].eq(V["ep"]) & M[f"{who}_etp_eff"].eq(M["etp_eff"])
                & ((is_set(f"{who}_vpp") & is_set("vpp") & V[f"{who}_vpp"].eq(V["vpp"]))
                   | (~is_set(f"{who}_vpp") & ~is_set("vpp"))))
        key = "actor_rollout_ref.ref" if who == "ref" else "critic"
        add(Rule(
            f"verl.megatron.{who}_parallel_matches_actor",
            same,
            f"{key}.megatron TP/PP/CP/EP/ETP/VPP = {{{who}_tp}}/{{{who}_pp}}/{{{who}_cp}}/{{{who}_ep}}/"
            f"{{{who}_etp_eff}}/{{{who}_vpp}} differ from the actor's {{tp}}/{{pp}}/{{cp}}/{{ep}}/{{etp_eff}}/{{vpp}}: "
            f"megatron-core's parallel groups are process-global and {first}",
            Stage.WORKER_INIT, f"{MEGATRON_ENGINE}._init_device_mesh (returns early once mpu is initialized; "
            "order: verl/trainer/ppo/v1/trainer_base.py:PPOTrainer._setup, "
            "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model)",
            when=gate,
            explanation="All Megatron engines of a job share one set of process groups; set the same sizes for "
                        "actor, reference and critic.",
        ))
    # ---------------- first step: the interleaved (VPP) schedule groups micro batches by PP ----------------
    interleaved = is_set("vpp") & (V["vpp"] > 1)
    mini_ok = divides(D["dp"], D["mini_n"])
    add(Rule(
        "verl.megatron.vpp_micro_batches_grouped",
        divides(V["pp"], D["grad_accum"]),
        "with virtual pipeline stages, the {grad_accum} micro batches per mini batch (= {mini_per_gpu}/"
        "{actor_micro_per_gpu}) must be a multiple of microbatch_group_size_per_vp_stage = PP = {pp}",
        Stage.FIRST_STEP, f"{MEGATRON_ENGINE}.forward_backward_batch",
        when=interleaved & not_dyn & is_set("actor_micro_per_gpu")
        & divides(V["actor_micro_per_gpu"], D["mini_per_gpu"]),
    ))
    add(Rule(
        "verl.megatron.vpp_logprob_micro_batches_grouped",
        divides(V["pp"], M["logprob_n_micro"]),
        "with virtual pipeline stages, the {logprob_n_micro} log-prob micro batches per GPU (= {local_batch}/"
        "{logprob_micro_per_gpu}) must be a multiple of PP = {pp}",
        Stage.FIRST_STEP, f"{MEGATRON_ENGINE}.forward_backward_batch",
        when=interleaved & not_dyn & is_set("logprob_micro_per_gpu") & mini_ok
        & divides(V["logprob_micro_per_gpu"], D["local_batch"]),
    ))
    add(Rule(
        "verl.megatron.vpp_ref_micro_batches_grouped",
        divides(V["pp"], M["ref_n_micro"]),
        "with virtual pipeline stages, the {ref_n_micro} ref log-prob micro batches per GPU (= {ref_local_batch}/"
        "{ref_micro_per_gpu}) must be a multiple of PP = {pp}",
        Stage.FIRST_STEP, f"{MEGATRON_ENGINE}.forward_backward_batch",
        when=interleaved & V["need_ref"] & ~V["ref_dyn"] & is_set("ref_micro_per_gpu") & mini_ok
        & divides(V["ref_micro_per_gpu"], D["ref_local_batch"]),
    ))
    return r


MEGATRON_RULES = skip_in_fully_async(megatron_rules())

MEGATRON_RULESET = RuleSet(
    "verl-megatron", VERSION, MEGATRON_VARIABLES,
    MEGATRON_PRE_DERIVED + shared_derived(MEGATRON_LAYOUT) + MEGATRON_DERIVED,
    SHARED_RULES + MEGATRON_RULES,
)

# ---------------------------------------------------------------------------------------------
# Both backends in one rule set, switched by ``megatron``.
IS_MEGATRON = BoolVar("megatron")
ANY_LAYOUT = {name: if_then_else(IS_MEGATRON, MEGATRON_LAYOUT[name], FSDP_LAYOUT[name]) for name in FSDP_LAYOUT}


def _only_when(cond: BoolExpr, rules: list[Rule]) -> list[Rule]:
    return [replace(rule, when=cond & rule.when) for rule in rules]


ANY_RULESET = RuleSet(
    "verl", VERSION, ANY_VARIABLES,
    MEGATRON_PRE_DERIVED + shared_derived(ANY_LAYOUT) + FSDP_DERIVED + MEGATRON_DERIVED,
    SHARED_RULES + _only_when(~IS_MEGATRON, FSDP_RULES) + _only_when(IS_MEGATRON, MEGATRON_RULES),
)

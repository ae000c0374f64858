"""Every batch-size and parallelism rule OpenRLHF 0.11.2 enforces in ``train_ppo_ray``.

Each rule cites the file and function (paths inside the ``openrlhf`` 0.11.2
wheel, and DeepSpeed 0.19.6, the version that wheel pins) that enforces it,
and the stage at which a run would die:

* ``driver``: the asserts in ``openrlhf/cli/train_ppo_ray.py``'s ``__main__``
  block, right after argument parsing (seconds after launch);
* ``trainer_init``: ``train()`` building the placement groups and Ray actors;
* ``worker_init``: each model group's ``init_model_from_pretrained``
  (DeepSpeed device mesh, ``deepspeed.initialize``'s batch assertion, vLLM);
* ``first_step``: the first rollout / experience dispatch;
* ``runtime``: a hang rather than an error (mismatched collectives);
* ``advice``: warnings that are ours on purpose.

Sizes: ``rollout.batch_size`` counts prompts; ``train.batch_size``,
``train.micro_batch_size`` and ``rollout.micro_batch_size`` count samples
(responses). A model group ``g`` (actor, ref, critic, reward) has
``W_g = num_nodes * num_gpus_per_node`` ranks; DeepSpeed sees them all as its
world, and ring attention (``r``) and DeepSpeed tensor parallel (``t``) make
``W_g / (r*t)`` data-parallel ranks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ...rules.base import Derived, Rule, RuleSet, Severity, Stage, VarSpec, is_set
from ...rules.expr import BoolVar, IntVar, all_of, divides, if_then_else, maximum, variables

VERSION = "0.11.2"
DEEPSPEED_VERSION = "0.19.6"

# name in rules -> (native key (0.11.2 flag without --), kind, default, optional, description)
_VARS = [
    ("actor_nnodes", "actor.num_nodes", "int", 1, False, "nodes of the actor group"),
    ("actor_gpus_per_node", "actor.num_gpus_per_node", "int", 8, False, "GPUs per node of the actor group"),
    ("ref_nnodes", "ref.num_nodes", "int", 1, False, "nodes of the reference group"),
    ("ref_gpus_per_node", "ref.num_gpus_per_node", "int", 8, False, "GPUs per node of the reference group"),
    ("critic_nnodes", "critic.num_nodes", "int", 1, False, "nodes of the critic group"),
    ("critic_gpus_per_node", "critic.num_gpus_per_node", "int", 8, False, "GPUs per node of the critic group"),
    ("reward_nnodes", "reward.num_nodes", "int", 1, False, "nodes of the reward-model group"),
    ("reward_gpus_per_node", "reward.num_gpus_per_node", "int", 8, False, "GPUs per node of the reward-model group"),
    ("colocate_actor_ref", "train.colocate_actor_ref", "bool", False, False, "actor and ref share GPUs"),
    ("colocate_critic_reward", "train.colocate_critic_reward", "bool", False, False, "critic and reward model share GPUs"),
    ("colocate_all", "train.colocate_all", "bool", False, False, "hybrid engine: every model and vLLM share the actor's GPUs"),
    ("async_train", "train.async_enable", "bool", False, False, "asynchronous rollout and training"),
    ("partial_rollout", "train.partial_rollout_enable", "bool", False, False, "partial rollout (async only)"),
    ("vllm_num_engines", "vllm.num_engines", "int", None, True, "vLLM engines (0 or unset: none)"),
    ("vllm_tp", "vllm.tensor_parallel_size", "int", 1, False, "tensor parallel size of each vLLM engine"),
    ("vllm_sleep", "vllm.enable_sleep", "bool", False, False, "vLLM sleep mode between rollouts"),
    ("gmu_permille", "vllm.gpu_memory_utilization", "int", 950, False, "vLLM memory fraction x1000"),
    ("zero_stage", "ds.zero_stage", "int", 2, False, "DeepSpeed ZeRO stage (0-3)"),
    ("ring_attn_size", "ds.ring_attn_size", "int", 1, False, "ring attention (context parallel) group size"),
    ("ds_tp", "ds.tensor_parallel_size", "int", 1, False, "DeepSpeed AutoTP tensor parallel size"),
    ("fp16", "ds.param_dtype", "bool", False, False, "fp16 parameters (ds.param_dtype fp16; default bf16)"),
    ("packing_samples", "ds.packing_samples", "bool", False, False, "pack samples (flash attention varlen)"),
    ("dynamic_batch", "train.dynamic_batch_enable", "bool", False, False, "token-budget micro batches"),
    ("train_max_tokens", "train.max_tokens_per_gpu", "int", 16192, False, "token budget per GPU (dynamic batch)"),
    # the experience forwards' budget: train_ppo_ray.py sets an unset one to train.max_tokens_per_gpu
    ("rollout_max_tokens", "rollout.max_tokens_per_gpu", "int", None, True,
     "token budget per GPU of the experience forwards (dynamic batch; unset: train.max_tokens_per_gpu)"),
    ("rollout_batch_size", "rollout.batch_size", "int", 1024, False, "prompts per rollout"),
    ("vllm_generate_batch_size", "rollout.vllm_generate_batch_size", "int", None, True,
     "prompts per vLLM call (unset: rollout.batch_size)"),
    ("micro_rollout_batch_size", "rollout.micro_batch_size", "int", 1, False, "samples per experience batch"),
    ("n", "rollout.n_samples_per_prompt", "int", 1, False, "responses per prompt"),
    ("train_batch_size", "train.batch_size", "int", 128, False, "samples per optimizer step (global)"),
    ("micro_train_batch_size", "train.micro_batch_size", "int", 1, False, "samples per forward/backward per GPU"),
    ("max_len", "data.max_len", "int", 2048, False, "longest prompt+response, tokens (vLLM max_model_len)"),
    ("max_new_tokens", "rollout.max_new_tokens", "int", None, True, "longest response, tokens (unset: max_len - prompt)"),
    ("enable_ema", "train.enable_ema", "bool", False, False, "keep an EMA copy of the actor"),
    ("load_in_4bit", "ds.load_in_4bit", "bool", False, False, "load every DeepSpeed model 4-bit (bitsandbytes NF4)"),
    ("dynamic_filtering", "algo.dynamic_filtering_enable", "bool", False, False, "drop groups by reward range"),
    ("grad_ckpt", "actor.gradient_checkpointing_enable", "bool", False, False, "activation recompute"),
    ("adam_offload", "ds.adam_offload", "bool", False, False, "optimizer states on CPU"),
    ("ref_offload", "ref.offload", "bool", False, False, "reference model on CPU between uses"),
    ("reward_offload", "reward.offload", "bool", False, False, "reward model on CPU between uses"),
    # decided by the tool from other flags
    ("need_critic", "algo.advantage.estimator == gae", "bool", False, False, "a critic is trained (estimator gae)"),
    ("need_ref", "algo.kl.init_coef > 0", "bool", True, False, "a reference model runs (KL coefficient > 0)"),
    ("need_reward_model", "no reward.remote_url / train.agent_func_path", "bool", True, False,
     "a reward-model group runs (the reward is not remote)"),
    ("group_estimator", "algo.advantage.estimator in rloo/reinforce_baseline/group_norm/dr_grpo", "bool", False,
     False, "the estimator needs a group of n > 1 responses"),
    ("legacy_flag_names", "pre-0.10.2 underscore flag names", "bool", False, False,
     "the pasted flags use names 0.11.2 no longer accepts"),
    ("cluster_num_gpus", "--gpus", "int", None, False, "GPUs in the Ray cluster (unknown: the budget is not checked)"),
    # the non-Ray launcher (deepspeed --module openrlhf.cli.train_ppo, framework.py LAUNCHER): one DeepSpeed world
    # over every GPU, every model on each; train_ppo_ray's own checks (RAY_ONLY) do not apply
    ("one_world", "openrlhf.cli.train_ppo (the launcher without Ray)", "bool", False, False,
     "one DeepSpeed world over every GPU, every model on each (the launcher without Ray)"),
    # model constants (from the model card), present only when a model is known
    ("num_heads", "model.num_attention_heads", "int", None, False, "attention heads"),
    ("num_kv_heads", "model.num_key_value_heads", "int", None, False, "key/value heads"),
    ("max_position_embeddings", "model.max_position_embeddings", "int", None, False, "model context"),
]

VARIABLES = {
    name: VarSpec(name, key, kind, default, optional, desc) for name, key, kind, default, optional, desc in _VARS
}

V = {name: (BoolVar(name) if spec.kind == "bool" else IntVar(name)) for name, spec in VARIABLES.items()}

GROUPS = ("actor", "ref", "critic", "reward")

_INT_DERIVED = (
    "actor_world", "ref_world", "critic_world", "reward_world", "model_parallel", "ds_batch",
    "actor_dp", "ref_dp", "critic_dp", "reward_dp",
    "grad_accum", "ref_grad_accum", "critic_grad_accum", "reward_grad_accum",
    "rollout_samples", "sample_batches", "sample_batches_ceil", "engines", "vllm_gpus", "generate_batch",
    "ref_gpus_extra", "critic_gpus_extra", "reward_gpus_extra", "vllm_gpus_extra", "gpus_needed",
    "actor_samples_per_rank_unit", "idle_gpus", "waste_permille", "idle_pct",
)
_BOOL_DERIVED = ("packing_on", "vllm_colocated", "critic_own_pg")
D = {name: IntVar(name) for name in _INT_DERIVED}
D.update({name: BoolVar(name) for name in _BOOL_DERIVED})

B, m = V["train_batch_size"], V["micro_train_batch_size"]
rt = D["model_parallel"]
not_dyn = ~V["dynamic_batch"]
PRESENT = {"actor": None, "ref": V["need_ref"], "critic": V["need_critic"], "reward": V["need_reward_model"]}

DERIVED = [
    *[Derived(f"{g}_world", V[f"{g}_nnodes"] * V[f"{g}_gpus_per_node"], f"{g} ranks = num_nodes*num_gpus_per_node")
      for g in GROUPS],
    Derived("model_parallel", V["ring_attn_size"] * V["ds_tp"], "ring_attn_size*ds tensor_parallel_size"),
    Derived("ds_batch", B * rt, "DeepSpeed train_batch_size = train.batch_size*ring_attn_size*ds_tp"),
    *[Derived(f"{g}_dp", D[f"{g}_world"] // rt, f"{g} data-parallel ranks = W/(ring*tp) (floor)") for g in GROUPS],
    Derived("grad_accum", D["ds_batch"] // m // D["actor_world"], "DeepSpeed's gradient accumulation (actor)"),
    *[Derived(f"{g}_grad_accum", D["ds_batch"] // m // D[f"{g}_world"], f"DeepSpeed's gradient accumulation ({g})")
      for g in GROUPS[1:]],
    Derived("rollout_samples", V["rollout_batch_size"] * V["n"], "samples per rollout = rollout.batch_size*n"),
    Derived("sample_batches", D["rollout_samples"] // V["micro_rollout_batch_size"],
            "experience batches, floor(samples/rollout.micro_batch_size)"),
    Derived("sample_batches_ceil", (D["rollout_samples"] + V["micro_rollout_batch_size"] - 1)
            // V["micro_rollout_batch_size"], "experience batches actually made (ceil)"),
    Derived("engines", if_then_else(is_set("vllm_num_engines"), V["vllm_num_engines"], 0), "vLLM engines (unset: 0)"),
    Derived("vllm_gpus", D["engines"] * V["vllm_tp"], "GPUs of the vLLM engines = num_engines*tensor_parallel_size"),
    Derived("generate_batch", if_then_else(is_set("vllm_generate_batch_size"), V["vllm_generate_batch_size"],
                                           V["rollout_batch_size"]), "prompts per vLLM call"),
    Derived("packing_on", V["packing_samples"] | (V["ring_attn_size"] > 1) | V["dynamic_batch"],
            "packing is on (set, or forced by ring attention / dynamic batch)"),
    Derived("vllm_colocated", V["colocate_all"] & ~V["async_train"], "vLLM shares the actor's GPUs"),
    Derived("critic_own_pg", V["need_critic"] & V["colocate_critic_reward"],
            "critic (and reward model) get their own shared placement group"),
    Derived("ref_gpus_extra", if_then_else(V["need_ref"] & ~(V["colocate_actor_ref"] | V["colocate_all"]),
                                           D["ref_world"], 0), "GPUs the reference group adds"),
    Derived("critic_gpus_extra", if_then_else(V["need_critic"] & (D["critic_own_pg"] | ~V["colocate_all"]),
                                              D["critic_world"], 0), "GPUs the critic group adds"),
    Derived("reward_gpus_extra", if_then_else(V["need_reward_model"] & ~D["critic_own_pg"] & ~V["colocate_all"],
                                              D["reward_world"], 0), "GPUs the reward group adds"),
    Derived("vllm_gpus_extra", if_then_else(D["vllm_colocated"], 0, D["vllm_gpus"]), "GPUs the vLLM engines add"),
    Derived("gpus_needed", D["actor_world"] + D["ref_gpus_extra"] + D["critic_gpus_extra"] + D["reward_gpus_extra"]
            + D["vllm_gpus_extra"], "GPUs the placement groups ask Ray for"),
    # (unknown cluster size: these are not computed, and the rule reading them is skipped like gpu_budget)
    Derived("idle_gpus", maximum(0, V["cluster_num_gpus"] - D["gpus_needed"]),
            "cluster GPUs no placement group asks for"),
    # what fix and recommend count as waste (solver/costs.py): the idle GPUs' share of the cluster
    Derived("waste_permille", D["idle_gpus"] * 1000 // maximum(1, V["cluster_num_gpus"]), "idle cluster GPUs per 1000"),
    Derived("idle_pct", D["waste_permille"] // 10, "idle cluster GPUs, percent"),
    Derived("actor_samples_per_rank_unit", V["micro_rollout_batch_size"] * maximum(1, D["actor_dp"]),
            "rollout.micro_batch_size * actor dp"),
]

CLI = "openrlhf/cli/train_ppo_ray.py"
MAIN = f"{CLI} (__main__ block, after parse_args)"
TRAIN = f"{CLI}:train"
STRATEGY = "openrlhf/utils/deepspeed/deepspeed.py:DeepspeedStrategy"
DS_ASSERT = f"deepspeed {DEEPSPEED_VERSION} deepspeed/runtime/config.py:DeepSpeedConfig._batch_assertion"
LAUNCHER = "openrlhf/trainer/ray/launcher.py:RayActorGroup.async_run_method_batch"
INIT = {
    "actor": "openrlhf/trainer/ray/ppo_actor.py:PolicyModelActor.init_model_from_pretrained",
    "ref": "openrlhf/trainer/ray/launcher.py:ReferenceModelActor.init_model_from_pretrained",
    "critic": "openrlhf/trainer/ray/ppo_critic.py:CriticModelActor.init_model_from_pretrained",
    "reward": "openrlhf/trainer/ray/launcher.py:RewardModelActor.init_model_from_pretrained",
}


def _gate(g: str, extra=None):
    """``extra`` and the group is present (the actor always is)."""
    parts = [p for p in (PRESENT[g], extra) if p is not None]
    return all_of(*parts) if parts else None


def _rules() -> list[Rule]:
    r: list[Rule] = []
    add = r.append

    def rule(*args, when=None, **kw):
        if when is None:
            add(Rule(*args, **kw))
        else:
            add(Rule(*args, when=when, **kw))

    # ---------------- driver: train_ppo_ray.py __main__ ---------------------------------
    rule(
        "openrlhf.driver.legacy_flag_names",
        ~V["legacy_flag_names"],
        "the flags use pre-0.10.2 underscore names (e.g. --train_batch_size, --actor_num_gpus_per_node); "
        "this release's argparse rejects them (error: unrecognized arguments) and the run never starts. They "
        "were checked as their dotted names (--train.batch_size, --actor.num_gpus_per_node): rename them",
        # an error: train_ppo_ray.py's parser is a plain argparse.ArgumentParser() read by parse_args() (no
        # parse_known_args, no alias, no underscore option an abbreviation could match) in 0.10.4 and 0.11.2; the
        # releases whose own flags these are (0.9.10 and before) drop this rule (versions.py)
        Stage.DRIVER, f"{CLI} (argparse: only the dotted names exist since 0.10.2)",
        explanation="0.10.2 renamed every train_ppo_ray flag to a dotted name and kept no aliases.",
    )
    rule(
        "openrlhf.driver.group_estimator_needs_n",
        V["n"] > 1,
        "rollout.n_samples_per_prompt = {n}: the advantage estimator (rloo, reinforce_baseline, group_norm or "
        "dr_grpo) requires n_samples_per_prompt > 1",
        Stage.DRIVER, MAIN, when=V["group_estimator"],
        explanation="Group baselines need several responses per prompt; OpenRLHF asserts it.",
    )
    rule(
        "openrlhf.driver.dynamic_filtering_needs_n",
        V["n"] > 1,
        "algo.dynamic_filtering_enable with rollout.n_samples_per_prompt = {n}: n_samples_per_prompt must be "
        "greater than 1 when using dynamic filtering",
        Stage.DRIVER, MAIN, when=V["dynamic_filtering"],
    )
    rule(
        "openrlhf.driver.dynamic_filtering_needs_remote_reward",
        ~V["need_reward_model"],
        "algo.dynamic_filtering_enable needs reward.remote_url or train.agent_func_path (a reward model group "
        "is configured instead)",
        Stage.DRIVER, MAIN, when=V["dynamic_filtering"],
    )
    rule(
        "openrlhf.driver.packing_needs_vllm",
        D["engines"] >= 1,
        "packing samples is on (ds.packing_samples = {packing_samples}, ring_attn_size = {ring_attn_size}, "
        "dynamic batch = {dynamic_batch}) but vllm.num_engines = {vllm_num_engines}: Only support "
        "`--packing_samples` with vLLM (unset num_engines fails the same check with a TypeError)",
        Stage.DRIVER, MAIN, when=D["packing_on"],
        explanation="ring_attn_size > 1 and dynamic batch switch packing on, and packing asserts vLLM engines.",
    )
    rule(
        "openrlhf.driver.generate_batch_needs_async",
        V["async_train"],
        "rollout.vllm_generate_batch_size = {generate_batch} > rollout.batch_size = {rollout_batch_size} "
        "requires train.async_enable (over-sampling needs the async queue)",
        Stage.DRIVER, MAIN, when=D["generate_batch"] > V["rollout_batch_size"],
    )
    rule(
        "openrlhf.driver.async_forbids_vllm_sleep",
        ~V["vllm_sleep"],
        "train.async_enable with train.colocate_all and vllm.enable_sleep: Async RLHF is not supported with "
        "--vllm.enable_sleep",
        Stage.DRIVER, MAIN, when=V["async_train"] & V["colocate_all"],
        explanation="Without colocate_all the driver switches vllm.enable_sleep off itself.",
    )
    rule(
        "openrlhf.driver.partial_rollout_needs_async",
        V["async_train"],
        "train.partial_rollout_enable requires train.async_enable",
        Stage.DRIVER, MAIN, when=V["partial_rollout"],
    )
    rule(
        "openrlhf.driver.sample_batches_cover_actor",
        D["sample_batches"] >= D["actor_dp"],
        "n_samples_per_prompt*rollout.batch_size//rollout.micro_batch_size = {n}*{rollout_batch_size}//"
        "{micro_rollout_batch_size} = {sample_batches} is less than the effective actor processes "
        "actor_world//ring_attn_size//ds_tp = {actor_world}//{ring_attn_size}//{ds_tp} = {actor_dp}",
        Stage.DRIVER, MAIN,
        explanation="Every actor data-parallel rank needs at least one experience batch.",
    )
    # ---------------- trainer init: train() ---------------------------------------------
    rule(
        "openrlhf.colocate.actor_ref_same_size",
        V["actor_nnodes"].eq(V["ref_nnodes"]) & V["actor_gpus_per_node"].eq(V["ref_gpus_per_node"]),
        "colocating actor and reference needs the same layout: actor {actor_nnodes}x{actor_gpus_per_node} vs "
        "ref {ref_nnodes}x{ref_gpus_per_node} (num_nodes x num_gpus_per_node)",
        Stage.TRAINER_INIT, TRAIN, when=V["need_ref"] & (V["colocate_actor_ref"] | V["colocate_all"]),
    )
    rule(
        "openrlhf.colocate.vllm_matches_actor",
        D["actor_world"].eq(D["vllm_gpus"]),
        "with train.colocate_all, actor_num_nodes*actor_num_gpus_per_node = {actor_world} must equal "
        "vllm_num_engines*vllm_tensor_parallel_size = {engines}*{vllm_tp} = {vllm_gpus}",
        Stage.TRAINER_INIT, TRAIN, when=D["vllm_colocated"] & (D["engines"] >= 1),
    )
    rule(
        "openrlhf.colocate.critic_reward_same_size",
        V["critic_nnodes"].eq(V["reward_nnodes"]) & V["critic_gpus_per_node"].eq(V["reward_gpus_per_node"]),
        "colocating critic and reward model needs the same layout: critic {critic_nnodes}x{critic_gpus_per_node} "
        "vs reward {reward_nnodes}x{reward_gpus_per_node} (checked even when the reward is remote)",
        Stage.TRAINER_INIT, TRAIN, when=D["critic_own_pg"],
    )
    rule(
        "openrlhf.colocate.critic_fits_actor_bundles",
        D["critic_world"] <= D["actor_world"],
        "with train.colocate_all the critic's {critic_world} ranks are placed on the actor's {actor_world} "
        "placement-group bundles: Ray rejects a bundle index past the end",
        Stage.TRAINER_INIT, f"{TRAIN} (RayActorGroup on the actor's placement group)",
        when=V["need_critic"] & V["colocate_all"] & ~D["critic_own_pg"],
    )
    rule(
        "openrlhf.colocate.reward_fits_actor_bundles",
        D["reward_world"] <= D["actor_world"],
        "with train.colocate_all the reward model's {reward_world} ranks are placed on the actor's "
        "{actor_world} placement-group bundles: Ray rejects a bundle index past the end",
        Stage.TRAINER_INIT, f"{TRAIN} (RayActorGroup on the actor's placement group)",
        when=V["need_reward_model"] & V["colocate_all"] & ~D["critic_own_pg"],
    )
    rule(
        "openrlhf.ray.gpu_budget",
        D["gpus_needed"] <= V["cluster_num_gpus"],
        "the placement groups need {gpus_needed} GPUs (actor {actor_world} + ref {ref_gpus_extra} + critic "
        "{critic_gpus_extra} + reward {reward_gpus_extra} + vLLM {vllm_gpus_extra}) but the cluster has "
        "{cluster_num_gpus}: Ray waits for the placement group forever",
        Stage.TRAINER_INIT, f"{TRAIN} (placement_group(...).ready()) and openrlhf/trainer/ray/vllm_engine.py:"
        "create_vllm_engines",
        explanation="Colocated groups share the actor's GPUs; everything else (and vLLM unless colocate_all "
        "without async) asks Ray for its own.",
    )
    rule(
        "openrlhf.deepspeed.tp_needs_bf16",
        ~V["fp16"],
        "ds.tensor_parallel_size = {ds_tp} with ds.param_dtype fp16: BF16 is required for tensor parallel training",
        Stage.TRAINER_INIT, f"{STRATEGY}.__init__ (get_strategy in train())", when=V["ds_tp"] > 1,
    )
    # ---------------- worker init: DeepSpeed and vLLM ---------------------------------------
    for g in GROUPS:
        gate = PRESENT[g]
        rule(
            f"openrlhf.deepspeed.{g}_mesh",
            divides(rt, D[f"{g}_world"]),
            f"the {g} group's {{{g}_world}} ranks do not split into a (dp, ring, tp) device mesh: "
            "ring_attn_size*ds_tp = {ring_attn_size}*{ds_tp} = {model_parallel} must divide it",
            Stage.WORKER_INIT, f"{STRATEGY}.setup_distributed (init_device_mesh)", when=gate,
        )
    for g in GROUPS:
        ga = "grad_accum" if g == "actor" else f"{g}_grad_accum"
        holds = divides(m * D[f"{g}_world"], D["ds_batch"])  # and so ds_batch >= m*W: grad_acc > 0
        trained = g in ("actor", "critic")
        when = _gate(g, not_dyn) if trained else _gate(g)
        how = "get_ds_train_config" if trained else "get_ds_eval_config"
        rule(
            f"openrlhf.deepspeed.{g}_batch",
            holds,
            f"DeepSpeed ({g}): train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * "
            f"world_size {{ds_batch}} != {{micro_train_batch_size}} * {{{ga}}} * {{{g}_world}} (train_batch_size "
            "= train.batch_size*ring_attn_size*ds_tp = {train_batch_size}*{ring_attn_size}*{ds_tp})",
            Stage.WORKER_INIT, f"{DS_ASSERT} via {STRATEGY}.{how}, in {INIT[g]}", when=when,
            explanation=(f"The {g} group's DeepSpeed world is its {g}.num_nodes*num_gpus_per_node ranks; "
                         + ("skipped under dynamic batch." if trained else "checked even under dynamic batch.")),
        )
    rule(
        "openrlhf.deepspeed.ema_batch",
        divides(m * D["actor_world"], D["ds_batch"]),
        "DeepSpeed (EMA model): train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * "
        "world_size {ds_batch} != {micro_train_batch_size} * {grad_accum} * {actor_world}",
        Stage.WORKER_INIT, f"{DS_ASSERT} via {STRATEGY}.get_ds_eval_config, in {INIT['actor']}",
        when=V["enable_ema"],
    )
    rule(
        "openrlhf.vllm.heads_divisible_by_tp",
        divides(V["vllm_tp"], V["num_heads"]),
        "num_attention_heads = {num_heads} is not divisible by vllm.tensor_parallel_size = {vllm_tp}",
        Stage.WORKER_INIT, "vLLM model loading (its error: attention heads must be divisible by tensor parallel size)",
        when=D["engines"] >= 1,
    )
    rule(
        "openrlhf.vllm.max_len_le_positions",
        V["max_len"] <= V["max_position_embeddings"],
        "data.max_len = {max_len} (vLLM max_model_len) exceeds the model's max_position_embeddings = "
        "{max_position_embeddings}",
        Stage.WORKER_INIT, "openrlhf/trainer/ray/vllm_engine.py:create_vllm_engines (max_model_len=max_len; vLLM "
        "checks it against the model config)", when=D["engines"] >= 1,
    )
    # ---------------- first step --------------------------------------------------------------
    rule(
        "openrlhf.vllm.load_in_4bit_weight_sync",
        ~V["load_in_4bit"],
        "ds.load_in_4bit with vllm.num_engines = {vllm_num_engines}: the weight sync sends each parameter in its own "
        "dtype, a 4-bit weight as packed uint8, and the engine stops it: AssertionError: mismatch dtype: src "
        "torch.uint8, dst torch.bfloat16",
        Stage.FIRST_STEP, "openrlhf/trainer/ray/vllm_worker_wrap.py:WorkerWrap.update_weight (assert dtype == "
        "self.model_config.dtype; update_weight_cuda_ipc too), called by openrlhf/trainer/ray/ppo_actor.py "
        "_broadcast_to_vllm with dtype=param.dtype",
        when=D["engines"] >= 1,
        explanation="models/actor.py loads the actor with BitsAndBytesConfig(load_in_4bit) and the vLLM engines load "
                    "the bf16 checkpoint; the first broadcast after training reaches a quantized linear weight "
                    "(OpenRLHF #1150). Drop --ds.load_in_4bit, or generate without engines where the release allows.",
    )
    rule(
        "openrlhf.vllm.engines_required",
        D["engines"] >= 1,
        "vllm.num_engines = {vllm_num_engines}: vLLM is OpenRLHF 0.11.2's only generator, so the first rollout "
        "has no engine to send prompts to",
        Stage.FIRST_STEP, "openrlhf/trainer/ppo_utils/samples_generator.py:_dispatch_prompts_to_vllm",
        when=~D["packing_on"],
    )
    for g in ("ref", "critic", "reward"):
        rule(
            f"openrlhf.launcher.{g}_batches_cover_group",
            D["sample_batches_ceil"] >= D[f"{g}_dp"],
            f"Insufficient batch size for async_run_method_batch: {{sample_batches_ceil}} experience batches "
            f"(ceil(n*rollout.batch_size/rollout.micro_batch_size)) for the {g} group's {{{g}_dp}} effective "
            "actors",
            Stage.FIRST_STEP, LAUNCHER, when=_gate(g, not_dyn),
        )
    for g in ("actor", "critic"):
        rule(
            f"openrlhf.dynamic.{g}_train_batch_covers_dp",
            B >= D[f"{g}_dp"],
            f"with dynamic batch, train.batch_size // {g} dp = {{train_batch_size}} // {{{g}_dp}} = 0: the "
            "replay buffer divides by it (ZeroDivisionError)",
            Stage.FIRST_STEP, "openrlhf/trainer/ppo_utils/replay_buffer.py:NaiveReplayBuffer.setup_dynamic_batch",
            when=_gate(g, V["dynamic_batch"]),
        )
    # ---------------- runtime: hangs --------------------------------------------------------------
    for g in GROUPS:
        rule(
            f"openrlhf.zero3.{g}_even_batches",
            divides(maximum(1, D[f"{g}_dp"]), D["sample_batches_ceil"]),  # dp = 0: the mesh rule reports it
            f"{{sample_batches_ceil}} experience batches do not split evenly over the {g} group's {{{g}_dp}} "
            "data-parallel ranks: with ZeRO-3 the ranks run different numbers of forward passes, their "
            "parameter all-gathers stop matching and the first experience forward hangs",
            Stage.RUNTIME, f"{LAUNCHER} (chunks of ceil(batches/ranks)) with ZeRO-3 parameter gathering",
            when=_gate(g, not_dyn & V["zero_stage"].eq(3) & (D["sample_batches_ceil"] >= D[f"{g}_dp"])),
            explanation="A 3-rank ZeRO-3 actor with 64 batches (22/22/20) stalls at 'forward 20/22'.",
        )
    # ---------------- ours on purpose ------------------------------------------------------------
    rule(
        "openrlhf.advice.whole_train_batches",
        divides(B, D["rollout_samples"]),
        "rollout.batch_size*n_samples_per_prompt = {rollout_batch_size}*{n} = {rollout_samples} is not a "
        "multiple of train.batch_size = {train_batch_size}: the optimizer steps of a rollout do not cover it "
        "evenly (max_steps and the LR schedule assume samples*n//train.batch_size)",
        Stage.ADVICE, "openrlhf/trainer/ppo_trainer.py (max_steps); not validated", severity=Severity.WARNING,
    )
    rule(
        "openrlhf.advice.gpus_idle",
        D["idle_gpus"].eq(0),
        "the placement groups use {gpus_needed} of the cluster's {cluster_num_gpus} GPUs: {idle_gpus} stay idle for "
        "the whole run ({idle_pct}% of the GPUs); more vLLM engines (vllm.num_engines) or a larger actor group "
        "would use them",
        Stage.ADVICE, f"{TRAIN} (placement groups ask Ray for exactly gpus_needed); not validated",
        severity=Severity.WARNING,
    )
    rule(
        "openrlhf.advice.even_actor_samples",
        divides(D["actor_samples_per_rank_unit"], D["rollout_samples"]),
        "{rollout_samples} samples per rollout are not a multiple of rollout.micro_batch_size*actor dp = "
        "{micro_rollout_batch_size}*{actor_dp}: actor ranks train on different numbers of micro batches",
        Stage.ADVICE, f"{LAUNCHER}; not validated", severity=Severity.WARNING, when=not_dyn,
    )
    return r


# The checks only train_ppo_ray.py's launcher makes: its placement groups (openrlhf.ray.*), its colocation checks
# (openrlhf.colocate.*) and its driver's (__main__ / _validate_args) checks, but for the one the non-Ray launcher
# makes too. openrlhf/cli/train_ppo.py (0.4.0.post2 and 0.5.9 ``__main__``) checks only ``assert
# args.n_samples_per_prompt > 1`` for rloo (openrlhf.driver.group_estimator_needs_n) after a plain parse_args(); its
# DeepSpeed configs (openrlhf.deepspeed.*) are the same strategy's, over one world. Off where ``one_world`` holds.
NON_RAY_KEEPS = frozenset({"openrlhf.driver.group_estimator_needs_n", "openrlhf.driver.legacy_flag_names"})


def ray_only(rule_id: str) -> bool:
    """A check train_ppo_ray.py's launcher makes and train_ppo.py's does not (NON_RAY_KEEPS)."""
    return rule_id.startswith(("openrlhf.ray.", "openrlhf.colocate.", "openrlhf.driver.")) and \
        rule_id not in NON_RAY_KEEPS


def gated(rules: Iterable[Rule]) -> list[Rule]:
    """Rules only train_ppo_ray makes (ray_only), off under the non-Ray launcher (the rule variable one_world);
    a rule gated already is kept as it is."""
    return [replace(r, when=r.when & ~V["one_world"])
            if ray_only(r.id) and "one_world" not in variables(r.when) else r for r in rules]


RULES = gated(_rules())

RULESET = RuleSet("openrlhf", VERSION, VARIABLES, DERIVED, RULES)

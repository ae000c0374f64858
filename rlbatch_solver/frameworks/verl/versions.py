"""The verl versions people run: 0.6.1, 0.7.1 and 0.8.0 beside 0.9.1, each a small edit of the one after it.

The 0.9.1 rules (``rules.py``, ``rules_megatron.py``) are written once. A version's pack names only what its
default code path does differently, read from that version's wheel (paths below are inside it):

* **0.8.0** runs the same engine workers as 0.9.1, but its default trainer (``verl/trainer/ppo/ray_trainer.py``
  ``RayPPOTrainer``) does not pad a step to whole mini batches: a train batch that is not a multiple of the mini
  batch fails (``verl/utils/tensordict_utils.py:make_iterator``), the log-prob micro batches divide the unpadded
  batch, and the critic trains with ``critic.ppo_max_token_len_per_gpu`` (values: ``ppo_infer_...``).
* **0.7.1** runs the legacy workers by default (``trainer.use_legacy_worker_impl: auto``:
  ``verl/workers/fsdp_workers.py``, ``megatron_workers.py``): they convert the deprecated global micro batch keys
  themselves, floor the normalized mini batch and check it against the micro batch at worker start ("normalized
  ppo_mini_batch_size ... should be divisible by ppo_micro_batch_size_per_gpu"), split batches with a short last
  piece instead of asserting, run the reference on the actor's layout, and read the critic's Ulysses size from
  ``critic.ulysses_sequence_parallel_size`` (checked against ``use_remove_padding`` at launch).
* **0.6.1** is 0.7.1 with in-process ("sync") rollout by default (``rollout.mode: sync``): vLLM/SGLang check the
  model context against prompt + response and chunked prefill against ``max_model_len`` at worker start; no
  rollout servers (their placement rules need ``rollout.mode=async``); ``use_remove_padding`` off by default.

A pack drops rules (ids), adds or replaces rules (same id: replaced in place), replaces or adds derived
quantities and variables (a changed key or default), rewrites source paths that moved, and names its
version in messages. ``ruleset_for(version, part)`` applies the packs from 0.9.1 down to the version asked,
for the FSDP rules, the Megatron rules, or both (``--framework verl``). Detection from a pasted config
(``detect``): keys that exist only in some versions.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Mapping

from ...rules.base import Derived, Rule, RuleSet, Severity, Stage, VarSpec, is_set
from ...rules.expr import BoolVar, Const, IntVar, Table, divides, exactly_one, if_then_else, maximum
from ...rules.packs import edit_derived, edit_rules, edit_variables, rule_changes
from ...release_numbers import release_numbers
from . import rules as R
from . import rules_megatron as RM

NAME = "verl"  # in messages about a release (base.resolve_release)
NEWEST = R.VERSION
# (version, the pack it edits): the chain 0.9.1 <- 0.8.0 <- 0.7.1 <- 0.6.1 <- 0.2.0 <- 0.1.0, and 0.6.1 <- 0.5.0 <-
# 0.3.0 (0.6.1's code path with those releases' defaults)
VERSIONS = ("0.9.1", "0.8.0", "0.7.1", "0.6.1", "0.5.0", "0.3.0", "0.2.0", "0.1.0")
SERIES = {v.rsplit(".", 1)[0]: v for v in VERSIONS}  # "0.7" -> "0.7.1": a patch we do not list reads its series'
SERIES["0.4"] = "0.5.0"  # 0.4.1's rollout.enforce_eager and actor.entropy_coeff defaults are 0.5.0's (V050)

AR = R.AR
V = {**RM.V, "critic_train_max_tokens": IntVar("critic_train_max_tokens"),
     "enable_chunked_prefill": BoolVar("enable_chunked_prefill")}  # the 0.9.1 variables and the packs' own
# the 0.9.1 derived quantities and the packs' own
D = {**R.D, **{n: IntVar(n) for n in ("critic_local_batch", "legacy_micro", "legacy_critic_micro", "sync_model_len")}}
M = RM.M
N, dp, L = D["N"], D["dp"], D["L"]
dyn, not_dyn = V["actor_dyn"], ~V["actor_dyn"]
critic_on = V["need_critic"]


@dataclass(frozen=True)
class Pack:
    """What one version's default code path does differently from the next newer version's."""

    version: str
    edits: str  # the version this pack edits
    drop: frozenset[str] = frozenset()
    shared: tuple[Rule, ...] = ()  # new or replacing rules, whatever the backend
    fsdp: tuple[Rule, ...] = ()
    megatron: tuple[Rule, ...] = ()
    derived: tuple[Derived, ...] = ()  # new or replacing (same name), after the base's
    variables: tuple[tuple, ...] = ()  # (name, key, kind, default, optional, description): new or replacing
    # the same, where only the Megatron trainer's yaml (ppo_megatron_trainer.yaml) has another default
    megatron_variables: tuple[tuple, ...] = ()
    drop_variables: frozenset[str] = frozenset()
    sources: tuple[tuple[str, str], ...] = ()  # (old, new) substrings of the kept rules' sources
    summary: str = ""


# ---------------------------------------------------------------------------------------------- 0.8.0
TENSORDICT = ("verl/utils/tensordict_utils.py:make_iterator (via verl/workers/engine_workers.py:"
              "TrainingWorker.train_mini_batch)")
# The split placements (rules.async_rules) are modelled for 0.9.1 only: the v1 trainer's separate_async mode is new
# in 0.9, and the fully_async recipe's code changed between releases. Older packs drop their rules and say so.
ASYNC_RULES = frozenset(r.id for r in R.async_rules())
ASYNC_NOT_MODELLED = Rule(
    "verl.advice.async_modelled_for_0_9_only",
    R.MODE.eq(0),
    "placement mode {async_mode} (1 colocate_async, 2 separate_async, 3 the fully_async recipe, 4 one_step_off): we model the "
    "asynchronous placements for the newest verl we follow only; this config's batch rules are checked as a "
    "synchronous run's",
    Stage.ADVICE, "rlbatch-solver: docs/async.md", severity=Severity.WARNING,
)

V080 = Pack(
    "0.8.0", "0.9.1",
    drop=frozenset({"verl.advice.batch_padded"}) | ASYNC_RULES,
    shared=(
        ASYNC_NOT_MODELLED,
        Rule(
            "verl.step.logprob_micro_divides_local_batch",
            divides(V["logprob_micro_per_gpu"], D["local_batch"]),
            "samples per GPU in log-prob = train_batch_size*n//dp = {B_n}//{dp} = {local_batch} is not divisible "
            "by log_prob_micro_batch_size_per_gpu = {logprob_micro_per_gpu}",
            Stage.FIRST_STEP, R.MICRO, when=not_dyn & is_set("logprob_micro_per_gpu") & divides(dp, D["B_n"]),
        ),
        Rule(
            "verl.step.ref_micro_divides_local_batch",
            divides(V["ref_micro_per_gpu"], D["ref_local_batch"]),
            "samples per GPU in ref log-prob = {B_n}//{ref_dp} = {ref_local_batch} is not divisible by "
            "ref.log_prob_micro_batch_size_per_gpu = {ref_micro_per_gpu}",
            Stage.FIRST_STEP, R.MICRO,
            when=V["need_ref"] & ~V["ref_dyn"] & is_set("ref_micro_per_gpu") & divides(D["ref_dp"], D["B_n"]),
        ),
        Rule(
            "verl.step.train_divisible_by_mini",
            divides(maximum(1, D["mini_per_gpu"]), D["local_batch"]),
            "{local_batch} % {mini_per_gpu} != 0: the {local_batch} samples per GPU of a step (train_batch_size = "
            "{train_batch_size} prompts) are not whole mini batches of {mini_per_gpu} (ppo_mini_batch_size = "
            "{actor_mini}); this trainer does not pad the step",
            Stage.FIRST_STEP, f"{TENSORDICT}, from verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._update_actor",
            when=divides(dp, D["mini_n"]) & divides(dp, D["B_n"]),
            explanation="verl 0.9.1's v1 trainer pads such a step to whole mini batches (verl.advice.batch_padded); "
                        "0.8.0's RayPPOTrainer splits it with make_iterator, which asserts.",
        ),
        Rule(
            "verl.step.critic_train_divisible_by_mini",
            divides(maximum(1, D["critic_mini_per_gpu"]), D["critic_local_batch"]),
            "{critic_local_batch} % {critic_mini_per_gpu} != 0: the critic's {critic_local_batch} samples per GPU "
            "are not whole critic mini batches (critic.ppo_mini_batch_size = {critic_mini})",
            Stage.FIRST_STEP, f"{TENSORDICT}, from verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._update_critic",
            when=critic_on & divides(D["critic_dp"], D["critic_mini_n"]) & divides(D["critic_dp"], D["B_n"]),
        ),
        Rule(
            "verl.step.critic_token_budget",
            V["critic_max_tokens"] * D["critic_seq_par"] >= L,
            "critic.ppo_infer_max_token_len_per_gpu*sequence parallel = {critic_max_tokens}*{critic_seq_par} is "
            "below the longest sample {L} (the critic's value pass packs by tokens with this budget)",
            Stage.FIRST_STEP, f"{R.SEQLEN} (budget set in verl/trainer/ppo/ray_trainer.py:RayPPOTrainer.init_workers)",
            when=critic_on,
        ),
        Rule(
            "verl.step.critic_train_token_budget",
            V["critic_train_max_tokens"] * D["critic_seq_par"] >= L,
            "critic.ppo_max_token_len_per_gpu*sequence parallel = {critic_train_max_tokens}*{critic_seq_par} is "
            "below the longest sample {L} (the critic engine trains packed by tokens with this budget)",
            Stage.FIRST_STEP, f"{R.SEQLEN} (budget set in verl/trainer/ppo/ray_trainer.py:RayPPOTrainer.init_workers)",
            when=critic_on,
        ),
    ),
    derived=(
        Derived("local_batch", D["B_n"] // dp, "samples per GPU in log-prob (no padding)"),
        Derived("ref_local_batch", D["B_n"] // D["ref_dp"], "samples per GPU in ref log-prob (no padding)"),
        Derived("critic_local_batch", D["B_n"] // D["critic_dp"], "samples per GPU in the critic update"),
        Derived("waste_permille", Const(0), "no padding: a step that is not whole mini batches fails instead"),
    ),
    variables=(
        ("critic_train_max_tokens", "critic.ppo_max_token_len_per_gpu", "int", 32768, False,
         "critic token budget per GPU for training"),
        ("max_num_seqs", f"{AR}.rollout.max_num_seqs", "int", 1024, False, "rollout concurrency cap"),
    ),
    sources=(("verl/trainer/ppo/v1/trainer_base.py:PPOTrainer._setup",
              "verl/trainer/ppo/ray_trainer.py:RayPPOTrainer.init_workers"),),
    summary="engine workers as 0.9.1; the default RayPPOTrainer does not pad (train % mini must be 0), "
            "log-prob micro batches divide the unpadded batch, the critic trains with ppo_max_token_len_per_gpu",
)

# ---------------------------------------------------------------------------------------------- 0.7.1
FSDP_WORKERS = "verl/workers/fsdp_workers.py"
MEGATRON_WORKERS = "verl/workers/megatron_workers.py"
LEGACY_MICRO = ("normalized ppo_mini_batch_size = ppo_mini_batch_size*n//dp = {mini_n}//{dp} = {mini_per_gpu} "
                "should be divisible by ppo_micro_batch_size_per_gpu {legacy_micro}")
V071 = Pack(
    "0.7.1", "0.8.0",
    drop=frozenset({
        # the legacy workers convert the deprecated global keys themselves (fsdp_workers.py: "normalize ... config")
        "verl.worker.dynamic_bsz_consistent", "verl.worker.actor_micro_per_gpu_required",
        "verl.worker.logprob_micro_per_gpu_required", "verl.step.ref_micro_per_gpu_required",
        # floor division, split with a short last piece (dp_actor.py update_policy / compute_log_prob)
        "verl.step.mini_divisible_by_dp", "verl.step.mini_divisible_by_micro", "verl.step.train_divisible_by_mini",
        "verl.step.logprob_micro_divides_local_batch", "verl.step.ref_micro_divides_local_batch",
        "verl.step.critic_mini_divisible_by_dp", "verl.step.critic_train_divisible_by_mini",
        "verl.step.critic_train_token_budget",
        # the reference runs on the actor's Ulysses mesh and patch (ActorRolloutRefWorker.__init__)
        "verl.fsdp.ref_sp_divides_gpus", "verl.ulysses.ref_heads_divisible", "verl.ulysses.ref_kv_heads",
        # the critic's remove-padding check is the driver's (below); the top-level critic sp key is the one used
        "verl.fsdp.critic_sp_needs_remove_padding", "verl.advice.critic_sp_key_ignored",
        # the reference and critic run on the actor's Megatron layout, silently (megatron_workers.py)
        "verl.megatron.ref_parallel_matches_actor", "verl.megatron.critic_parallel_matches_actor",
    }),
    shared=(
        Rule(
            "verl.advice.short_mini_batch",
            D["padded_prompts"] <= V["train_batch_size"],
            "data.train_batch_size = {train_batch_size} prompts are not whole mini batches (ppo_mini_batch_size = "
            "{actor_mini}, and the critic's when a critic trains): the legacy worker splits each step into mini "
            "batches and the last one (the only one, for fewer prompts than a mini batch) is short, so one policy "
            "update of every step runs on fewer prompts than ppo_mini_batch_size; a train batch that is a multiple "
            "of the mini batch keeps them equal",
            Stage.ADVICE, "verl/workers/actor/dp_actor.py:DataParallelPPOActor.update_policy (data.split("
            "ppo_mini_batch_size): no check)",
            severity=Severity.WARNING,
        ),
        Rule(
            "verl.legacy.logprob_global_micro_covers_dp",
            V["logprob_micro"] >= dp,
            "rollout.log_prob_micro_batch_size = {logprob_micro} is less than dp = {dp}: the worker converts it to "
            "{logprob_micro}//{dp} = 0 per GPU and the first log-prob pass splits by 0 (ValueError: range() arg 3 "
            "must not be zero)",
            Stage.FIRST_STEP, "verl/protocol.py:DataProto.split (via verl/workers/actor/dp_actor.py:"
            "DataParallelPPOActor.compute_log_prob; converted in verl/workers/fsdp_workers.py:"
            "ActorRolloutRefWorker.__init__)",
            when=not_dyn & is_set("logprob_micro") & ~is_set("logprob_micro_per_gpu"),
        ),
        Rule(
            "verl.step.batch_divisible_by_world",
            divides(dp, D["B_n"]),
            "{B_n} % {dp} != 0: train_batch_size*n = {train_batch_size}*{n} samples are not divisible by the "
            "actor's data-parallel size dp = {dp}, over which balance_batch partitions the step",
            Stage.FIRST_STEP, "verl/utils/seqlen_balancing.py:get_seqlen_balanced_partitions (via "
            "verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._balance_batch)",
            when=dyn,
            explanation="With dynamic batch the driver's batch check is skipped (utils/config.py:validate_config).",
        ),
        Rule(
            "verl.vllm.dp_needs_tp_within_node",
            divides(V["rollout_tp"], D["rollout_g"]) | (D["rollout_ws"] <= D["rollout_g"]),
            "rollout.expert_parallel_size = {rollout_ep} > 1 with a replica of TP*DP*PP = {rollout_ws} GPUs spread "
            "over nodes of {rollout_g} rollout GPUs: {rollout_g} is not divisible by rollout TP = {rollout_tp} "
            "(gpus_per_node should be divisible by tensor_model_parallel_size)",
            Stage.WORKER_INIT, f"{R.VLLM}.launch_server", when=(V["rollout_ep"] > 1) & ~V["rollout_sglang"],
        ),
        Rule(
            "verl.vllm.prompt_fits_model_len",
            V["max_model_len"] >= V["max_prompt_length"],
            "a {max_prompt_length}-token prompt exceeds rollout.max_model_len = {max_model_len} (Prompt length "
            "exceeds the model's maximum context length)",
            Stage.FIRST_STEP, f"{R.VLLM}.generate, {R.SGLANG}:SGLangHttpServer.generate", when=is_set("max_model_len"),
        ),
        Rule(
            "verl.step.critic_token_budget",
            V["critic_train_max_tokens"] * D["critic_seq_par"] >= L,
            "critic.ppo_max_token_len_per_gpu*sequence parallel = {critic_train_max_tokens}*{critic_seq_par} is "
            "below the longest sample {L} (the critic's dynamic batch, critic.use_dynamic_bsz)",
            Stage.FIRST_STEP, f"{R.SEQLEN} (via verl/workers/critic/dp_critic.py:DataParallelPPOCritic.update_critic)",
            when=critic_on & V["critic_dyn"],
        ),
    ),
    fsdp=(
        Rule(
            "verl.critic.sp_needs_remove_padding",
            V["critic_remove_padding"],
            "critic.ulysses_sequence_parallel_size = {critic_sp} > 1 needs critic.model.use_remove_padding=True (it "
            "is {critic_remove_padding}): \"When using sequence parallelism for critic, you must enable "
            "`use_remove_padding`.\"",
            Stage.DRIVER, f"{R.CRITIC_CFG}:FSDPCriticConfig.__post_init__", when=critic_on & (V["critic_sp"] > 1),
        ),
        Rule(
            "verl.critic.global_micro_covers_gpus",
            V["critic_micro"] * V["critic_sp"] >= N,
            "critic.ppo_micro_batch_size*ulysses_sp = {critic_micro}*{critic_sp} is less than the {N} GPUs",
            Stage.DRIVER, f"{R.CRITIC_CFG}:FSDPCriticConfig.validate",
            when=critic_on & ~V["critic_dyn"] & is_set("critic_micro"),
        ),
        Rule(
            "verl.legacy.actor_mini_positive",
            D["mini_per_gpu"] >= 1,
            "ppo_mini_batch_size*n//dp = {mini_n}//{dp} = {mini_per_gpu}: ppo_mini_batch_size should be larger "
            "than 0 after normalization",
            Stage.WORKER_INIT, f"{FSDP_WORKERS}:ActorRolloutRefWorker.__init__",
        ),
        Rule(
            "verl.legacy.mini_divisible_by_micro",
            divides(D["legacy_micro"], D["mini_per_gpu"]),
            LEGACY_MICRO,
            Stage.WORKER_INIT, f"{FSDP_WORKERS}:ActorRolloutRefWorker.__init__",
            when=(is_set("actor_micro_per_gpu") | is_set("actor_micro")) & (D["mini_per_gpu"] >= 1),
            explanation="Each GPU trains its share of a mini batch, ppo_mini_batch_size*n // dp samples, in micro "
                        "batches of ppo_micro_batch_size_per_gpu (a deprecated global ppo_micro_batch_size is first "
                        "divided by dp, rounding down); the share must be a whole number of micro batches. These "
                        "releases check it even with dynamic batching on.",
        ),
        Rule(
            "verl.legacy.critic_mini_divisible_by_micro",
            divides(D["legacy_critic_micro"], D["critic_mini_per_gpu"]),
            "critic: normalized ppo_mini_batch_size = critic.ppo_mini_batch_size*n//dp = {critic_mini_n}//"
            "{critic_dp} = {critic_mini_per_gpu} should be divisible by ppo_micro_batch_size_per_gpu "
            "{legacy_critic_micro}",
            Stage.WORKER_INIT, f"{FSDP_WORKERS}:CriticWorker.__init__",
            when=critic_on & (is_set("critic_micro_per_gpu") | is_set("critic_micro")) & (D["critic_mini_per_gpu"] >= 1),
        ),
    ),
    megatron=(
        Rule(
            "verl.legacy.megatron_ref_micro_required",
            is_set("ref_micro") | is_set("ref_micro_per_gpu"),
            "the reference model runs: Please note that in the ref policy configuration, "
            "`log_prob_micro_batch_size_per_gpu` and `log_prob_micro_batch_size` should not be None at the same time.",
            Stage.WORKER_INIT, f"{MEGATRON_WORKERS}:ActorRolloutRefWorker.__init__", when=V["need_ref"],
        ),
        Rule(
            "verl.legacy.megatron_local_divisible_by_mini",
            divides(maximum(1, D["mini_per_gpu"]), D["local_batch"]),
            "{local_batch} % {mini_per_gpu} != 0: the {local_batch} samples per GPU (train_batch_size = "
            "{train_batch_size} prompts) are not whole normalized mini batches of {mini_per_gpu} "
            "(ppo_mini_batch_size*n//dp = {mini_n}//{dp})",
            Stage.FIRST_STEP, "verl/protocol.py:DataProto.make_iterator (via verl/workers/actor/megatron_actor.py:"
            "MegatronPPOActor.make_minibatch_iterator)",
            when=(D["mini_per_gpu"] >= 1) & divides(dp, D["B_n"]),
        ),
    ),
    derived=(
        # fix and recommend count the short last mini batch as they count 0.9.1's padding (solver/costs.py)
        Derived("waste_permille", Table("waste_permille", (V["train_batch_size"], V["actor_mini"], V["critic_mini"],
                                                            V["need_critic"]), R.padding_permille),
                "prompts missing from the short last mini batch, per 1000 of the step rounded up to whole mini batches"),
        Derived("legacy_micro", if_then_else(is_set("actor_micro_per_gpu"), V["actor_micro_per_gpu"],
                                             maximum(1, V["actor_micro"] // dp)),
                "actor micro batch per GPU after the legacy worker converts a global ppo_micro_batch_size (//dp)"),
        Derived("legacy_critic_micro", if_then_else(is_set("critic_micro"), maximum(1, V["critic_micro"] // D["critic_dp"]),
                                                    V["critic_micro_per_gpu"]),
                "critic micro batch per GPU after the legacy worker converts a global ppo_micro_batch_size (//dp)"),
    ),
    variables=(
        ("critic_sp", "critic.ulysses_sequence_parallel_size", "int", 1, False,
         "critic Ulysses sequence parallel (the key the legacy critic worker reads)"),
        ("critic_param_offload", "critic.model.fsdp_config.param_offload", "bool", False, False, "critic params on CPU"),
        ("critic_optimizer_offload", "critic.model.fsdp_config.optimizer_offload", "bool", False, False,
         "critic optimizer on CPU"),
        ("critic_remove_padding", "critic.model.use_remove_padding", "bool", False, False, "critic sequence packing"),
    ),
    drop_variables=frozenset({"critic_cfg_sp"}),
    sources=(
        (R.INIT_MODEL, f"{FSDP_WORKERS}:ActorRolloutRefWorker._build_rollout (megatron_workers.py on Megatron)"),
        (f"{R.FSDP_ENGINE}._init_device_mesh", f"{FSDP_WORKERS}:ActorRolloutRefWorker.__init__ / CriticWorker.__init__"),
        ("verl/workers/engine/fsdp/utils.py:create_device_mesh", f"{FSDP_WORKERS}:create_device_mesh"),
        ("first built in verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model",
         f"first built in {FSDP_WORKERS}:ActorRolloutRefWorker._build_rollout"),
        ("verl/workers/rollout/llm_server.py:LLMServerManager after the workers",
         "verl/experimental/agent_loop/agent_loop.py:AgentLoopManager._initialize_llm_servers"),
        (f"{R.VLLM}._validate_configs", f"{R.VLLM}.__init__"),
        (RM.VIA_ENGINE, f"(via {MEGATRON_WORKERS}:ActorRolloutRefWorker.__init__)"),
        (RM.VIA_BRIDGE, f"(via {MEGATRON_WORKERS}:MegatronWorker._init_hf_config_and_tf_config)"),
        (f"{RM.MEGATRON_ENGINE}.forward_backward_batch",
         "megatron/core/pipeline_parallel/schedules.py:forward_backward_pipelining_with_interleaving (via "
         "verl/workers/actor/megatron_actor.py:MegatronPPOActor.forward_backward_batch)"),
    ),
    summary="legacy workers by default (trainer.use_legacy_worker_impl: auto): deprecated global micro keys "
            "converted, the normalized mini batch floored and checked against the micro batch at worker start, "
            "short last mini/micro batches allowed, the reference on the actor's layout, the critic's Ulysses size "
            "from critic.ulysses_sequence_parallel_size (remove padding checked at launch)",
)

# ---------------------------------------------------------------------------------------------- 0.6.1
SYNC_VLLM = "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:vLLMRollout.__init__"
WORLD_BALANCE = ("{B_n} % {N} != 0: train_batch_size*n = {train_batch_size}*{n} samples are not divisible by the "
                 "{N} GPUs of the actor's worker group, over which balance_batch partitions the step")
WORLD_BALANCE_SOURCE = ("verl/utils/seqlen_balancing.py:get_seqlen_balanced_partitions (via "
                        "verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._balance_batch, k_partitions = world size)")
V061 = Pack(
    "0.6.1", "0.7.1",
    drop=frozenset({"verl.rollout.sync_mode_removed"}),
    shared=(
        Rule(
            "verl.rollout.replica_fits_nodes",
            divides(D["rollout_g"], D["rollout_ws"]) | (D["rollout_ws"] <= D["rollout_g"]),
            "a rollout replica spans TP*DP*PP = {rollout_ws} GPUs, more than the {rollout_g} GPUs per node and not a "
            "multiple of them",
            Stage.WORKER_INIT, "verl/workers/rollout/replica.py:RolloutReplica.__init__ (async mode only; built by "
            "verl/experimental/agent_loop/agent_loop.py:AgentLoopManager._initialize_llm_servers)",
            when=~V["rollout_sync"],
        ),
        Rule(
            "verl.vllm.dp_needs_tp_within_node",
            divides(V["rollout_tp"], D["rollout_g"]) | (D["rollout_ws"] <= D["rollout_g"]),
            "rollout.expert_parallel_size = {rollout_ep} > 1 with a replica of TP*DP*PP = {rollout_ws} GPUs spread "
            "over nodes of {rollout_g} GPUs: {rollout_g} is not divisible by rollout TP = {rollout_tp}",
            Stage.WORKER_INIT, f"{R.VLLM}Base.launch_server (async mode only)",
            when=~V["rollout_sync"] & (V["rollout_ep"] > 1) & ~V["rollout_sglang"],
        ),
        Rule(
            "verl.vllm.model_len_le_positions",
            V["max_model_len"] <= V["max_position_embeddings"],
            "rollout.max_model_len = {max_model_len} exceeds the model's max_position_embeddings = "
            "{max_position_embeddings} (vLLM's own engine-argument check; verl 0.6.1 passes the value through)",
            Stage.WORKER_INIT, f"vLLM EngineArgs (via {SYNC_VLLM})", when=is_set("max_model_len") & V["rollout_sync"],
        ),
        Rule(
            "verl.vllm.context_covers_prompt_response",
            V["max_position_embeddings"] >= L,
            "model context length should be greater than total sequence length: max_position_embeddings = "
            "{max_position_embeddings} < max_prompt_length + max_response_length = {L}",
            Stage.WORKER_INIT, f"{SYNC_VLLM}; verl/workers/rollout/sglang_rollout/sglang_rollout.py:"
            "SGLangRollout._verify_config",
            when=V["rollout_sync"],
            explanation="In sync mode verl 0.6.1 compares the model's context (times a rope_scaling factor, when the "
                        "HF config has one) with prompt + response, whatever rollout.max_model_len says.",
        ),
        Rule(
            "verl.vllm.chunked_prefill_batched_tokens",
            V["max_num_batched_tokens"] >= D["sync_model_len"],
            "rollout.max_num_batched_tokens = {max_num_batched_tokens} is smaller than max_model_len = "
            "{sync_model_len}: \"Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len, "
            "please increase max_num_batched_tokens or disable chunked prefill\"",
            Stage.WORKER_INIT, SYNC_VLLM,
            when=V["rollout_sync"] & ~V["rollout_sglang"] & V["enable_chunked_prefill"],
        ),
        Rule(
            "verl.step.batch_divisible_by_world",
            divides(N, D["B_n"]),
            WORLD_BALANCE, Stage.FIRST_STEP, WORLD_BALANCE_SOURCE, when=dyn,
            explanation="With dynamic batch the driver's batch check is skipped (utils/config.py:validate_config).",
        ),
    ),
    megatron=(
        Rule(
            "verl.legacy.megatron_batch_divisible_by_world",
            divides(N, D["B_n"]),
            WORLD_BALANCE, Stage.FIRST_STEP, WORLD_BALANCE_SOURCE, when=not_dyn,
            explanation="Megatron's driver check asks only dp * micro to divide the batch; balance_batch partitions "
                        "it over every GPU of the worker group.",
        ),
    ),
    derived=(
        Derived("sync_model_len", if_then_else(is_set("max_model_len"), V["max_model_len"], L),
                "in-process vLLM's max_model_len (unset: prompt + response)"),
    ),
    variables=(
        ("rollout_sync", f"{AR}.rollout.mode", "bool", True, False, "in-process (sync) rollout: rollout.mode=sync"),
        ("remove_padding", f"{AR}.model.use_remove_padding", "bool", False, False, "sequence packing"),
        ("enable_chunked_prefill", f"{AR}.rollout.enable_chunked_prefill", "bool", True, False,
         "vLLM chunked prefill"),
    ),
    sources=((f"{R.VLLM}.generate", "vLLM (in-process in sync mode)"),),
    summary="0.7.1 with in-process (sync) vLLM/SGLang rollout by default: the model context against prompt + "
            "response and chunked prefill against max_model_len at worker start; rollout servers only with "
            "rollout.mode=async; use_remove_padding off by default; balance_batch over all GPUs",
)

# ---------------------------------------------------------------------------------------------- 0.2.0
# verl 0.2.0.post2 (the base of TinyZero, Search-R1, Logic-RL, PRIME, SimpleRL): one trainer, the driver's checks in
# verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._validate_config, the workers normalize in verl/workers/fsdp_workers.py.
RAY_VALIDATE = "verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._validate_config"
# 0.6's config dataclasses (verl/workers/config/*.py) and verl/utils/config.py:validate_config hold checks that verl
# 0.5.0 and older make in the driver, RayPPOTrainer._validate_config (its nested check_mutually_exclusive for the
# micro batch keys)
RAY_VALIDATE_SOURCES = (
    ("verl/workers/config/actor.py:ActorConfig.__post_init__", f"{RAY_VALIDATE} (check_mutually_exclusive)"),
    ("verl/workers/config/actor.py:ActorConfig.validate", RAY_VALIDATE),
    ("verl/workers/config/actor.py:FSDPActorConfig.validate", RAY_VALIDATE),
    ("verl/utils/config.py:validate_config (check_mutually_exclusive)", f"{RAY_VALIDATE} (check_mutually_exclusive)"),
    ("verl/workers/config/critic.py:CriticConfig.__post_init__", RAY_VALIDATE),
    ("verl/workers/config/critic.py:FSDPCriticConfig.validate", RAY_VALIDATE),
    ("verl/workers/config/critic.py:FSDPCriticConfig.__post_init__", RAY_VALIDATE),
)
V02_ROLLOUT = "verl/workers/rollout/vllm_rollout/vllm_rollout.py:vLLMRollout.__init__"


def driver_batch(message: str, release: str) -> Rule:
    """RayPPOTrainer._validate_config's first check up to 0.5.0: train_batch_size*rollout.n against the GPUs, dynamic
    batch or not (0.6's validate_config: only without it)."""
    return Rule("verl.driver.batch_divisible_by_gpus", divides(N, D["B_n"]), message, Stage.DRIVER, RAY_VALIDATE,
                explanation=f"verl {release} asserts this before anything else, dynamic batch or not.")
# the Megatron driver check real_train_batch_size % (megatron_dp * actor.ppo_micro_batch_size_per_gpu) first appears
# in verl 0.4 (v0.4.1 verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._validate_config, minimal_bsz); 0.2 and 0.3.0.post1
# check train*n against the GPUs only, and their megatron_workers.py ActorRolloutRefWorker.__init__ converts a global
# actor.ppo_micro_batch_size into the per-GPU key (//= the data-parallel size), so it needs no per-GPU key
NO_MEGATRON_MINIMAL_BSZ = ("verl.megatron.driver_micro_per_gpu_required", "verl.megatron.driver_batch_divisible")
# memory features whose keys came in 0.4.1 (verl/trainer/config/ppo_trainer.yaml actor.entropy_from_logits_with_chunking
# and actor.entropy_checkpointing, read by verl/workers/actor/dp_actor.py:DataParallelPPOActor.__init__ and _forward_micro_batch;
# neither is in the 0.2.0.post2 or 0.3.0.post1 yaml): an older release neither has them to set nor prices them
# model.use_fused_kernels came in 0.4.0 and model.fused_kernel_options in 0.4.1 (the 0.4 series is judged by the 0.5.0
# pack; neither key is in the 0.3.0.post1 yaml): not priced before
BEFORE_0_4_1_MEMORY = frozenset({"entropy_chunking", "entropy_checkpointing", "use_fused_kernels",
                                 "fused_kernels_triton"})
V020 = Pack(
    "0.2.0", "0.6.1",
    drop=frozenset({
        # no mini <= train check: update_policy splits the batch by the mini batch (verl/workers/actor/dp_actor.py)
        "verl.actor.mini_le_train", "verl.critic.mini_le_train",
        # the driver checks train*n against the GPUs with or without dynamic batch (verl.driver.batch_divisible_by_gpus)
        "verl.step.batch_divisible_by_world",
        # keys 0.2's trainer config does not have (rollout expert/data/pipeline parallel, rollout.max_model_len,
        # rollout.mode and its servers): their defaults are all 0.2 runs
        "verl.rollout.ep_equals_tp_dp", "verl.rollout.pp_unsupported", "verl.rollout.replica_fits_nodes",
        "verl.vllm.dp_needs_tp_within_node", "verl.vllm.model_len_le_positions", "verl.vllm.prompt_fits_model_len",
        "verl.advice.async_modelled_for_0_9_only",
        *NO_MEGATRON_MINIMAL_BSZ,
    }),
    shared=(
        Rule(
            "verl.vllm.free_cache_needs_eager",
            ~V["free_cache_engine"] | V["enforce_eager"] | V["rollout_sglang"],
            "rollout.free_cache_engine=True with rollout.enforce_eager=False: \"disable CUDA graph (enforce_eager = "
            "False) if free cache engine\"",
            Stage.WORKER_INIT, V02_ROLLOUT,
        ),
        Rule(
            "verl.vllm.chunked_prefill_batched_tokens",
            V["max_num_batched_tokens"] >= L,
            "rollout.max_num_batched_tokens = {max_num_batched_tokens} is smaller than max_model_len = prompt + "
            "response = {L} with chunked prefill off (vLLM: \"max_num_batched_tokens ... is smaller than "
            "max_model_len\")",
            Stage.WORKER_INIT, f"vLLM 0.6.3 vllm/config.py:SchedulerConfig._verify_args (via {V02_ROLLOUT}, "
            "max_model_len = prompt_length + response_length)",
            when=~V["rollout_sglang"] & ~V["enable_chunked_prefill"],
            explanation="verl 0.2 passes max_model_len = prompt + response to its vLLM; vLLM refuses a token budget "
                        "below it unless chunked prefill is on.",
        ),
        Rule(
            "verl.critic.micro_exactly_one",
            exactly_one(is_set("critic_micro"), is_set("critic_micro_per_gpu")),
            "the algorithm trains a critic: set one of critic.ppo_micro_batch_size_per_gpu or the deprecated "
            "critic.ppo_micro_batch_size, and only one (now ppo_micro_batch_size_per_gpu = {critic_micro_per_gpu}, "
            "ppo_micro_batch_size = {critic_micro}; verl 0.2's critic yaml leaves the per-GPU key null, and its driver "
            "refuses neither set, \"Please set at least one of ...\", and both, \"You have set both ...\")",
            Stage.DRIVER, f"{RAY_VALIDATE} (check_mutually_exclusive)", when=critic_on & ~V["critic_dyn"],
        ),
    ),
    fsdp=(
        driver_batch("real_train_batch_size ({B_n}) must be divisible by total n_gpus ({N}): train_batch_size*rollout.n "
                     "= {train_batch_size}*{n}", "0.2"),
    ),
    derived=(
        # the critic worker divides the critic mini batch by the GPUs without multiplying it by rollout.n
        Derived("critic_mini_n", V["critic_mini"],
                "samples per critic mini batch before the worker divides it (verl 0.2: not multiplied by rollout.n, "
                "verl/workers/fsdp_workers.py:CriticWorker.__init__)"),
    ),
    variables=(
        ("enforce_eager", f"{AR}.rollout.enforce_eager", "bool", True, False, "no CUDA graphs in rollout"),
    ),
    drop_variables=BEFORE_0_4_1_MEMORY,
    sources=(*RAY_VALIDATE_SOURCES, (SYNC_VLLM, V02_ROLLOUT)),
    summary="0.6.1's legacy path with verl 0.2's own driver checks (train*n divisible by the GPUs always; no "
            "mini <= train check), critic.ppo_micro_batch_size accepted alone (no yaml copy into the per-GPU key), "
            "the critic mini batch not multiplied by rollout.n, free_cache_engine needing enforce_eager (default "
            "True), and its bundled vLLM: KV cache from free memory, weights dropped after each rollout (the Megatron "
            "backend's rules are 0.6.1's less the driver's minimal-batch check of 0.4: not re-read from 0.2)",
)

# ---------------------------------------------------------------------------------------------- 0.1.0
# verl 0.1 (the PyPI release) and the verl of January 2025 that TinyZero, Search-R1, Logic-RL and PRIME forked (their
# verl/version/version reads 0.1): 0.2's code path with 0.1's yaml defaults. verl 0.1's ppo_trainer.yaml (and the
# forks', e.g. TinyZero verl/trainer/config/ppo_trainer.yaml) has actor_rollout_ref.model.enable_gradient_checkpointing
# and critic.model.enable_gradient_checkpointing False (0.2.0.post2's: True). Its memory differs too (cost.py
# REF_ON_GPU): the reference's FSDP module has no CPUOffload.
V010 = Pack(
    "0.1.0", "0.2.0",
    variables=(
        ("grad_ckpt", f"{AR}.model.enable_gradient_checkpointing", "bool", False, False,
         "activation recompute (verl 0.1: off by default)"),
        ("critic_grad_ckpt", "critic.model.enable_gradient_checkpointing", "bool", False, False,
         "critic recompute (verl 0.1: off by default)"),
    ),
    summary="0.2.0's rules (not re-read from 0.1) with verl 0.1's defaults: gradient checkpointing off for the actor "
            "and the critic, and a reference model kept on the GPU unless ref.fsdp_config.param_offload (0.2 forces "
            "CPU offload on it)",
)

# ---------------------------------------------------------------------------------------------- 0.5.0, 0.3.0
# verl 0.3-0.5: 0.6.1's rules (not re-read from these releases) with their defaults where the memory model reads them.
# rollout.enforce_eager defaulted True up to 0.5.0 (0.3.0.post1 and 0.4.1 verl/trainer/config/ppo_trainer.yaml,
# 0.5.0 verl/trainer/config/rollout/rollout.yaml): vLLM captured no CUDA graphs. It became False with verl PR #2956
# (2025-08-08), first released in 0.6.0.
# The Megatron trainer's yaml turned vLLM's chunked prefill off up to 0.5.0 (0.3.0.post1 and 0.4.1
# verl/trainer/config/ppo_megatron_trainer.yaml actor_rollout_ref.rollout.enable_chunked_prefill: False; 0.5.0's
# ppo_megatron_trainer.yaml overrides rollout/rollout.yaml's True with False), while ppo_trainer.yaml (FSDP) had True;
# 0.6.1 reads rollout/rollout.yaml (True) for both. vLLMRollout.__init__ (vllm_rollout_spmd.py) refuses
# max_num_batched_tokens < max_model_len only with chunked prefill on, so a long-context 0.3-0.5 Megatron run needs no
# larger token budget.
# The rules' sources are where 0.5.0's wheel holds each check (0.4.1's the same): the driver's in
# RayPPOTrainer._validate_config (RAY_VALIDATE_SOURCES, with the Megatron checks and the critic's mini <= train),
# the Megatron TransformerConfig built in MegatronWorker._init_hf_config_and_tf_config of
# verl/single_controller/base/megatron/worker.py, async mode's servers in AgentLoopManager (one per rollout TP group,
# placed on its first worker's node, no replica of its own). The rollout's expert, data and pipeline parallel sizes
# are no keys of 0.3-0.5's trainer config (rollout.yaml, ppo_trainer.yaml): 0.6.1's rules on them have nothing to
# check, nor the RolloutReplica placement that reads them.
V050_SOURCES = (
    *RAY_VALIDATE_SOURCES,
    ("verl/utils/config.py:validate_config", RAY_VALIDATE),
    ("verl/workers/config/critic.py:CriticConfig.validate", RAY_VALIDATE),
    ("verl/workers/megatron_workers.py:MegatronWorker._init_hf_config_and_tf_config",
     "verl/single_controller/base/megatron/worker.py:MegatronWorker._init_hf_config_and_tf_config"),
    ("verl/workers/rollout/sglang_rollout/async_sglang_server.py:SGLangHttpServer.generate",
     "SGLang (in-process; async mode: verl/workers/rollout/sglang_rollout/async_sglang_server.py:"
     "AsyncSGLangServer.generate hands the prompt to it)"),
)
# 0.4.1 and 0.5.0's _validate_config checks the step's batch first, whatever use_dynamic_bsz: against the GPUs, or on
# Megatron against dp * actor.ppo_micro_batch_size_per_gpu (a None there is a TypeError, dynamic batch or not)
V050_MP_OK = divides(M["mp"], N)
V050_DRIVER_FSDP = (
    driver_batch("real_train_batch_size = train_batch_size*rollout.n = {train_batch_size}*{n} = {B_n} is not "
                 "divisible by the minimal possible batch size, n_gpus = {N} (checked with dynamic batch too)", "0.4-0.5"),
)
V050_DRIVER_MEGATRON = (
    Rule(
        "verl.megatron.driver_micro_per_gpu_required",
        is_set("actor_micro_per_gpu"),
        "actor.ppo_micro_batch_size_per_gpu = {actor_micro_per_gpu}: the Megatron driver check multiplies dp by it, "
        "dynamic batch or not (a None here is a TypeError; the deprecated ppo_micro_batch_size = {actor_micro} is not "
        "used)",
        Stage.DRIVER, RAY_VALIDATE,
    ),
    Rule(
        "verl.megatron.driver_gpus_divisible_by_model_parallel",
        V050_MP_OK,
        "n_gpus = {N} is not divisible by actor TP*PP*CP = {tp}*{pp}*{cp} = {mp}",
        Stage.DRIVER, RAY_VALIDATE,
    ),
    Rule(
        "verl.megatron.driver_batch_divisible",
        divides(M["min_bsz"], D["B_n"]),
        "real_train_batch_size = train_batch_size*rollout.n = {train_batch_size}*{n} = {B_n} is not divisible by the "
        "minimal possible batch size, Megatron dp*ppo_micro_batch_size_per_gpu = {dp}*{actor_micro_per_gpu} = "
        "{min_bsz}",
        Stage.DRIVER, RAY_VALIDATE, when=is_set("actor_micro_per_gpu") & V050_MP_OK,
        explanation="dp = N/(TP*PP*CP); each data-parallel rank must get whole micro batches.",
    ),
)
V050 = Pack(
    "0.5.0", "0.6.1",
    drop=frozenset({"verl.rollout.ep_equals_tp_dp", "verl.rollout.pp_unsupported", "verl.rollout.replica_fits_nodes",
                    "verl.vllm.dp_needs_tp_within_node"}),
    fsdp=V050_DRIVER_FSDP,
    megatron=V050_DRIVER_MEGATRON,
    sources=V050_SOURCES,
    variables=(
        ("enforce_eager", f"{AR}.rollout.enforce_eager", "bool", True, False,
         "no CUDA graphs in rollout (verl 0.5 and older: on by default)"),
    ),
    megatron_variables=(
        ("enable_chunked_prefill", f"{AR}.rollout.enable_chunked_prefill", "bool", False, False,
         "vLLM chunked prefill (verl 0.5 and older, Megatron trainer: off by default)"),
    ),
    summary="0.6.1's rules with the defaults of verl 0.4 and 0.5: rollout.enforce_eager True (no CUDA graphs "
            "captured); with the Megatron trainer, rollout.enable_chunked_prefill False. Re-read from 0.5.0: the "
            "driver's checks are RayPPOTrainer._validate_config's, the step's batch checked dynamic batch or not (on "
            "Megatron against dp * ppo_micro_batch_size_per_gpu, which must be set); no rollout expert, data or "
            "pipeline parallel keys, so none of 0.6.1's rules on them",
)
# verl 0.3 computes the entropy in every actor update whatever actor.entropy_coeff (cost.py ENTROPY_ALWAYS, with the
# sources); 0.4 only for a coefficient other than 0 (fsdp.entropy_in_loss)
# 0.3.0.post1's wheel: no async mode (AgentLoopManager came in 0.4); the Megatron TransformerConfig built by
# verl/utils/megatron_utils.py:convert_config in the model classes (verl/models/llama, qwen2 megatron) that
# ActorRolloutRefWorker._build_model_optimizer makes; SGLang's context check in SGLangRollout.__init__; the log-prob
# micro batches split by tensordict (DataParallelPPOActor.compute_log_prob: batch.split), not DataProto.split.
# Its driver (RayPPOTrainer._validate_config) checks train_batch_size*rollout.n against the GPUs on both backends,
# dynamic batch or not, and has no Megatron check of its own (dp * micro came in 0.4).
V030_BATCH = driver_batch("real_train_batch_size = train_batch_size*rollout.n = {train_batch_size}*{n} = {B_n} must be "
                          "divisible by total n_gpus = {N} (checked with dynamic batch too, on either backend)", "0.3")
V030 = Pack(
    "0.3.0", "0.5.0",
    drop=frozenset({"verl.megatron.driver_micro_per_gpu_required", "verl.megatron.driver_gpus_divisible_by_model_parallel",
                    "verl.megatron.driver_batch_divisible", V030_BATCH.id,  # the FSDP-only one: shared here
                    "verl.step.batch_divisible_by_world"}),  # its dynamic-batch case: the driver's, as in 0.2
    shared=(V030_BATCH,),
    drop_variables=BEFORE_0_4_1_MEMORY,
    sources=(
        ("verl/single_controller/base/megatron/worker.py:MegatronWorker._init_hf_config_and_tf_config",
         "verl/utils/megatron_utils.py:convert_config, in the model classes of verl/models/*/megatron built by "
         "verl/workers/megatron_workers.py:ActorRolloutRefWorker._build_model_optimizer"),
        ("; async mode: verl/workers/rollout/sglang_rollout/async_sglang_server.py:AsyncSGLangServer.generate hands "
         "the prompt to it", ""),
        ("sglang_rollout.py:SGLangRollout._verify_config", "sglang_rollout.py:SGLangRollout.__init__"),
        ("verl/protocol.py:DataProto.split (via verl/workers/actor/dp_actor.py:DataParallelPPOActor.compute_log_prob",
         "tensordict TensorDict.split (via verl/workers/actor/dp_actor.py:DataParallelPPOActor.compute_log_prob"),
    ),
    summary="0.5.0's (0.6.1's rules with rollout.enforce_eager True) with verl 0.3's actor update, which computes the "
            "entropy (and keeps its graph) whatever actor.entropy_coeff, and its driver: train_batch_size*rollout.n "
            "divisible by the GPUs on either backend, dynamic batch or not, and no Megatron driver checks",
)

PACKS = {p.version: p for p in (V080, V071, V061, V050, V030, V020, V010)}
# versions whose Megatron trainer config (verl/trainer/config/ppo_megatron_trainer.yaml) composes ppo_trainer with
# "override model_engine: megatron" in its defaults list, so a model_engine=megatron override is accepted beside
# --config-name=ppo_megatron_trainer.yaml: 0.8.0 and 0.9.1. 0.7.1's file lists megatron_actor and the other groups
# itself, without model_engine (Hydra: "Could not override 'model_engine'. No match in the defaults list"); 0.6.1 and
# older have no model_engine group at all ("Key 'model_engine' is not in struct")
MODEL_ENGINE_IN_MEGATRON_CONFIG = frozenset({"0.8.0", "0.9.1"})
# The config groups each release's trainer config lets an override pick (the "defaults:" list of its
# verl/trainer/config/ppo_trainer.yaml and ppo_megatron_trainer.yaml, wheels from PyPI): the override key of each
# entry whose package is not the group's own (hydra/core/default_element.py GroupDefault.get_override_key: group@package;
# data@data, critic@critic, reward@reward are overridden by the group's name alone, a plain key). 0.1-0.3 have no
# defaults list: Hydra refuses any group override there ("Could not override '<key>'. No match in the defaults list.",
# hydra/_internal/defaults_list.py). 0.8.0 on: ppo_megatron_trainer.yaml is ppo_trainer's list with
# "override model_engine: megatron".
_ROLES_050 = ("actor@actor_rollout_ref.actor", "ref@actor_rollout_ref.ref", "rollout@actor_rollout_ref.rollout")
_MODEL = "model@actor_rollout_ref.model"
_ROLLOUT_CORRECTION = "algorithm@algorithm.rollout_correction"
DEFAULTS_GROUP_KEYS: dict[str, frozenset[str]] = {
    "0.1.0": frozenset(), "0.2.0": frozenset(), "0.3.0": frozenset(),
    "0.5.0": frozenset({*_ROLES_050, "npu_profile@trainer.npu_profile"}),
    "0.6.1": frozenset({*_ROLES_050, _MODEL, _ROLLOUT_CORRECTION}),
    "0.7.1": frozenset({*_ROLES_050, _MODEL, _ROLLOUT_CORRECTION}),
    "0.8.0": frozenset({*_ROLES_050, _MODEL, "model@critic.model", _ROLLOUT_CORRECTION}),
    "0.9.0": frozenset({*_ROLES_050, _MODEL, "model@critic.model", _ROLLOUT_CORRECTION}),
    "0.9.1": frozenset({*_ROLES_050, _MODEL, "model@critic.model", _ROLLOUT_CORRECTION}),
}
# each release's model_engine options (verl/trainer/config/model_engine/*.yaml of its wheel; no folder up to 0.6.1:
# "Key 'model_engine' is not in struct") and the engines of its actor, ref and critic groups (actor/<engine>_actor.yaml,
# ref/<engine>_ref.yaml, critic/<engine>_critic.yaml: the same engines in each, from 0.5.0)
MODEL_ENGINES: dict[str, tuple[str, ...]] = {
    "0.7.1": ("dp", "torchtitan", "veomni"),
    "0.8.0": ("dp", "megatron", "mindspeed", "torchtitan", "veomni"),
    "0.9.0": ("dp", "megatron", "mindspeed", "torchtitan", "veomni"),
    "0.9.1": ("dp", "megatron", "torchtitan", "veomni"),
}
ROLE_ENGINES: dict[str, tuple[str, ...]] = {
    "0.5.0": ("dp", "megatron"), "0.6.1": ("dp", "megatron"),
    "0.7.1": ("dp", "megatron", "torchtitan", "veomni"),
    "0.8.0": ("dp", "megatron", "mindspeed", "torchtitan", "veomni"),
    "0.9.0": ("dp", "megatron", "mindspeed", "torchtitan", "veomni"),
    "0.9.1": ("dp", "megatron", "torchtitan", "veomni"),
}
# versions whose trainer always runs a reference policy: verl 0.2's main_ppo maps Role.RefPolicy unconditionally and
# RayPPOTrainer.__init__ sets use_reference_policy = Role.RefPolicy in role_worker_mapping (verl 0.2.0.post2
# verl/trainer/main_ppo.py main_task, verl/trainer/ppo/ray_trainer.py); later releases build it only for a KL term
ALWAYS_REFERENCE = frozenset({"0.2.0", "0.1.0"})
# releases whose trainer config has no per-GPU micro batch keys, only the global ones the workers divide by the
# data-parallel size: verl 0.1 (the PyPI release: verl/trainer/config/ppo_trainer.yaml actor.ppo_micro_batch_size,
# rollout.log_prob_micro_batch_size, ref.log_prob_micro_batch_size, critic.ppo_micro_batch_size; read by
# verl/trainer/ppo/workers/fsdp_workers.py ActorRolloutRefWorker.__init__ "normalize config") and the January 2025
# forks before verl PR #136 (TinyZero, Logic-RL, Search-R1: the same four keys in their ppo_trainer.yaml, cost.py
# N_SCALED_GLOBAL_MICRO). A config written for main after #136 (still versioned 0.1) names a per-GPU key and keeps
# it; without one, recommend searches and prints the global keys, and fix adds no per-GPU key (Hydra refuses a key
# the yaml lacks).
GLOBAL_MICRO_ONLY = frozenset({"0.1.0"})
# releases whose one_step_off recipe takes the old log-probs from the rollout engine: its yaml sets
# algorithm.rollout_correction.bypass_mode True from v0.7.0 (recipe/one_step_off_policy/config/
# one_step_off_ppo_trainer.yaml; verl/experimental/one_step_off_policy/ later). Up to v0.6.1 the recipe's trainer
# recomputes them whatever bypass_mode says, an old_log_prob pass on the trainer pool like the synchronous trainer's
# (recipe/one_step_off_policy/ray_trainer.py:OneStepOffRayTrainer.fit "recompute old_log_probs",
# actor_wg.compute_log_prob with the entropy, unconditionally: verl #2828's traceback, 2025-07-31, dies there)
ONE_STEP_OFF_BYPASS = frozenset({"0.7.1", "0.8.0", "0.9.1"})
# a version whose trainer keys we read as another's (the version-specific key lists name the newer one)
KEYS_AS = {"0.1.0": "0.2.0"}
# keys a version's yaml does not interpolate from another (fsdp.py INTERPOLATED): verl 0.2's critic yaml has
# ppo_micro_batch_size_per_gpu: null, 0.6.1's ${oc.select:.ppo_micro_batch_size,null}
NOT_INTERPOLATED = {"0.2.0": frozenset({"critic_micro_per_gpu"}), "0.1.0": frozenset({"critic_micro_per_gpu"})}


# ---------------------------------------------------------------------------------------------- assembly
@dataclass
class _Parts:
    shared: list[Rule]
    fsdp: list[Rule]
    megatron: list[Rule]
    variables: dict[str, VarSpec]
    derived: dict[str, list[Derived]] = field(default_factory=dict)  # part -> derived list
    megatron_variables: dict[str, VarSpec] = field(default_factory=dict)  # the Megatron trainer's other defaults


def _edit_rules(rules: list[Rule], pack: Pack, new: tuple[Rule, ...]) -> list[Rule]:
    return edit_rules(rules, drop=pack.drop, new=new, sources=pack.sources,
                      release=(f"verl {NEWEST}", f"verl {pack.version}"))


@functools.lru_cache(maxsize=None)
def _parts(version: str) -> _Parts:
    if version == NEWEST:
        return _Parts(list(R.SHARED_RULES), list(R.FSDP_RULES), list(RM.MEGATRON_RULES), dict(RM.ANY_VARIABLES), {
            "fsdp": R.shared_derived(R.FSDP_LAYOUT) + R.FSDP_DERIVED,
            "megatron": RM.MEGATRON_PRE_DERIVED + R.shared_derived(RM.MEGATRON_LAYOUT) + RM.MEGATRON_DERIVED,
            "any": RM.MEGATRON_PRE_DERIVED + R.shared_derived(RM.ANY_LAYOUT) + R.FSDP_DERIVED + RM.MEGATRON_DERIVED,
        })
    pack = PACKS[version]
    base = _parts(pack.edits)
    variables = edit_variables(base.variables, pack.variables, drop=pack.drop_variables)
    # a newer pack's Megatron-only default stays unless this pack sets the variable for both trainers
    megatron_variables = edit_variables(base.megatron_variables, pack.megatron_variables,
                                        drop={v[0] for v in pack.variables} | pack.drop_variables)
    return _Parts(_edit_rules(base.shared, pack, pack.shared), _edit_rules(base.fsdp, pack, pack.fsdp),
                  _edit_rules(base.megatron, pack, pack.megatron), variables,
                  {part: edit_derived(d, pack.derived) for part, d in base.derived.items()}, megatron_variables)


def _keep(variables: dict[str, VarSpec], names: set[str]) -> dict[str, VarSpec]:
    return {k: v for k, v in variables.items() if k in names}


def megatron_defaults(version: str) -> dict[str, VarSpec]:
    """The variables whose default differs with the Megatron trainer at ``version`` (its ppo_megatron_trainer.yaml):
    ``verl-megatron``'s rule set has them; ``--framework verl`` fills them in for a Megatron config
    (``fsdp.config_to_values``)."""
    return _parts(version).megatron_variables if version in PACKS or version == NEWEST else {}


@functools.lru_cache(maxsize=None)
def ruleset_for(version: str, part: str) -> RuleSet:
    """The rules of ``version`` for ``part``: "fsdp" (``rules.RULESET``'s shape), "megatron"
    (``verl-megatron``) or "any" (both backends, switched by ``megatron``: ``--framework verl``)."""
    p = _parts(version)
    fsdp_names = set(R.VARIABLES) | set(p.variables) - set(RM.ANY_VARIABLES)
    mega_names = set(RM.MEGATRON_VARIABLES) | set(p.variables) - set(RM.ANY_VARIABLES)
    if part == "fsdp":
        return RuleSet("verl", version, _keep(p.variables, fsdp_names), p.derived["fsdp"], p.shared + p.fsdp)
    if part == "megatron":
        variables = {**_keep(p.variables, mega_names), **p.megatron_variables}
        return RuleSet("verl-megatron", version, variables, p.derived["megatron"], p.shared + p.megatron)
    rules = p.shared + RM._only_when(~RM.IS_MEGATRON, p.fsdp) + RM._only_when(RM.IS_MEGATRON, p.megatron)
    return RuleSet("verl", version, p.variables, p.derived["any"], rules)


def changes(version: str) -> dict[str, list[tuple[str, str]]]:
    """What ``version``'s rules do differently from 0.9.1's: {"absent", "added", "changed"} -> (rule id, source)."""
    return rule_changes(ruleset_for(NEWEST, "any").rules, ruleset_for(version, "any").rules)


# ---------------------------------------------------------------------------------------------- the version
# Keys that exist only in some versions' trainer config: pasting one shows which versions the config was written for.
# Read from each release's trainer yaml (verl/trainer/config/ppo_trainer.yaml and ppo_megatron_trainer.yaml of the
# 0.2.0.post2, 0.3.0.post1 and 0.4.1 wheels; _generated_ppo_trainer.yaml and _generated_ppo_megatron_trainer.yaml of
# 0.5.0 to 0.9.1). A set names our packs: "0.2.0" for 0.2.0.post2's keys (0.1's read as 0.2's: KEYS_AS), "0.3.0" for
# 0.3.0.post1's, "0.5.0" for 0.4.1's or 0.5.0's (the 0.5.0 pack serves 0.4.x: SERIES). (key prefix, versions); the
# first prefix that matches a key is the one read, so a key's own entry comes before its parent's.
TO_0_2, TO_0_3, TO_0_5 = frozenset({"0.2.0"}), frozenset({"0.2.0", "0.3.0"}), frozenset({"0.2.0", "0.3.0", "0.5.0"})
ONLY_0_3, ONLY_0_4_5 = frozenset({"0.3.0"}), frozenset({"0.5.0"})
FROM_0_6 = frozenset({"0.6.1", "0.7.1", "0.8.0", "0.9.1"})
PRE_0_6_KEYS: tuple[tuple[str, frozenset[str]], ...] = (
    # 0.2: offload split in two, gone in 0.3 (ref.param_offload and reward_model.param_offload stayed until 0.4)
    (f"{AR}.actor.fsdp_config.grad_offload", TO_0_2), ("critic.model.fsdp_config.grad_offload", TO_0_2),
    ("reward_model.model.fsdp_config.min_num_params", TO_0_2), ("trainer.remove_previous_ckpt_in_save", TO_0_2),
    (f"{AR}.actor.megatron.num_layers_per_virtual_pipeline_stage", TO_0_2),
    (f"{AR}.ref.megatron.num_layers_per_virtual_pipeline_stage", TO_0_2),
    ("critic.megatron.num_layers_per_virtual_pipeline_stage", TO_0_2),
    (f"{AR}.ref.param_offload", TO_0_3), ("reward_model.param_offload", TO_0_3),
    ("trainer.val_generations_to_log_to_wandb", TO_0_3),  # 0.4: trainer.log_val_generations
    (f"{AR}.actor.checkpoint.contents", ONLY_0_3), ("critic.checkpoint.contents", ONLY_0_3),  # 0.4: save_contents
    ("critic.kl_ctrl.", TO_0_5),
    (f"{AR}.rollout.use_fire_sampling", frozenset({"0.3.0", "0.5.0"})),
    # 0.4-0.5: the profiler keys before 0.6's global_profiler, ray_init before ray_kwargs, the engine keyword arguments
    # before 0.6 emptied engine_kwargs.vllm / .sglang (a "+" key there is 0.6's: ADDED_LATER)
    (f"{AR}.actor.profile.", ONLY_0_4_5), (f"{AR}.ref.profile.", ONLY_0_4_5), ("trainer.profile_steps", ONLY_0_4_5),
    ("trainer.controller_nsight_options.", ONLY_0_4_5), ("trainer.worker_nsight_options.", ONLY_0_4_5),
    ("trainer.npu_profile.", ONLY_0_4_5), ("ray_init.", ONLY_0_4_5),
    (f"{AR}.model.gradient_checkpointing_kwargs.", ONLY_0_4_5), ("critic.model.gradient_checkpointing_kwargs.", ONLY_0_4_5),
    (f"{AR}.rollout.multi_turn.completion_callback", ONLY_0_4_5),
    (f"{AR}.rollout.engine_kwargs.vllm.swap_space", ONLY_0_4_5),
    (f"{AR}.rollout.engine_kwargs.vllm.disable_mm_preprocessor_cache", ONLY_0_4_5),
    (f"{AR}.rollout.engine_kwargs.sglang.attention_backend", ONLY_0_4_5),
)
# keys that 0.6.1 and later add with a "+" (their parent is an empty dict there): written so, they date nothing
ADDED_LATER = (f"{AR}.rollout.engine_kwargs.",)
VERSION_KEYS: tuple[tuple[str, frozenset[str]], ...] = PRE_0_6_KEYS + (
    ("trainer.use_legacy_worker_impl", frozenset({"0.5.0", "0.6.1", "0.7.1"})),
    # new in 0.4 (ppo_trainer.yaml of the 0.4.1 wheel; absent from 0.2.0.post2's and 0.3.0.post1's, whose
    # verl/trainer/ppo/ray_trainer.py:RayPPOTrainer.fit puts the KL in the reward whenever actor.use_kl_loss is off)
    ("algorithm.use_kl_in_reward", frozenset({"0.5.0"}) | FROM_0_6),
    # the data and expert parallel inside one rollout engine: new in 0.6 (verl/trainer/config/rollout/rollout.yaml of
    # the 0.6.0 wheel; absent from 0.5.0's rollout/rollout.yaml and from the 0.2.0.post2 to 0.4.1 ppo_trainer.yaml)
    (f"{AR}.rollout.data_parallel_size", FROM_0_6), (f"{AR}.rollout.expert_parallel_size", FROM_0_6),
    ("trainer.use_v1", frozenset({"0.9.1"})),
    ("trainer.v1.", frozenset({"0.9.1"})),
    ("critic.model.fsdp_config.", TO_0_5 | {"0.6.1", "0.7.1"}),
    ("critic.fsdp.", frozenset({"0.8.0", "0.9.1"})),
    (f"{AR}.rollout.skip.", frozenset({"0.8.0"})),
    (f"{AR}.rollout.skip_rollout", frozenset({"0.6.1", "0.7.1"})),
    ("skip.", frozenset({"0.9.1"})),
    (f"{AR}.rollout.update_weights_bucket_megabytes", frozenset({"0.5.0", "0.6.1"})),
    (f"{AR}.rollout.n_gpus_per_node", frozenset({"0.7.1", "0.8.0", "0.9.1"})),
    (f"{AR}.rollout.checkpoint_engine.", frozenset({"0.7.1", "0.8.0", "0.9.1"})),
    (f"{AR}.model.lora.", frozenset({"0.8.0", "0.9.1"})),
    # LoRA: new in 0.4 (ppo_trainer.yaml of the 0.4.1 wheel: actor_rollout_ref.model and critic.model lora_rank 0,
    # lora_alpha 16, target_modules all-linear; absent from 0.2.0.post2's and 0.3.0.post1's)
    *((f"{section}.model.{leaf}", frozenset({"0.5.0"}) | FROM_0_6)
      for section in (AR, "critic") for leaf in ("lora_rank", "lora_alpha", "target_modules")),
    (f"{AR}.actor.pad_to_length", frozenset({"0.9.1"})),
    (f"{AR}.actor.entropy_from_logits_chunk_size", frozenset({"0.9.1"})),
    (f"{AR}.ref.model", frozenset({"0.6.1"})),
    ("reward_model.micro_batch_size", TO_0_5 | {"0.6.1"}),
    ("reward_model.strategy", TO_0_5 | {"0.6.1"}),
    ("reward.", frozenset({"0.7.1", "0.8.0", "0.9.1"})),
    ("distillation.", frozenset({"0.8.0", "0.9.1"})),
    ("transfer_queue.", frozenset({"0.8.0", "0.9.1"})),
    # the Megatron trainer's: gone from 0.9.1's engine config (verl/trainer/config/engine/megatron.yaml) and actor
    # and critic yaml (0.8.0: actor/megatron_actor.yaml, critic/megatron_critic.yaml load_weight)
    # and 0.9.0's (its engine/megatron.yaml "grad_offload: False"; 0.9.1 dropped it): its Megatron examples set it
    (f"{AR}.actor.megatron.grad_offload", frozenset({"0.5.0", "0.6.1", "0.7.1", "0.8.0", "0.9.0"})),
    (f"{AR}.ref.megatron.grad_offload", frozenset({"0.6.1", "0.7.1", "0.8.0", "0.9.0"})),
    ("critic.megatron.grad_offload", frozenset({"0.5.0", "0.6.1", "0.7.1", "0.8.0", "0.9.0"})),
    # the actor's and reference's router replay outside the engine config: 0.7.1 to 0.9.0 (actor/actor.yaml
    # router_replay); 0.9.1 has it under megatron. only (engine/megatron.yaml)
    (f"{AR}.actor.router_replay.", frozenset({"0.7.1", "0.8.0", "0.9.0"})),
    (f"{AR}.ref.router_replay.", frozenset({"0.7.1", "0.8.0", "0.9.0"})),
    ("data.continuous_token.", frozenset({"0.9.0"})),  # 0.9.0's data/legacy_data.yaml only
    (f"{AR}.actor.load_weight", TO_0_5 | {"0.6.1", "0.7.1", "0.8.0"}),
    (f"{AR}.ref.load_weight", TO_0_5 | {"0.6.1", "0.7.1", "0.8.0"}),
    ("critic.load_weight", TO_0_5 | {"0.6.1", "0.7.1", "0.8.0"}),
)

# verl 0.9.0: checked with the 0.9.1 pack (SERIES: their rules agree), its trainer config's keys its own
# (config_keys/0.9.0_*.txt, from the 0.9.0 wheel): every key the list above gives 0.9.1 (tests/test_verl_release_detection
# checks each against the two releases' key lists), and the Megatron grad_offload keys and router_replay that 0.9.1
# dropped. A release whose keys we list apart from its pack's: release -> the pack that judges it
KEY_RELEASES = {"0.9.0": "0.9.1"}
VERSION_KEYS = tuple((prefix, versions | {"0.9.0"} if "0.9.1" in versions else versions)
                     for prefix, versions in VERSION_KEYS)

# Keys whose value dates a config. The deprecated global micro batches: the workers up to 0.5 and the legacy workers,
# the default up to 0.7 (0.7.1 trainer.use_legacy_worker_impl: auto), divide them by the data-parallel size themselves
# (verl/workers/fsdp_workers.py:ActorRolloutRefWorker.__init__ "ppo_micro_batch_size //=" in the 0.2.0.post2 to 0.7.1
# wheels, megatron_workers.py:ActorRolloutRefWorker.__init__); 0.8.0 has only the engine workers, which need the
# _per_gpu keys (verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model asserts them). The newest that
# accepts them: 0.7.1.
LEGACY_GLOBAL_MICRO = (f"{AR}.actor.ppo_micro_batch_size", f"{AR}.rollout.log_prob_micro_batch_size",
                       f"{AR}.ref.log_prob_micro_batch_size")
# rollout.name: the engines each version registers (verl/workers/rollout/base.py:_ROLLOUT_REGISTRY; "hf" is the
# workers' own up to 0.7, verl/workers/fsdp_workers.py:ActorRolloutRefWorker._build_rollout; "sglang_async" is 0.4's,
# fsdp_workers.py of the 0.4.1 wheel; "trtllm" is new in 0.7)
ROLLOUT_NAMES = {"hf": TO_0_5 | {"0.6.1", "0.7.1"}, "sglang_async": ONLY_0_4_5,
                 "trtllm": frozenset({"0.7.1", "0.8.0", "0.9.0", "0.9.1"})}
# rollout.mode: new in 0.4 (ppo_trainer.yaml of the 0.4.1 wheel, default sync); "sync" removed in 0.7
SYNC_MODE = frozenset({"0.5.0", "0.6.1"})


def _matches(bare: str, prefix: str) -> bool:
    return bare == prefix or (prefix.endswith(".") and bare.startswith(prefix)) or bare.startswith(prefix + ".")


def _set(value: object) -> bool:
    return value is not None and str(value).strip().strip("'\"").lower() not in ("", "null", "none", "~")


@functools.lru_cache(maxsize=4096)
def _versions_of(key: str) -> frozenset[str] | None:
    """The versions whose trainer config has ``key`` (as written, a leading "+" included), of those we know to be
    version-specific; None for any other key. Cached: ``enumerate`` asks it of every listed config's keys (a scan of
    ``VERSION_KEYS`` each time took most of a 19,000-config listing's time)."""
    bare = key.lstrip("+")
    if key.startswith("+") and any(bare.startswith(p) for p in ADDED_LATER):
        return None
    return next((versions for prefix, versions in VERSION_KEYS if _matches(bare, prefix)), None)


def _dates(key: object, value: object, flat: Mapping[str, object]) -> tuple[str, str, frozenset[str]] | None:
    """What one key of a pasted config says of its version: (what, why in words, the versions that accept it), or
    None when every version does."""
    bare = str(key).lstrip("+")
    found = _versions_of(str(key))
    name = str(value).strip().lower()
    if found is not None:
        return bare, _listed(found), found
    if bare in LEGACY_GLOBAL_MICRO and _set(value):
        return (f"{bare}={value}", "global micro batches: the workers up to 0.5 and the legacy workers of 0.6-0.7 "
                "convert them, 0.8 refuses them", TO_0_5 | {"0.6.1", "0.7.1"})
    if bare == CRITIC_GLOBAL_MICRO and _set(value) and _critic_micro_alone(flat):
        return (f"{bare}={value}", "the critic's global micro batch alone: verl 0.2's critic yaml leaves "
                "ppo_micro_batch_size_per_gpu null, 0.6.1 and later copy it there and refuse both set",
                frozenset({"0.2.0"}))
    if bare == f"{AR}.rollout.mode" and name == "sync":
        return f"{bare}=sync", "0.4-0.6: removed in 0.7", SYNC_MODE
    if bare == f"{AR}.rollout.name" and name in ROLLOUT_NAMES:
        return f"{bare}={value}", _listed(ROLLOUT_NAMES[name]), ROLLOUT_NAMES[name]
    return None


def dating(flat: Mapping[str, object]) -> list[tuple[str, str, frozenset[str]]]:
    """What in a pasted config only some versions accept: (what, why in words, those versions), in the config's
    order."""
    return [found for key, value in flat.items() if (found := _dates(key, value, flat)) is not None]


def dated_by_value(flat: Mapping[str, object]) -> set[str]:
    """The keys of a pasted config whose value ``detect`` reads to date it (rollout.mode=sync, rollout.name=hf, a
    global micro batch set): the same key with another value dates it otherwise. The keys that date it by being
    there at all are not among them (any value of theirs dates it the same)."""
    return {str(key) for key, value in flat.items()
            if _versions_of(str(key)) is None and _dates(key, value, flat) is not None}


CRITIC_GLOBAL_MICRO = "critic.ppo_micro_batch_size"


def _critic_micro_alone(flat: Mapping[str, object]) -> bool:
    """critic.ppo_micro_batch_size set without the per-GPU key, where a critic trains with fixed micro batches
    (adv_estimator gae, the default; no dynamic batch): 0.2.0 accepts it, 0.6.1-0.9.1 refuse it
    (verl.critic.micro_exactly_one)."""
    bare = {str(k).lstrip("+"): v for k, v in flat.items()}
    estimator = str(bare.get("algorithm.adv_estimator", "gae")).strip().strip("'\"").lower()
    dynamic = str(bare.get("critic.use_dynamic_bsz", bare.get(f"{AR}.actor.use_dynamic_bsz", False))).lower()
    return estimator == "gae" and dynamic not in ("true", "1") and not _set(bare.get(f"{CRITIC_GLOBAL_MICRO}_per_gpu"))


# the releases an older pack's key set stands for, in words
RELEASES_OF = {"0.2.0": "0.1-0.2", "0.3.0": "0.3", "0.5.0": "0.4-0.5"}


def _listed(versions: frozenset[str]) -> str:
    """The versions in words, oldest first: "verl 0.4-0.5 only" for keys of the releases before 0.6 alone."""
    ordered = sorted(versions, key=release_numbers)
    if versions <= set(RELEASES_OF):
        return "verl " + ", ".join(RELEASES_OF[v] for v in ordered) + " only"
    return ", ".join(RELEASES_OF.get(v, v) for v in ordered)


def packs_around(release: str) -> frozenset[str]:
    """The packs (``VERSIONS``) nearest before and after ``release``, a release without one of its own (0.7.0: 0.6.1
    and 0.7.1), as ``VERSION_KEYS`` names them."""
    at = release_numbers(release)
    before = [v for v in VERSIONS if release_numbers(v) < at]
    after = [v for v in VERSIONS if release_numbers(v) > at]
    return frozenset(KEYS_AS.get(v, v) for v in (max(before, key=release_numbers, default=None),
                                                 min(after, key=release_numbers, default=None)) if v)


def lacks(key: str, version: str) -> bool:
    """Whether ``version``'s trainer config lacks ``key`` (as written, a leading "+" included), of the keys we know to
    be version-specific (``VERSION_KEYS``): what ``check`` refuses under a named release and what ``recommend`` leaves
    out of the command it prints for one."""
    found = _versions_of(key)
    return found is not None and KEYS_AS.get(version, version) not in found


def missing_keys(flat: Mapping[str, object], version: str) -> list[str]:
    """The keys of a config that ``version``'s trainer config lacks, of those we know to be version-specific: Hydra
    refuses them ("Could not override '<key>'. ... Key '<name>' is not in struct"; a "+" in front adds one, but the
    pasted config reads without it)."""
    return [str(key).lstrip("+") for key in flat if lacks(str(key), version)]


def detect(flat: Mapping[str, object]) -> tuple[str | None, str]:
    """The newest version whose trainer config accepts everything version-specific the config sets (keys, and
    values such as the deprecated global micro batches), and why; (None, why) when they disagree or nothing is
    version-specific."""
    candidates = set(VERSIONS) | set(KEY_RELEASES)
    seen: dict[str, list[str]] = {}  # why -> what, said once per reason
    for what, why, versions in dating(flat):
        candidates &= versions
        seen.setdefault(why, []).append(what)
    said = "; ".join(f"{', '.join(whats)} ({why})" for why, whats in seen.items())
    if not seen:
        from .struct_keys import held_releases, some_releases_keys

        # a key only some releases' trainer config lists have dates nothing here (those lists stop at 0.5.0, and a
        # recipe's or an older release's config may hold it): said as what it is, not as a key of every release
        listed = some_releases_keys(flat)
        if not listed:
            return None, "no key of the config is specific to a verl version"
        key, having = listed[0]
        held = held_releases()
        more = f", and {len(listed) - 1} more such key{'s' if len(listed) > 2 else ''}" if len(listed) > 1 else ""
        return None, (f"no key we date releases by is in the config; its {key} is a key of the trainer config of verl "
                      f"{', '.join(having)} only, of the releases whose keys we hold ({held[0]} to {held[-1]}){more}")
    if not candidates:
        return None, "its version-specific keys belong to no single version: " + said
    best = max(candidates, key=release_numbers)
    return best, "its keys " + said

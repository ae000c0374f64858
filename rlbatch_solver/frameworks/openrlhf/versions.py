"""The OpenRLHF releases older configs are written for: 0.10.4, 0.9.10, 0.8.11, 0.7.5, 0.6.2, 0.5.9 and 0.4.0 beside 0.11.2, each a
small edit of the next newer one's rules (0.10.4 and 0.6.2: of 0.11.2's).

0.11.2's rules (``rules.py``) are written once. A release's pack names what its ``train_ppo_ray`` does differently,
read from that release's wheel (paths below are inside it; 0.4.0 is read from 0.4.0.post2, the first 0.4 wheel on
PyPI; 0.5.9 from 0.5.9.post1):

* **0.10.4** checks what 0.11.2 checks, in the same places, but asks ``n_samples_per_prompt > 1`` of rloo,
  reinforce_baseline and group_norm only (not dr_grpo), and has no flash_reinforce estimator; DeepSpeed 0.19.1.
* **0.9.10** is 0.10.4 in the underscore flag names (0.10.2 renamed them) without the check of
  ``--vllm_generate_batch_size`` against ``--rollout_batch_size`` (0.10 added it), with
  ``--micro_train_batch_size 4`` and ``--micro_rollout_batch_size 8`` by default, and a dynamic-batch step whose
  per-rank batch is 0 failing with IndexError in ``get_seqlen_balanced_partitions`` (0.10 divides by it); DeepSpeed
  0.18.9.
* **0.8.11** is 0.9.10 without ``--partial_rollout`` (and its check); its launcher asserts that every rank of a
  model group gets an experience batch ("Total length N must be greater than or equal to effective actors M", where
  0.9 raises ValueError), and its samples generator sits in ``trainer/ppo_utils/experience_maker.py``; DeepSpeed 0.17.6.
* **0.7.5** is 0.8.11 without async training, dynamic filtering or dynamic batch (no such flags); in its ``__main__``
  block ring attention does not switch packing on (only ``--packing_samples`` asks for vLLM engines) and the
  sample-batch assert divides the actor's world by ``ring_attn_size`` only, not by ``ds_tensor_parallel_size``;
  without vLLM engines the first rollout stops in ``trainer/ppo_utils/experience_maker.py:
  RemoteExperienceMaker._generate_with_hf`` (NotImplementedError). Its actor groups are ``PPORayActorGroup`` of
  ``ActorModelRayActor`` and the others (0.8 renamed them); DeepSpeed 0.16.7.
* **0.6.2** validates in ``openrlhf/cli/train_ppo_ray.py:_validate_args``: ``--vllm_num_engines`` given (its default
  None fails the comparison with 0 there), ``rollout_batch_size`` divisible by the
  actor's world size (each actor rank makes the experience of its share of the prompts, so there is no experience
  dispatch over the model groups, no EMA-free launcher split and no dynamic batch), ZeRO-3 only with vLLM engines,
  the actor's world and ``vllm_num_engines`` one a multiple of the other, the actor's world a multiple of the
  critic's. No async training, partial rollout, dynamic filtering, DeepSpeed tensor parallel or generation batch
  flags. Its flags are the underscore names (``--micro_train_batch_size``). Defaults that decide memory:
  ``--micro_train_batch_size 4``, ``--micro_rollout_batch_size 8``, ``--vllm_gpu_memory_utilization 0.9``.
* **0.5.9** is 0.6.2 but: the reference model is always built (its layout checked when colocated), the actor's world
  must be a multiple of ``vllm_num_engines`` (not either way), only ``rloo`` asks for ``n_samples_per_prompt > 1``
  (the estimators are gae, reinforce, rloo), and ``--colocate_all_models`` lowers a vLLM share of 0.9 or more to 0.4,
  checking the engines against the actor only in that branch (``train``). No ring attention. Its log-probs take the
  fp32 logits through ``torch.gather`` and a per-row ``logsumexp`` (``openrlhf/models/utils.py:log_probs_from_logits``),
  not flash-attn's cross-entropy (0.6.2 on): the update's backward holds more full-size fp32 gradients.
* **0.4.0** (``_validate_args``): the actor's and the critic's world sizes powers of two, the actor's a multiple of
  the critic's, ZeRO-3 only with vLLM; its ``__main__`` block compares ``--vllm_num_engines`` with 1, so it must be
  given (0.6.2 too, in ``_validate_args``). PPO only (no ``--advantage_estimator``: a critic always runs), the
  reference model always built, no ``--colocate_all_models``, no packing, no ring attention. Its DeepSpeed config
  sets ``data_types.grad_accum_dtype`` to fp32 unless ``--grad_accum_dtype`` is given
  (``openrlhf/utils/deepspeed_utils.py:get_train_ds_config``); DeepSpeed 0.14.4 (the version it pins) then runs
  ZeRO-1 with the BF16_Optimizer, whose fp32 gradients are not partitioned
  (``deepspeed/runtime/engine.py:DeepSpeedEngine._do_optimizer_sanity_check``). vLLM is built without a memory
  share (``openrlhf/trainer/ray/vllm_engine.py:LLMRayActor``): vLLM's default 0.9.
* The vLLM each wheel's ``vllm`` extra pins: 0.4.2 (0.4.0.post2), 0.7.2 (0.5.9.post1 and 0.6.2), 0.8.5.post1 (0.7.5),
  0.29.0 (0.11.2).
  Before 0.21 vLLM captures its CUDA graphs after it has sized the KV cache (V0
  ``LLMEngine._initialize_kv_caches``: ``determine_num_available_blocks``, then ``initialize_cache`` ->
  ``Worker._warm_up_model`` -> ``capture_model``), so they come on top of ``gpu_memory_utilization``.

A pack drops rules (ids), adds or replaces rules (same id), replaces variables (a default that changed), rewrites
source paths that moved, and names its release in messages. ``ruleset_for(version)`` assembles it; ``detect`` dates
a pasted config from the flags only some releases have (``release_flags.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from ...rules.base import Rule, RuleSet, Stage, is_set
from ...rules.expr import divides, maximum
from ...rules.packs import Pack, edit_derived, edit_rules, edit_variables, rule_changes
from ...release_numbers import release_numbers
from ..dating import dated, listed, span
from . import rules as R
from .names import spelled
from .release_flags import RELEASE_FLAGS

NAME = "OpenRLHF"  # in messages about a release (base.resolve_release)
NEWEST = R.VERSION
# --algo.advantage.estimator choices of 0.11.2 (cli/train_ppo_ray.py)
ESTIMATORS = ("gae", "reinforce", "rloo", "reinforce_baseline", "group_norm", "dr_grpo", "flash_reinforce")
# the driver asserts n_samples_per_prompt > 1 for these
GROUP_ESTIMATORS = frozenset({"rloo", "reinforce_baseline", "group_norm", "dr_grpo"})
VERSIONS = ("0.11.2", "0.10.4", "0.9.10", "0.8.11", "0.7.5", "0.6.2", "0.5.9", "0.4.0")  # the releases whose rules we follow, newest first
SERIES = {v.rsplit(".", 1)[0]: v for v in VERSIONS}  # "0.6" -> "0.6.2": a patch we do not list reads its series'




# the non-Ray launcher, openrlhf/cli/train_ppo.py (``deepspeed --module openrlhf.cli.train_ppo``, or the script
# under torchrun): in every wheel before 0.6.2 (0.4.0.post2, 0.5.0, 0.5.9, 0.6.0, 0.6.1, 0.6.1.post1; 0.6.1's ``train``
# builds the same four models, the reference one only with --init_kl_coef > 0), gone from 0.6.2's (its cli/ has
# train_ppo_ray.py only). Decided by the release the user named, not the pack judging it (0.6.1 checks as 0.6.2).
NON_RAY_LAUNCHER_UNTIL = (0, 6, 2)
# the newest release with it (0.6.1; 0.6.1.post1 is its patch): a pasted message of train_ppo.py's parser alone is read
# as that release's
NON_RAY_NEWEST = "0.6.1"


# the flags the judging pack's train_ppo_ray.py parser has and the non-Ray launcher's train_ppo.py parser lacks (each
# parser's add_argument calls, diffed in the wheels: 0.4.0.post2's and 0.5.9.post1's own pair, 0.6.1's train_ppo.py
# against 0.6.2's train_ppo_ray.py, the pack judging 0.6.0 and 0.6.1), and train_ppo.py's own (0.4.0.post2:
# --temperature). Both parsers call parse_args(): a flag of the other stops the run ("unrecognized arguments").
_RAY_GROUPS = frozenset(f"{g}_{n}" for g in ("actor", "ref", "critic", "reward") for n in ("num_nodes", "num_gpus_per_node"))
_RAY_05 = _RAY_GROUPS | {
    "colocate_actor_ref", "colocate_all_models", "colocate_critic_reward", "enable_prefix_caching", "enforce_eager",
    "packing_samples", "perf", "ref_reward_offload", "vllm_enable_sleep", "vllm_gpu_memory_utilization",
    "vllm_num_engines", "vllm_sync_backend", "vllm_sync_with_ray", "vllm_tensor_parallel_size"}
NON_RAY_LACKS = {
    "0.4.0": _RAY_GROUPS | {"colocate_actor_ref", "colocate_critic_reward", "enable_prefix_caching", "perf",
                            "ref_reward_offload", "vllm_num_engines", "vllm_sync_backend", "vllm_tensor_parallel_size"},
    "0.5.9": _RAY_05,
    "0.6.2": _RAY_05 | {"deepspeed_enable_sleep", "full_determinism", "ring_attn_size", "ring_head_stride",
                        "torch_compile", "use_liger_kernel"},
}
NON_RAY_OWN = {"0.4.0": frozenset({"temperature"})}


def non_ray_flags(version: str) -> frozenset[str]:
    """The flags train_ppo.py's parser takes, for the pack ``version`` (NON_RAY_LACKS)."""
    return (RELEASE_FLAGS[version] - NON_RAY_LACKS.get(version, frozenset())) | NON_RAY_OWN.get(version, frozenset())


def has_non_ray_launcher(release: str) -> bool:
    """Whether OpenRLHF ``release``'s wheel ships openrlhf/cli/train_ppo.py (NON_RAY_LAUNCHER_UNTIL)."""
    return release_numbers(release) < NON_RAY_LAUNCHER_UNTIL


def dotted_names(version: str) -> bool:
    """Whether the release's flags are the dotted names (0.10.2 renamed every flag, keeping no aliases)."""
    return release_numbers(version) >= (0, 10, 2)


# Release.experience_order's values, by the index the values carry ("experience_order")
EXPERIENCE_ORDERS = ("actor_first", "ref_first", "actor_last")


@dataclass(frozen=True)
class Release:
    """A release's defaults that decide memory and how its flags are read."""

    version: str
    deepspeed: str  # the DeepSpeed release its wheel pins
    # DeepSpeed's data_types.grad_accum_dtype as get_train_ds_config writes it without --grad_accum_dtype
    grad_accum_fp32: bool
    ref_always: bool  # train() builds the reference model whatever the KL coefficient
    has_estimator: bool  # --advantage_estimator exists (without it: PPO with a critic)
    # how the log-probs are computed (costmodel/constants.py LOGIT_BYTES): "openrlhf" (flash-attn's cross-entropy on
    # fp32 logits, 0.6.2 on), "openrlhf-0.5" (gather + per-row logsumexp), "openrlhf-0.4" (log_softmax, fp32 model logits)
    logits: str = "openrlhf"
    # --colocate_all_models lowers a vLLM share of 0.9 or more to 0.4 (0.5.9's train())
    colocate_lowers_gmu: bool = False
    # the vLLM release its wheel pins (the ``vllm`` extra): before vLLM 0.21 the engine captures its CUDA graphs
    # after sizing the KV cache, outside gpu_memory_utilization (Plan.engine_graphs_in_budget)
    vllm: str = "0.29.0"
    # with --vllm.enable_sleep the weight sync wakes only the engines' weights, not their KV cache (0.11.2
    # trainer/ppo_trainer.py broadcast_to_vllm: wake_up(tags=["weights"])); 0.4.0-0.6.2 wake them fully
    # (trainer/ray/ppo_actor.py ppo_train: wake_up() before _broadcast_to_vllm)
    sync_wakes_weights_only: bool = False
    # save_model (the end of training; each save with --save_hf_ckpt) clones the whole bf16 state dict to the CPU on
    # every rank below ZeRO-3 (utils/deepspeed/deepspeed.py save_model: deepspeed's clone_tensors_for_torch_save, whose
    # device defaults to the CPU; read at 0.7.5, 0.8.11, 0.10.4, 0.11.2); 0.4.0-0.6.2 gather it parameter by parameter
    # and keep it on rank 0 only (``vv = v.data.cpu()``, kept ``if self.is_rank_0()``), as ZeRO-3 does in every release
    save_clones_every_rank: bool = True
    # without vLLM engines (--vllm_num_engines 0 or unset) the actor generates with transformers' generate,
    # micro_rollout_batch_size prompts per call (trainer/ppo_utils/experience_maker.py: 0.4.0.post2
    # RemoteExperienceMaker._generate_local; 0.5.9/0.6.2 generate_samples "if self.vllm_engines is None", the base
    # class's loop over micro_rollout_batch_size); 0.7.5 raises NotImplementedError in _generate_with_hf, 0.8 on
    # require engines (openrlhf.vllm.engines_required)
    hf_generate: bool = False
    # with vLLM engines, each actor rank generates micro_rollout_batch_size samples per call and makes their
    # experience before its next call (0.4.0.post2 trainer/ppo_trainer.py fit: the prompts dataloader yields
    # micro_rollout_batch_size samples a rank, make_experience each; trainer/ppo_utils/experience_maker.py
    # RemoteExperienceMaker._generate_vllm: ray.get(llm.generate.remote(...)) on engine rank % engines, a
    # @ray.remote LLMRayActor that serves one call at a time, trainer/ray/vllm_engine.py); 0.4.6 on generates the
    # rank's rollout_batch_size // world_size at once (make_experience_list; 0.4.5's wheel still has make_experience)
    engine_calls_per_micro_batch: bool = False
    # the order make_experience dispatches the experience forwards in (cost.py ``concurrency``): "actor_first"
    # (0.7.5-0.11.2: actor, critic, reference as remote batch calls), "ref_first" (0.6.2: reference, critic, then
    # the actor's forward locally), "actor_last" (0.4.0.post2, 0.5.9: reference and critic, their waits, then the
    # actor's forward locally); trainer/ppo_utils/experience_maker.py make_experience at each. The values carry its
    # index in EXPERIENCE_ORDERS (the solver's inputs are integers)
    experience_order: str = "actor_first"
    # --advantage_estimator's choices (its argparse), and those the driver asks n_samples_per_prompt > 1 for
    estimators: tuple[str, ...] = ESTIMATORS
    group_estimators: frozenset[str] = GROUP_ESTIMATORS

    @property
    def vllm_graphs_in_budget(self) -> bool:
        return release_numbers(self.vllm) >= (0, 21)

    @property
    def vllm_v0_default(self) -> bool:
        """The pinned vLLM runs its V0 engine unless the environment says VLLM_USE_V1=1: V1 became the default in
        vLLM 0.8.0 (vllm/envs.py VLLM_USE_V1)."""
        return release_numbers(self.vllm) < (0, 8)

    @property
    def vllm_has_v0(self) -> bool:
        """The pinned vLLM still has the V0 engine that VLLM_USE_V1=0 selects (vLLM 0.11 removed it)."""
        return release_numbers(self.vllm) < (0, 11)


# 0.7.5 to 0.10.4: --advantage_estimator's choices; dr_grpo is not among those asking n_samples_per_prompt > 1 before 0.11
ESTIMATORS_07 = ("gae", "reinforce", "rloo", "reinforce_baseline", "group_norm", "dr_grpo")
GROUP_ESTIMATORS_06 = frozenset({"rloo", "reinforce_baseline", "group_norm"})
RELEASES = {
    "0.11.2": Release("0.11.2", R.DEEPSPEED_VERSION, False, False, True, vllm="0.29.0",
                      sync_wakes_weights_only=True),
    # vLLM pins of the 0.8-0.10 wheels' ``vllm`` extra; 0.9.10 and 0.10.4 wake only the weights for the sync
    # (trainer/ppo_trainer.py: wake_up(tags=["weights"])), 0.8.11 wakes the engines fully (wake_up())
    "0.10.4": Release("0.10.4", "0.19.1", False, False, True, estimators=ESTIMATORS_07,
                      group_estimators=GROUP_ESTIMATORS_06, vllm="0.22.1", sync_wakes_weights_only=True),
    "0.9.10": Release("0.9.10", "0.18.9", False, False, True, estimators=ESTIMATORS_07,
                      group_estimators=GROUP_ESTIMATORS_06, vllm="0.19.0", sync_wakes_weights_only=True),
    "0.8.11": Release("0.8.11", "0.17.6", False, False, True, estimators=ESTIMATORS_07,
                      group_estimators=GROUP_ESTIMATORS_06, vllm="0.10.2"),
    # setup.py: deepspeed==0.16.7, extra vllm: vllm==0.8.5.post1; trainer/ppo_trainer.py and
    # ppo_utils/experience_maker.py wake the engines fully (batch_vllm_engine_call(..., "wake_up"), no tags);
    # utils/deepspeed/deepspeed.py save_model clones on every rank (clone_tensors_for_torch_save)
    "0.7.5": Release("0.7.5", "0.16.7", False, False, True, estimators=ESTIMATORS_07,
                     group_estimators=GROUP_ESTIMATORS_06, vllm="0.8.5.post1"),
    # train_ppo_ray.py: choices=[...] of --advantage_estimator; _validate_args: "... requires n_samples_per_prompt > 1"
    "0.6.2": Release("0.6.2", "0.16.4", False, False, True, save_clones_every_rank=False, hf_generate=True,
                     estimators=("gae", "reinforce", "rloo", "reinforce_baseline", "group_norm"),
                     group_estimators=GROUP_ESTIMATORS_06, vllm="0.7.2", experience_order="ref_first"),
    "0.5.9": Release("0.5.9", "0.16.3", False, True, True, "openrlhf-0.5", colocate_lowers_gmu=True, save_clones_every_rank=False, hf_generate=True,
                     estimators=("gae", "reinforce", "rloo"), group_estimators=frozenset({"rloo"}), vllm="0.7.2",
                     experience_order="actor_last"),
    # no --advantage_estimator: PPO with a critic (gae) only
    "0.4.0": Release("0.4.0", "0.14.4", True, True, False, "openrlhf-0.4", estimators=("gae",), save_clones_every_rank=False, hf_generate=True,
                     group_estimators=frozenset(), vllm="0.4.2", engine_calls_per_micro_batch=True,
                     experience_order="actor_last"),
}


V, D = R.V, R.D
VALIDATE = "openrlhf/cli/train_ppo_ray.py:_validate_args"
ZERO3_NEEDS_VLLM = Rule(
    "openrlhf.driver.zero3_needs_vllm",
    (V["zero_stage"] < 3) | (D["engines"] >= 1),
    "ds.zero_stage = {zero_stage} with vllm.num_engines = {vllm_num_engines}: ZeRO-3 is only supported when vLLM "
    "enabled",
    Stage.DRIVER, VALIDATE,
)
ACTOR_COVERS_CRITIC = Rule(
    "openrlhf.driver.actor_world_divisible_by_critic_world",
    divides(D["critic_world"], D["actor_world"]),
    "actor_world_size must be divisible by critic_world_size, got {actor_world} and {critic_world}",
    Stage.DRIVER, VALIDATE, when=V["need_critic"],
)

# the 0.11.2 rules of features 0.6.2 does not have, or of the experience dispatch it does not do
NOT_IN_062 = frozenset({
    "openrlhf.driver.legacy_flag_names",  # the underscore names are 0.6.2's own
    "openrlhf.driver.dynamic_filtering_needs_n", "openrlhf.driver.dynamic_filtering_needs_remote_reward",
    "openrlhf.driver.generate_batch_needs_async", "openrlhf.driver.async_forbids_vllm_sleep",
    "openrlhf.driver.partial_rollout_needs_async", "openrlhf.driver.sample_batches_cover_actor",
    "openrlhf.deepspeed.tp_needs_bf16",
    "openrlhf.vllm.engines_required",
    "openrlhf.launcher.ref_batches_cover_group", "openrlhf.launcher.critic_batches_cover_group",
    "openrlhf.launcher.reward_batches_cover_group",
    "openrlhf.dynamic.actor_train_batch_covers_dp", "openrlhf.dynamic.critic_train_batch_covers_dp",
    "openrlhf.zero3.actor_even_batches", "openrlhf.zero3.ref_even_batches", "openrlhf.zero3.critic_even_batches",
    "openrlhf.zero3.reward_even_batches", "openrlhf.advice.even_actor_samples",
})
# before 0.10.2 one flag offloads the reference and the reward model (names.py spells both as it): every release
# from 0.4.0 to 0.9.10 holds them equal (V0910, and V062 for 0.6.2 and the releases its pack starts)
ONE_OFFLOAD_FLAG = Rule(
    "openrlhf.driver.ref_reward_offload_one_flag",
    (V["ref_offload"] & V["reward_offload"]) | (~V["ref_offload"] & ~V["reward_offload"]),
    "the reference and the reward model are offloaded together or not at all: before 0.10.2 one flag, "
    "--ref_reward_offload, sets both (ref.offload = {ref_offload}, reward.offload = {reward_offload})",
    Stage.DRIVER, "openrlhf/cli/train_ppo_ray.py (argparse: --ref_reward_offload, read by ReferenceModelActor and "
    "RewardModelActor alike; 0.10.2 split it into --ref.offload and --reward.offload)",
    when=V["need_ref"] & V["need_reward_model"],
    explanation="A config of these releases cannot set one without the other; fix and recommend move them together.",
)
OLD_DEFAULTS = (
    ("micro_train_batch_size", "train.micro_batch_size", "int", 4, False, "samples per forward/backward per GPU"),
    ("micro_rollout_batch_size", "rollout.micro_batch_size", "int", 8, False, "samples per experience batch"),
    ("gmu_permille", "vllm.gpu_memory_utilization", "int", 900, False, "vLLM memory fraction x1000"),
)
V062 = Pack(
    "0.6.2", NEWEST,
    drop=NOT_IN_062,
    rules=(
        ONE_OFFLOAD_FLAG,
        Rule(
            "openrlhf.driver.rollout_divisible_by_actor_world",
            divides(D["actor_world"], V["rollout_batch_size"]),
            "rollout_bach_size must be divisible by actor_world_size, got {rollout_batch_size} and {actor_world} "
            "(actor_num_nodes*actor_num_gpus_per_node = {actor_nnodes}*{actor_gpus_per_node})",
            Stage.DRIVER, VALIDATE,
            explanation="Each actor rank generates and scores its own share of the prompts (0.11.2 dispatches "
                        "the experience over the model groups instead).",
        ),
        ZERO3_NEEDS_VLLM,
        Rule(
            "openrlhf.driver.vllm_num_engines_required",
            is_set("vllm_num_engines"),
            "--vllm_num_engines is not set: _validate_args compares it with 0 (`if args.vllm_num_engines > 0`) and "
            "stops with TypeError: '>' not supported between instances of 'NoneType' and 'int'",
            Stage.DRIVER, VALIDATE,
            explanation="Its default is None; give --vllm_num_engines (0: the actor generates, without vLLM).",
        ),
        Rule(
            "openrlhf.driver.vllm_engines_match_actor_world",
            # the engine count held >= 1 as a divisor (the search spans 0, no vLLM); the rule holds only where it is
            divides(maximum(1, D["engines"]), D["actor_world"]) | divides(D["actor_world"], D["engines"]),
            "actor_world_size must be divisible by vllm_num_engines, got {actor_world} and {vllm_num_engines}",
            Stage.DRIVER, VALIDATE, when=D["engines"] >= 1,
        ),
        ACTOR_COVERS_CRITIC,
        Rule(
            "openrlhf.driver.packing_needs_vllm",
            D["engines"] >= 1,
            "--packing_samples is on but vllm_num_engines = {vllm_num_engines}: Only support `--packing_samples` "
            "with vLLM",
            Stage.DRIVER, "openrlhf/cli/train_ppo_ray.py (__main__ block)", when=V["packing_samples"],
            explanation="0.6.2 packs only when asked: ring attention does not switch packing on.",
        ),
    ),
    variables=OLD_DEFAULTS,
    sources=(("deepspeed 0.19.6", "deepspeed 0.16.4"),
             ("openrlhf/cli/train_ppo_ray.py (__main__ block, after parse_args)",
              "openrlhf/cli/train_ppo_ray.py (__main__ block)"),
             ("ppo_actor.py:PolicyModelActor", "ppo_actor.py:ActorModelRayActor"),
             ("ppo_critic.py:CriticModelActor", "ppo_critic.py:CriticModelRayActor"),
             ("launcher.py:ReferenceModelActor", "launcher.py:ReferenceModelRayActor"),
             ("launcher.py:RewardModelActor", "launcher.py:RewardModelRayActor")),
    summary="underscore flags (one --ref_reward_offload for both offloads); _validate_args checks "
            "rollout_batch_size against the actor's world, ZeRO-3 against vLLM, vllm_num_engines and the critic's world against the actor's; no async, dynamic batch or "
            "experience dispatch over the groups; micro_train_batch_size 4, micro_rollout_batch_size 8, "
            "vllm_gpu_memory_utilization 0.9 by default",
)

# 0.10.4 against 0.11.2: the same checks in the same files (train_ppo_ray, launcher, replay buffer, strategy);
# dr_grpo runs with n_samples_per_prompt = 1 (group_estimator: Release.group_estimators), no flash_reinforce
V0104 = Pack(
    "0.10.4", NEWEST,
    sources=(("deepspeed 0.19.6", "deepspeed 0.19.1"),),
    summary="0.11.2's checks; dr_grpo is not asked for n_samples_per_prompt > 1 and there is no flash_reinforce "
            "estimator; DeepSpeed 0.19.1",
)

# 0.9.10 against 0.10.4: the underscore flags, no over-sampling check, and dynamic batch fails differently
V0910 = Pack(
    "0.9.10", "0.10.4",
    drop=frozenset({
        "openrlhf.driver.legacy_flag_names",  # the underscore names are 0.9.10's own
        "openrlhf.driver.generate_batch_needs_async",  # 0.10 added the assert (0.9.10 accepts any generate batch)
    }),
    rules=tuple(
        Rule(
            f"openrlhf.dynamic.{g}_train_batch_covers_dp",
            (V["train_batch_size"] >= D[f"{g}_dp"]) | (D["rollout_samples"] < V["train_batch_size"]),
            f"with dynamic batch, train_batch_size // {g} dp = {{train_batch_size}} // {{{g}_dp}} = 0 with "
            "rollout_batch_size*n_samples_per_prompt = {rollout_samples} samples: every training step's slice is "
            "empty, no micro batch is made, and get_seqlen_balanced_partitions([], 0) stops with IndexError: list "
            "index out of range",
            Stage.FIRST_STEP, "openrlhf/trainer/ppo_utils/replay_buffer.py:NaiveReplayBuffer.setup_dynamic_batch "
            "(openrlhf/utils/seqlen_balancing.py:get_seqlen_balanced_partitions)",
            when=R._gate(g, V["dynamic_batch"]),
            explanation="0.10 divides by the per-rank batch instead (ZeroDivisionError) and clamps the steps.",
        ) for g in ("actor", "critic")) + (ONE_OFFLOAD_FLAG,),
    variables=(
        ("micro_train_batch_size", "train.micro_batch_size", "int", 4, False, "samples per forward/backward per GPU"),
        ("micro_rollout_batch_size", "rollout.micro_batch_size", "int", 8, False, "samples per experience batch"),
    ),
    sources=(("deepspeed 0.19.1", "deepspeed 0.18.9"),),
    summary="underscore flags (0.10.2 renamed them; one --ref_reward_offload for both offloads); no check of "
            "--vllm_generate_batch_size against --rollout_batch_size; with dynamic batch a per-rank training batch of 0 fails with IndexError, not "
            "ZeroDivisionError; micro_train_batch_size 4 and micro_rollout_batch_size 8 by default; DeepSpeed 0.18.9",
)

def _reworded(rule_id: str, message: str) -> Rule:
    """0.11.2's rule ``rule_id`` (same condition, stage and source) with an older release's message."""
    rule = next(r for r in R.RULESET.rules if r.id == rule_id)
    return replace(rule, message=message)


# 0.8.11 against 0.9.10: no --partial_rollout; the launcher asserts (not raises) that every rank gets a batch; the
# samples generator lives in experience_maker.py
V0811 = Pack(
    "0.8.11", "0.9.10",
    drop=frozenset({"openrlhf.driver.partial_rollout_needs_async"}),  # 0.9 added --partial_rollout
    rules=tuple(
        _reworded(f"openrlhf.launcher.{g}_batches_cover_group",
                  f"Total length {{sample_batches_ceil}} must be greater than or equal to effective actors "
                  f"{{{g}_dp}}: the {g} group's ranks each need one of the ceil(n_samples_per_prompt*"
                  "rollout_batch_size/micro_rollout_batch_size) experience batches (AssertionError)")
        for g in ("ref", "critic", "reward")),
    sources=(("deepspeed 0.18.9", "deepspeed 0.17.6"),
             ("openrlhf/trainer/ppo_utils/samples_generator.py:_dispatch_prompts_to_vllm",
              "openrlhf/trainer/ppo_utils/experience_maker.py:SamplesGenerator._generate_vllm")),
    summary="as 0.9.10, without --partial_rollout; the launcher's every-rank-gets-a-batch check is an assert "
            "(\"Total length N must be greater than or equal to effective actors M\"); DeepSpeed 0.17.6",
)

# 0.7.5 against 0.8.11 (openrlhf/cli/train_ppo_ray.py __main__ block and train()): no --async_train,
# --dynamic_filtering or --use_dynamic_batch; ring attention does not switch packing on; the sample-batch assert
# divides by ring_attn_size only; no vLLM engines -> NotImplementedError at the first rollout
MAIN_075 = "openrlhf/cli/train_ppo_ray.py (__main__ block, after parse_args)"
V075 = Pack(
    "0.7.5", "0.8.11",
    drop=frozenset({
        "openrlhf.driver.dynamic_filtering_needs_n", "openrlhf.driver.dynamic_filtering_needs_remote_reward",
        "openrlhf.driver.async_forbids_vllm_sleep",
        "openrlhf.dynamic.actor_train_batch_covers_dp", "openrlhf.dynamic.critic_train_batch_covers_dp",
    }),
    rules=(
        Rule(
            "openrlhf.driver.packing_needs_vllm",
            D["engines"] >= 1,
            "--packing_samples is on but vllm_num_engines = {vllm_num_engines}: Only support `--packing_samples` "
            "with vLLM (unset vllm_num_engines fails the same check with a TypeError)",
            Stage.DRIVER, MAIN_075, when=V["packing_samples"],
            explanation="0.7.5 packs only when asked: ring attention does not switch packing on (0.8 does).",
        ),
        Rule(
            "openrlhf.driver.sample_batches_cover_actor",
            D["sample_batches"] >= D["actor_world"] // V["ring_attn_size"],
            "n_samples_per_prompt*rollout_batch_size//micro_rollout_batch_size = {n}*{rollout_batch_size}//"
            "{micro_rollout_batch_size} = {sample_batches} is less than the effective actor processes "
            "actor_world//ring_attn_size = {actor_world}//{ring_attn_size}: The number of sample batches must be "
            "greater than or equal to the effective number of actor processes",
            Stage.DRIVER, MAIN_075,
            explanation="0.7.5 does not divide by ds_tensor_parallel_size here (0.8 does).",
        ),
        Rule(
            "openrlhf.vllm.engines_required",
            D["engines"] >= 1,
            "vllm_num_engines = {vllm_num_engines}: without vLLM engines the first rollout stops with "
            "NotImplementedError: HF generation is not implemented yet",
            Stage.FIRST_STEP, "openrlhf/trainer/ppo_utils/experience_maker.py:RemoteExperienceMaker._generate_with_hf",
            when=~V["packing_samples"],
            explanation="With --packing_samples the driver stops earlier (openrlhf.driver.packing_needs_vllm).",
        ),
    ),
    sources=(("deepspeed 0.17.6", "deepspeed 0.16.7"),
             ("ppo_actor.py:PolicyModelActor", "ppo_actor.py:ActorModelRayActor"),
             ("ppo_critic.py:CriticModelActor", "ppo_critic.py:CriticModelRayActor"),
             ("launcher.py:ReferenceModelActor", "launcher.py:ReferenceModelRayActor"),
             ("launcher.py:RewardModelActor", "launcher.py:RewardModelRayActor"),
             ("launcher.py:RayActorGroup", "launcher.py:PPORayActorGroup"),
             ("(RayActorGroup on", "(PPORayActorGroup on")),
    summary="as 0.8.11, without async training, dynamic filtering or dynamic batch; ring attention does not switch "
            "packing on; the sample-batch check divides the actor's world by ring_attn_size only; no vLLM engines "
            "fails at the first rollout (NotImplementedError); DeepSpeed 0.16.7, vLLM 0.8.5.post1",
)

# 0.5.9 against 0.6.2: the reference model always built, the vLLM check one way, RLOO the only group estimator,
# colocate_all_models's engine check only at the default memory share (which it then lowers to 0.4)
V059 = Pack(
    "0.5.9", "0.6.2",
    drop=frozenset({
        # no ring attention or DeepSpeed tensor parallel flag: setup_distributed builds no device mesh
        "openrlhf.deepspeed.actor_mesh", "openrlhf.deepspeed.ref_mesh", "openrlhf.deepspeed.critic_mesh",
        "openrlhf.deepspeed.reward_mesh",
    }),
    rules=(
        Rule(
            "openrlhf.driver.vllm_engines_match_actor_world",
            divides(maximum(1, D["engines"]), D["actor_world"]),  # held >= 1 as above
            "actor_world_size must be divisible by vllm_num_engines, got {actor_world} and {vllm_num_engines}",
            Stage.DRIVER, VALIDATE, when=D["engines"] >= 1,
        ),
        Rule(
            "openrlhf.colocate.actor_ref_same_size",
            V["actor_nnodes"].eq(V["ref_nnodes"]) & V["actor_gpus_per_node"].eq(V["ref_gpus_per_node"]),
            "colocating actor and reference needs the same layout: actor {actor_nnodes}x{actor_gpus_per_node} vs "
            "ref {ref_nnodes}x{ref_gpus_per_node} (num_nodes x num_gpus_per_node)",
            Stage.TRAINER_INIT, "openrlhf/cli/train_ppo_ray.py:train",
            when=V["colocate_actor_ref"] | V["colocate_all"],
            explanation="0.5.9 builds the reference group whatever the KL coefficient, and checks its layout.",
        ),
        Rule(
            "openrlhf.colocate.vllm_matches_actor",
            D["actor_world"].eq(D["vllm_gpus"]),
            "with --colocate_all_models and --vllm_gpu_memory_utilization {gmu_permille}/1000 (at least 0.9, "
            "lowered to 0.4), actor_num_nodes*actor_num_gpus_per_node = {actor_world} must equal "
            "vllm_num_engines*vllm_tensor_parallel_size = {engines}*{vllm_tp} = {vllm_gpus}",
            Stage.TRAINER_INIT, "openrlhf/cli/train_ppo_ray.py:train",
            when=V["colocate_all"] & (D["engines"] >= 1) & (V["gmu_permille"] >= 900),
            explanation="0.5.9 asserts it inside its `if args.vllm_gpu_memory_utilization >= 0.9` branch only.",
        ),
    ),
    sources=(("deepspeed 0.16.4", "deepspeed 0.16.3"),),
    summary="as 0.6.2, but the reference model always runs; actor_world % vllm_num_engines == 0 (not either way); "
            "only rloo needs n > 1; with colocate_all_models a vLLM share of 0.9 or more is lowered to 0.4 and only "
            "then is the engines' size checked; no ring attention; log-probs of fp32 logits without flash-attn's "
            "cross-entropy (models/utils.py log_probs_from_logits)",
)

# 0.4.0 against 0.5.9: PPO only, no colocate_all_models, no packing; powers of two instead of the rollout check
V040 = Pack(
    "0.4.0", "0.5.9",
    drop=frozenset({
        "openrlhf.driver.rollout_divisible_by_actor_world", "openrlhf.driver.vllm_engines_match_actor_world",
        "openrlhf.driver.group_estimator_needs_n", "openrlhf.driver.packing_needs_vllm",
        "openrlhf.colocate.vllm_matches_actor", "openrlhf.colocate.critic_fits_actor_bundles",
        "openrlhf.colocate.reward_fits_actor_bundles",
    }),
    rules=(
        Rule(
            "openrlhf.driver.vllm_num_engines_required",
            is_set("vllm_num_engines"),
            "--vllm_num_engines is not set: the __main__ block compares it with 1 (`if args.vllm_num_engines >= 1 "
            "and args.n_samples_per_prompt > 1`) and stops with TypeError: '>=' not supported between instances of "
            "'NoneType' and 'int'",
            Stage.DRIVER, "openrlhf/cli/train_ppo_ray.py (__main__ block)",
            explanation="Its default is None; give --vllm_num_engines (0: the actor generates, without vLLM).",
        ),
        Rule(
            "openrlhf.driver.actor_world_power_of_two",
            divides(D["actor_world"], 1 << 20),
            "actor_world_size must be power of 2, got {actor_world}",
            Stage.DRIVER, VALIDATE,
        ),
        Rule(
            "openrlhf.driver.critic_world_power_of_two",
            divides(D["critic_world"], 1 << 20),
            "critic_world_size must be power of 2, got {critic_world}",
            Stage.DRIVER, VALIDATE,
        ),
        Rule(
            "openrlhf.driver.actor_world_divisible_by_critic_world",
            divides(D["critic_world"], D["actor_world"]),
            "actor_world_size must be divisible by critic_world_size, got {actor_world} and {critic_world}",
            Stage.DRIVER, VALIDATE,
        ),
    ),
    sources=(("deepspeed 0.16.3", "deepspeed 0.14.4"),
             ("openrlhf/utils/deepspeed/deepspeed.py", "openrlhf/utils/deepspeed.py")),
    summary="PPO only (a critic and a reference model always run); _validate_args asks for actor and critic world "
            "sizes that are powers of two, the actor's a multiple of the critic's, and ZeRO-3 with vLLM; DeepSpeed "
            "accumulates gradients in fp32 (ZeRO-1: unpartitioned fp32 gradients)",
)
PACKS = {p.version: p for p in (V0104, V0910, V0811, V075, V062, V059, V040)}


@functools.lru_cache(maxsize=None)
def _in_dotted_names(version: str) -> RuleSet:
    """A release's rules with their messages in 0.11.2's flag names (the packs are written so)."""
    if version == NEWEST:
        return R.RULESET
    pack = PACKS[version]
    base = _in_dotted_names(pack.edits)
    rules = R.gated(edit_rules(base.rules, drop=pack.drop, new=pack.rules, sources=pack.sources,
                               release=(f"OpenRLHF {pack.edits}", f"OpenRLHF {version}")))
    return RuleSet("openrlhf", version, edit_variables(base.variables, pack.variables),
                   edit_derived(base.derived, pack.derived), rules)


@functools.lru_cache(maxsize=None)
def ruleset_for(version: str) -> RuleSet:
    """The rules of an OpenRLHF release we follow, their messages naming its own flags (names.spelled: a release
    before 0.10.2 reads --train_batch_size, not --train.batch_size); train_ppo_ray's own checks off under the
    non-Ray launcher (rules.ray_only)."""
    rs = _in_dotted_names(version)
    if dotted_names(version):
        return rs
    rules = [replace(r, message=spelled(r.message, version), explanation=spelled(r.explanation, version),
                     tolerance_message=spelled(r.tolerance_message, version)) for r in rs.rules]
    return RuleSet(rs.framework, rs.version, rs.variables, rs.derived, rules)


def changes(version: str) -> dict[str, list[tuple[str, str]]]:
    """What a release's rules do differently from 0.11.2's: {"absent", "added", "changed"} -> (rule id, source)."""
    return rule_changes(R.RULESET.rules, ruleset_for(version).rules)


# ---------------------------------------------------------------------------------------------- dating
ALL_FLAGS = frozenset().union(*RELEASE_FLAGS.values())


def _plain(keys: Iterable[str]) -> list[str]:
    return sorted({k[2:] if k.startswith("--") else k for k in keys})


ESTIMATOR_FLAGS = ("advantage_estimator", "algo.advantage.estimator")  # before 0.10.2 / from it


def _estimator(flat: Mapping[str, object]) -> str | None:
    """The advantage estimator a config names (either spelling), if any."""
    for key in ESTIMATOR_FLAGS:
        for k in (key, f"--{key}"):
            if k in flat and flat[k] is not None:
                return str(flat[k]).strip().lower()
    return None


def detect(flat: Mapping[str, object]) -> tuple[str | None, str]:
    """The release a config's flags date it to (``dating.dated``, the policy of TRL and ms-swift: the newest when its
    train_ppo_ray has every flag the config sets that not all releases have, else the oldest that has them all and
    takes its advantage estimator), and why; (None, why) when nothing dates the config or no release has them all."""
    keys = [k for k in _plain(flat) if k in ALL_FLAGS]
    dating = [k for k in keys if not all(k in f for f in RELEASE_FLAGS.values())]
    # those the newest release lacks first: they are why the config is not dated to it, and the why names them
    dating.sort(key=lambda k: k in RELEASE_FLAGS[NEWEST])
    if not dating:
        return None, "no flag of the config is specific to an OpenRLHF release"
    estimator = _estimator(flat)
    flagged = [v for v, f in RELEASE_FLAGS.items() if all(k in f for k in dating)]
    have = [v for v in flagged if estimator is None or estimator in RELEASES[v].estimators]
    known = ", ".join(sorted(RELEASE_FLAGS, key=release_numbers))
    # the estimator's value is named where it narrows the releases the flags give (a value only some releases take)
    shown = listed([f"{k}={estimator}" if k in ESTIMATOR_FLAGS and have != flagged else k for k in dating])
    if have:  # the flags that rule the other releases out first (the note shows the first few)
        dating = _deciding_first(dating, [v for v in RELEASE_FLAGS if v not in have])
        shown = listed([f"{k}={estimator}" if k in ESTIMATOR_FLAGS and have != flagged else k for k in dating])
    if flagged and not have:
        return None, (f"its flags ({listed(dating)}) are those of {span(flagged, NAME)}, none of which has the "
                      f"advantage estimator {estimator}")
    if not have:
        lacks = {v: tuple(k for k in dating if k not in f) for v, f in RELEASE_FLAGS.items()}
        fewest = min(len(m) for m in lacks.values())
        near = sorted((v for v, m in lacks.items() if len(m) == fewest), key=release_numbers, reverse=True)
        groups: dict[tuple[str, ...], list[str]] = {}
        for v in near:
            groups.setdefault(lacks[v], []).append(v)
        nearest = "; ".join(f"{', '.join(vs)} (no {', '.join('--' + k for k in m)})" for m, vs in groups.items())
        return None, f"no release of those whose flags we know ({known}) has every flag it sets; nearest: {nearest}"
    return dated(have, NEWEST, NAME, shown)


def _deciding_first(flags: list[str], others: list[str]) -> list[str]:
    """``flags`` with those that rule out the releases ``others`` first, fewest of them (greedily, each ruling out
    the most of those left; a release lacking a flag the config sets cannot run it): the gspo example's
    --policy_loss_type (not before 0.8, gone in 0.10.2) and --prompt_max_len (not in 0.9.10) date it to 0.8.11, where
    the note named --actor_learning_rate, --actor_num_gpus_per_node ... (alphabetically first, every release before
    0.10.2 has them)."""
    left, first = set(others), []
    while left:
        best = max(flags, key=lambda k: (sum(k not in RELEASE_FLAGS[v] for v in left), -flags.index(k)))
        ruled = {v for v in left if best not in RELEASE_FLAGS[v]}
        if not ruled:
            break
        first.append(best)
        left -= ruled
    return first + [k for k in flags if k not in first]


def upgrade_note(version: str, flat: Mapping[str, object]) -> str:
    """What breaks when this config, written for ``version``, runs on the newest release we follow."""
    old = [k for k in _plain(flat) if k in ALL_FLAGS and k not in RELEASE_FLAGS[NEWEST]]
    renamed, removed = [k for k in old if "." not in k], [k for k in old if "." in k]
    parts = []
    if renamed:
        parts.append(f"{_flags_shown(renamed)} {'is' if len(renamed) == 1 else 'are'} not a flag there (0.10.2 "
                     "renamed them to dotted names: --train.micro_batch_size for --micro_train_batch_size, and so on)")
    if removed:  # a dotted flag a later release took out (0.11.2's --algo.advantage.is_correction_enable)
        parts.append(f"{_flags_shown(removed)} {'is' if len(removed) == 1 else 'are'} not a flag there "
                     f"({_removed_by(removed)})")
    what = "; ".join(parts) if parts else "its flags are accepted"
    here, there = ruleset_for(version).variables, R.RULESET.variables
    changed = [f"{there[n].key} {_shown_default(n, there[n].default)}" for n in DEFAULTS_THAT_MOVED
               if here[n].default != there[n].default]
    return f"upgrade: on OpenRLHF {NEWEST} {what}" + (f"; its defaults differ too ({', '.join(changed)})"
                                                      if changed else "")


def _flags_shown(flags: list[str]) -> str:
    return ", ".join(f"--{k}" for k in flags[:4]) + (" ..." if len(flags) > 4 else "")


def _removed_by(flags: list[str]) -> str:
    """Which release took dotted flags out, and the flags of the same name it added (release_flags.CHANGES): "0.11.2
    removed them; it has --algo.advantage.is_correction_gating, ... instead"."""
    from .release_flags import CHANGES

    said = []
    for release, (added, gone) in CHANGES.items():
        out = [k for k in flags if k in gone.split()]
        if not out:
            continue
        stems = {k.rsplit("_", 1)[0] + "_" if "_" in k.rsplit(".", 1)[-1] else k.rsplit(".", 1)[0] + "." for k in out}
        new = [k for k in added.split() if any(k.startswith(stem) for stem in stems)]
        said.append(f"{release} removed {'it' if len(out) == 1 else 'them'}"
                    + (f"; it has {_flags_shown(new)} instead" if new else ""))
    return "; ".join(said) or "a later release removed them"


# the argparse defaults that decide memory and changed between releases (OLD_DEFAULTS)
DEFAULTS_THAT_MOVED = ("micro_train_batch_size", "micro_rollout_batch_size", "gmu_permille")


def _shown_default(name: str, value: int) -> str:
    return f"{value / 1000:g}" if name == "gmu_permille" else str(value)

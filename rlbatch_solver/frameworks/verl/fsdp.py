"""verl config import and export (FSDP/FSDP2 and Megatron backends).

Import: a flat dict of Hydra keys (from pasted overrides or a YAML file) ->
values of the rule variables in ``rules.py`` / ``rules_megatron.py``,
with verl 0.9.1's defaults (and its interpolations, e.g.
``critic.ppo_mini_batch_size`` follows the actor's) where a key is absent. The
backend is Megatron when the config says ``actor_rollout_ref.actor.strategy=
megatron``, ``model_engine=megatron`` or ``--config-name=ppo_megatron_trainer``.

Export: a solution -> paste-ready Hydra overrides and a YAML fragment.

``VerlFramework`` (``--framework verl``) checks either backend with
``rules_megatron.ANY_RULESET`` and searches the FSDP one;
``megatron.py`` searches the Megatron one.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

from typing import Any, Mapping, Sequence

import yaml

from ..entry_words import FULLY_ASYNC_ENTRY, ONE_STEP_OFF_ENTRY
from ... import safe_input
from ...catalog.models import ModelCard
from ...errors import InputError, did_you_mean
from ...identity_cache import by_identity
from ...release_numbers import release_numbers
from ...rules.base import Rule, RuleSet, Value, VarSpec
from ...rules.expr import BoolVar, IntVar
from ...rules.base import is_set
from ...rules.ids import tie_rule
from . import columns, docs, errors, repair, struct_keys, versions
from .rules import AR, FSDP_VARS, RULESET, VARIABLES  # noqa: F401 - VARIABLES re-exported (FSDP variables)
from .rules_megatron import ANY_RULESET, MEGATRON_VARS
from ..key_names import KeyList
from ..base import LORA_RANK, Framework, Space, attention_constants, batches_for_gpus, divisors, of_absent_model, pow2
from ..overrides import AddedKey, group_override, hydra_bool, memory_share_permille, parse_hydra_overrides, parse_scalar, resolve_algorithm, whole_number, written_key

# algorithm.adv_estimator values of verl 0.9.1 (trainer/ppo/core_algos.py:AdvantageEstimator)
# that compare responses within a group of n, so n > 1 is required for a signal.
GROUP_ESTIMATORS = {
    "grpo", "grpo_passk", "grpo_vectorized", "gdpo", "rloo", "rloo_vectorized", "opo", "gpg",
    "optimal_token_baseline", "tir_optimal_token_baseline", "reinforce_plus_plus_baseline",
}
KNOWN_ESTIMATORS = GROUP_ESTIMATORS | {"gae", "reinforce_plus_plus", "remax"}

# What each --algo sets in verl, as the official examples do (examples/*_trainer/*.sh of verl v0.9.0).
ALGORITHMS: dict[str, dict[str, Any]] = {
    "ppo": {"algorithm.adv_estimator": "gae", f"{AR}.actor.use_kl_loss": False, "algorithm.use_kl_in_reward": False},
    "grpo": {"algorithm.adv_estimator": "grpo", f"{AR}.actor.use_kl_loss": True},
    # DAPO: GRPO advantages, no KL, decoupled clip (recipe/dapo): batch rules are GRPO's
    "dapo": {"algorithm.adv_estimator": "grpo", f"{AR}.actor.use_kl_loss": False, "algorithm.use_kl_in_reward": False},
    # GSPO: GRPO advantages with sequence-level ratios (actor.policy_loss.loss_mode=gspo), no KL
    "gspo": {"algorithm.adv_estimator": "grpo", f"{AR}.actor.use_kl_loss": False,
             f"{AR}.actor.policy_loss.loss_mode": "gspo"},
    # ADPO: verl 0.9.1 has no "adpo" estimator. The ADPO implementation on verl (a fork with its own
    # main_adpo entry point) computes group-relative anchored advantages like GRPO, uses the old-policy
    # log-probs as its anchor and no reference model (adpo_trainer.yaml: use_kl_in_reward False, no KL loss):
    # on verl 0.9.1's batch rules that is GRPO without KL.
    "adpo": {"algorithm.adv_estimator": "grpo", f"{AR}.actor.use_kl_loss": False, "algorithm.use_kl_in_reward": False},
    # RLOO and REINFORCE++: KL in the reward, not as a loss (examples/rloo_trainer, reinforce_plus_plus_trainer)
    "rloo": {"algorithm.adv_estimator": "rloo", f"{AR}.actor.use_kl_loss": False, "algorithm.use_kl_in_reward": True},
    "reinforce++": {"algorithm.adv_estimator": "reinforce_plus_plus", f"{AR}.actor.use_kl_loss": False,
                    "algorithm.use_kl_in_reward": True},
}
ALGORITHM_ALIASES = {"reinforce_plus_plus": "reinforce++", "reinforcepp": "reinforce++"}
# an --algo verl's main_ppo has no estimator or loss of its own for: what the printed command runs instead, said beside
# the answer (its header names the --algo, its command another estimator)
ALGORITHM_NOTES = {
    "adpo": ("adpo: verl has no adpo estimator (ADPO runs from its own fork's main_adpo); the command runs verl's "
             "nearest, algorithm.adv_estimator=grpo without KL (ADPO's group-relative advantages anchored on the "
             "old policy, no reference model: adpo_trainer.yaml), whose batch rules and cost are ADPO's"),
    # recipe/dapo's dapo_trainer.yaml (composed by recipe.dapo.main_dapo): algorithm.filter_groups.*, data.gen_batch_size
    "dapo": ("dapo: the command runs verl's main_ppo with algorithm.adv_estimator=grpo without KL; DAPO's recipe "
             "(recipe.dapo.main_dapo) adds dynamic sampling (algorithm.filter_groups.*, data.gen_batch_size: more "
             "generation where groups are filtered out) and overlong reward shaping, which this answer does not price"),
}

# Keys whose absent value follows another key (verl 0.9.1's yaml interpolations).
INTERPOLATED = {
    "logprob_dyn": "actor_dyn",
    "logprob_max_tokens": "actor_max_tokens",
    "ref_dyn": "actor_dyn",
    "ref_max_tokens": "actor_max_tokens",
    "ref_sp": "actor_sp",
    "critic_mini": "actor_mini",
    "critic_epochs": "actor_epochs",  # critic.yaml: ppo_epochs: ${oc.select:actor_rollout_ref.actor.ppo_epochs,1}
    "critic_dyn": "actor_dyn",
    # critic yaml: ppo_micro_batch_size_per_gpu: ${oc.select:.ppo_micro_batch_size,null}
    "critic_micro_per_gpu": "critic_micro",
    # ref/megatron_ref.yaml: every parallel size follows the actor's
    "ref_tp": "tp", "ref_pp": "pp", "ref_cp": "cp", "ref_ep": "ep", "ref_etp": "etp", "ref_vpp": "vpp",
    "ref_megatron_param_offload": "megatron_param_offload",
}

# Variables not read from a key: the algorithm decides the flags, the model card the constants.
DECIDED_BY_TOOL = {"need_critic", "need_ref", "group_estimator", "num_heads", "num_kv_heads",
                   "intermediate_size", "max_position_embeddings", "num_layers", "num_experts", "entropy_loss"}

_ALIAS_KEYS = {  # older or alternative spellings users paste
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_device": f"{AR}.actor.ppo_micro_batch_size_per_gpu",
}

STRATEGY_KEY = f"{AR}.actor.strategy"
MEGATRON_ONLY = {name for name, *_ in MEGATRON_VARS}
FSDP_ONLY = {name for name, *_ in FSDP_VARS}


def canonical_algorithm(name: str) -> str:
    return resolve_algorithm(name, ALGORITHM_ALIASES, ALGORITHMS)


def _need_flags(flat: Mapping[str, Any]) -> dict[str, bool]:
    """need_critic / need_ref / group_estimator as verl's trainer decides them.

    Source: verl/trainer/ppo/utils.py need_critic (critic.enable, else adv_estimator == gae)
    and need_reference_policy (use_kl_in_reward or actor.use_kl_loss).
    """
    est = str(flat.get("algorithm.adv_estimator", "gae"))
    if est not in KNOWN_ESTIMATORS:
        raise InputError(
            "algorithm.adv_estimator",
            f"'{est}' is not an advantage estimator of verl.{did_you_mean(est, KNOWN_ESTIMATORS)}",
            f"use one of: {', '.join(sorted(KNOWN_ESTIMATORS))}.",
        )
    enable = flat.get("critic.enable")
    need_critic = bool(enable) if enable is not None else est == "gae"
    need_ref = bool(flat.get("algorithm.use_kl_in_reward", False)) or bool(flat.get(f"{AR}.actor.use_kl_loss", False))
    return {"need_critic": need_critic, "need_ref": need_ref, "group_estimator": est in GROUP_ESTIMATORS}


ENTROPY_COEFF_KEY = f"{AR}.actor.entropy_coeff"


def entropy_in_loss(flat: Mapping[str, Any]) -> bool:
    """Whether the actor's update computes the entropy (with its gradient): ``actor.entropy_coeff`` is not 0
    (default 0 from verl 0.4) or ``actor.calculate_entropy`` (0.9.1) asks for it (verl 0.6.1
    verl/workers/actor/dp_actor.py DataParallelPPOActor.update_policy; 0.9.1 verl/trainer/ppo/ray_trainer.py
    RayPPOTrainer._update_actor)."""
    raw = flat.get(ENTROPY_COEFF_KEY, 0)
    try:
        coeff = float(raw if raw is not None else 0)
    except (TypeError, ValueError):
        raise InputError(ENTROPY_COEFF_KEY, f"'{raw}' is not a number.",
                         f"write {ENTROPY_COEFF_KEY}=0 (no entropy bonus) or a coefficient such as 0.001.") from None
    asked = flat.get(f"{AR}.actor.calculate_entropy")
    return coeff != 0 or (asked is not None and hydra_bool(f"{AR}.actor.calculate_entropy", asked))


# verl's trainer config picks each role's config group option by its model_engine (0.9.0 and 0.9.1
# verl/trainer/config/ppo_trainer.yaml defaults: "actor@actor_rollout_ref.actor: ${model_engine}_actor",
# "ref@actor_rollout_ref.ref: ${model_engine}_ref", "critic@critic: ${model_engine}_critic"); an override of one of
# those entries picks another option for that role. Its key is the entry's group@package, or the group alone where
# the package is the group's own (critic=...): hydra/core/default_element.py GroupDefault.get_override_key.
ROLE_GROUPS = {"actor@actor_rollout_ref.actor": "actor", "ref@actor_rollout_ref.ref": "ref", "critic": "critic"}
ACTOR_GROUP = "actor@actor_rollout_ref.actor"
# the model_engine options we model, and the backend each is (the actor's option sets actor.strategy:
# actor/dp_actor.yaml "strategy: fsdp", actor/megatron_actor.yaml "strategy: megatron")
MODELLED_ENGINES = {"dp": False, "megatron": True}
# the model_engine group's other options in verl's own releases (0.9.0 verl/trainer/config/model_engine/: mindspeed,
# torchtitan, veomni; 0.9.1: torchtitan, veomni): valid, not modelled
OTHER_ENGINES = ("mindspeed", "torchtitan", "veomni")


class ByConfigName(str):
    """model_engine=megatron as ``--config-name=ppo_megatron_trainer`` implies it (not written by the user): no
    override of the model_engine group, so no release lacking that group refuses it (``check_groups``)."""


def check_groups(flat: Mapping[str, Any], release: str) -> None:
    """Refuse, as the release's Hydra does at launch, a config group override it cannot apply: a group@package key
    its defaults list lacks ("Could not override '<key>'. No match in the defaults list."), model_engine where the
    release has no such group ("Key 'model_engine' is not in struct": 0.6.1 and older), and a model_engine or role
    option the release's wheel does not ship (its verl/trainer/config/<group>/ folder: versions.MODEL_ENGINES,
    ROLE_ENGINES), unless the config names a hydra.searchpath, where the option may come from. A key written with
    "+" appends a defaults entry: Hydra takes it."""
    entries = versions.DEFAULTS_GROUP_KEYS.get(release)
    if entries is None:
        return
    searchpath = any(str(k).startswith("hydra.searchpath") for k in flat)
    valid = ", ".join(sorted(entries)) or "none (its trainer config has no defaults list)"
    for key in flat:
        text = str(key)
        if isinstance(key, AddedKey) or not group_override(text) or text in entries:
            continue
        near = did_you_mean(text, sorted(entries))
        raise InputError(text, f"verl {release} cannot apply this override: its trainer config's defaults list has no "
                         f"'{text}' entry (Hydra: \"Could not override '{text}'. No match in the defaults list.\").{near}",
                         f"the groups verl {release} lets an override pick: {valid}; +{text}=... appends an entry.")
    engine = flat.get("model_engine")
    if engine is not None and not isinstance(engine, ByConfigName) and not any(
            isinstance(k, AddedKey) and str(k) == "model_engine" for k in flat):
        engines = versions.MODEL_ENGINES.get(release)
        if engines is None:
            raise InputError("model_engine", f"verl {release} has no model_engine config group (Hydra: \"Key "
                             "'model_engine' is not in struct\"; verl/trainer/config/model_engine/ comes with 0.7).",
                             f"pick the backend with {STRATEGY_KEY} (fsdp, fsdp2, megatron) or "
                             "--config-name=ppo_megatron_trainer.")
        if str(engine) not in engines and not searchpath:
            raise InputError("model_engine", f"'{engine}' is not a model_engine option of verl {release} (its "
                             f"verl/trainer/config/model_engine/: {', '.join(engines)}).",
                             f"use one of {', '.join(engines)}, or name the run's hydra.searchpath that holds it.")
    engines = versions.ROLE_ENGINES.get(release, ())
    for key, role in ROLE_GROUPS.items():
        option = flat.get(key)
        if option is None or searchpath or not (key in entries or (key == "critic" and entries)):
            continue
        options = [f"{e}_{role}" for e in engines]
        if str(option) not in options and "${" not in str(option):
            raise InputError(key, f"'{option}' is not an option of verl {release}'s {role} config group (its "
                             f"verl/trainer/config/{role}/: {', '.join(options)}).{did_you_mean(str(option), options)}",
                             f"use one of {', '.join(options)}, or name the run's hydra.searchpath that holds it.")


def group_choices(flat: Mapping[str, Any]) -> dict[str, str]:
    """The config group options a config picks (``group@package=option``, ``group/sub=option``, and ``critic=``):
    key -> option, as written."""
    return {str(k): str(v) for k, v in flat.items() if group_override(str(k).lstrip("+")) or str(k) in ROLE_GROUPS}


def _role_backend(key: str, option: str) -> bool | None:
    """The backend a role's option is (Megatron True, FSDP False), where it is one we model; None else."""
    role = ROLE_GROUPS.get(key)
    if role is None:
        return None
    return next((mega for engine, mega in MODELLED_ENGINES.items() if option == f"{engine}_{role}"), None)


def groups_not_modelled(flat: Mapping[str, Any]) -> list[str]:
    """The group options a config picks that we do not model (``key=option`` each): another engine for a role
    (actor@actor_rollout_ref.actor=mlite_actor, found on a Hydra search path), a role's option at odds with the
    actor's backend, any other group (model@actor_rollout_ref.model=...), and a model_engine of verl's we do not model
    (torchtitan)."""
    engine = flat.get("model_engine")
    out = [f"model_engine={engine}"] if engine is not None and str(engine) in OTHER_ENGINES else []
    megatron = is_megatron(flat)
    for key, option in group_choices(flat).items():
        if _role_backend(key.lstrip("+"), option) != megatron:
            out.append(f"{key}={option}")
    return out


def _unmodelled(key: str, option: str) -> bool:
    """Whether a pick (``key=option``) is an engine whose training backend we do not model: a model_engine of verl's
    we do not model (torchtitan), or a role's option that is neither dp_<role> nor megatron_<role> (Megatron Lite's
    mlite_actor). A role's modelled option at odds with the actor's backend is not one (``groups_not_modelled``)."""
    key = key.lstrip("+")
    if key == "model_engine":
        return option in OTHER_ENGINES
    return key in ROLE_GROUPS and _role_backend(key, option) is None


def unmodelled_engine(flat: Mapping[str, Any]) -> str | None:
    """The engine option a config picks whose training backend we do not model (model_engine=torchtitan, or a role's
    option such as Megatron Lite's mlite_actor): memory and time are not priced for it (its memory is not FSDP's);
    None where every role runs an engine we model."""
    engine = flat.get("model_engine")
    if engine is not None and _unmodelled("model_engine", str(engine)):
        return f"model_engine={engine}"
    return next((f"{key}={option}" for key, option in group_choices(flat).items() if _unmodelled(key, option)), None)


def group_notes(flat: Mapping[str, Any], priced: bool, release: str = versions.NEWEST) -> list[str]:
    """What ``check`` says of each config group option a config picks that we do not model: its key and option,
    the options we do model, and how the config is read instead (``is_megatron``'s backend)."""
    from ..base import priced_words

    out = []
    backend = "Megatron" if is_megatron(flat) else "FSDP"
    for picked in groups_not_modelled(flat):
        key, _, option = picked.partition("=")
        role = ROLE_GROUPS.get(key.lstrip("+"))
        if key == "model_engine":
            what = f"verl's {option} engine is not modelled (we model model_engine=dp, FSDP, and megatron)"
        elif role is not None:
            beside = "" if role == "actor" else f" beside the {backend} actor"
            what = (f"the {role} config group's option {option} is not modelled{beside} (we model dp_{role}, FSDP, "
                    f"and megatron_{role}, Megatron, each with the actor's own; an option verl lacks comes from the "
                    "run's hydra.searchpath)")
        else:
            what = (f"a config group option ({key.lstrip('+').partition('@')[0]}: {option}) that is not modelled: the "
                    "keys it brings are not read")
        tail = ("memory and time are not evaluated for an engine we do not model" if _unmodelled(key, option) else
                f"memory and time {priced_words(priced, plural=True)} as {backend} training")
        out.append(f"{picked}: {what}; the batch sizes are checked with verl's {backend} rules, and {tail}")
    mixed = _engine_beside_actor(flat, priced, release)
    if mixed:
        out.append(mixed)
    return out


# the first release whose trainer runs the engine workers only (verl/trainer/main_ppo.py; 0.7.1's picks its legacy
# workers unless trainer.use_legacy_worker_impl=disable)
ENGINE_WORKERS_ONLY = "0.8.0"
_ROLE_WORDS = {"ref": "the reference model (where KL is used)", "critic": "the critic (where the algorithm trains one)"}


def _engine_beside_actor(flat: Mapping[str, Any], priced: bool, release: str = versions.NEWEST) -> str | None:
    """A model_engine (written, or by ``--config-name=ppo_megatron_trainer``) whose backend is not the one the config's
    actor option picks (model_engine=megatron with actor@actor_rollout_ref.actor=dp_actor): verl's trainer config
    picks the roles it does not override from model_engine (0.7.1-0.9.1 ppo_trainer.yaml defaults:
    ``ref@actor_rollout_ref.ref: ${model_engine}_ref``, ``critic@critic: ${model_engine}_critic``), so the reference
    model and the critic get the other backend's config (megatron_ref.yaml, megatron_critic.yaml: strategy megatron),
    and 0.8-0.9's engine workers build each role on its own config's strategy (workers/engine_workers.py
    TrainingWorker: ``EngineRegistry.new(backend=self.engine_config.strategy)``): a run of two backends we price as
    the actor's. 0.7.1 runs its legacy workers by default (main_ppo.py TaskRunner: ``trainer.use_legacy_worker_impl``
    auto; only ``disable`` takes the engine workers): its critic follows critic.strategy (add_critic_worker) but its
    reference model is a worker of the actor's class (add_ref_policy_worker: ``ref_policy_cls`` is the actor's
    worker), which reads the ref config's section of the actor's backend (megatron_workers.py ActorRolloutRefWorker
    ``config.ref.megatron``; fsdp_workers.py ``config.ref.fsdp_config``) that the other backend's ref config lacks
    (dp_ref.yaml has no megatron, megatron_ref.yaml no fsdp_config). None where they agree, or no model_engine is
    given."""
    from ..base import priced_words

    engine = flat.get("model_engine")
    actor = flat.get(ACTOR_GROUP, flat.get("+" + ACTOR_GROUP))
    if engine is None or actor is None or str(engine) not in MODELLED_ENGINES:
        return None
    by_actor = _role_backend(ACTOR_GROUP, str(actor))
    if by_actor is None or by_actor == MODELLED_ENGINES[str(engine)]:
        return None
    picked = {k.lstrip("+") for k in group_choices(flat)}
    left = [role for key, role in ROLE_GROUPS.items() if role != "actor" and key not in picked]
    if not left:
        return None
    roles = [f"{role}: {engine}_{role}" for role in left]
    backend, other = ("Megatron", "FSDP") if by_actor else ("FSDP", "Megatron")
    how = "--config-name=ppo_megatron_trainer" if isinstance(engine, ByConfigName) else f"model_engine={engine}"
    legacy = (release_numbers(release) < release_numbers(ENGINE_WORKERS_ONLY)
              and str(flat.get("trainer.use_legacy_worker_impl", "auto")) != "disable")
    beside = [role for role in left if not (legacy and role == "ref")]
    said = ""
    if beside:
        who = " and ".join(_ROLE_WORDS[role] for role in beside)
        said = f", so {who} run{'s' if len(beside) == 1 else ''} {other} beside it"
    if legacy and "ref" in left:
        section = "megatron" if by_actor else "fsdp_config"
        said += (f"{'; and' if beside else ':'} verl {release}'s legacy workers (trainer.use_legacy_worker_impl=auto, "
                 f"the default) build the reference model (where KL is used) in the actor's {backend} worker, which "
                 f"reads actor_rollout_ref.ref.{section}: {engine}_ref has none, so the launch most likely stops "
                 f"there (trainer.use_legacy_worker_impl=disable builds it on {other}, as 0.8.0 on does)")
    return (f"{how} with {ACTOR_GROUP}={actor}: the actor trains with {backend}, but verl picks the roles the config "
            f"does not override from model_engine ({', '.join(roles)}){said}; the batch sizes are checked with "
            f"verl's {backend} rules, and memory and time {priced_words(priced, plural=True)} as {backend} training "
            f"throughout. To run one backend, drop {how} (or "
            f"pick the roles' {'megatron' if by_actor else 'dp'}_ options too)")


def is_megatron(flat: Mapping[str, Any]) -> bool:
    """The training backend a verl config selects (actor.strategy, else the actor's config group option, else
    model_engine; default FSDP). An option we do not model (another engine's: ``groups_not_modelled``) is read as
    the default, FSDP."""
    engine = flat.get("model_engine")
    by_engine = None
    if engine is not None:
        if str(engine) not in MODELLED_ENGINES and str(engine) not in OTHER_ENGINES:
            raise InputError("model_engine", f"'{engine}' is not modelled.{did_you_mean(str(engine), ('dp', 'megatron'))}",
                             "use model_engine=dp (FSDP) or model_engine=megatron.")
        by_engine = MODELLED_ENGINES.get(str(engine))
    picked = f"model_engine={engine}"
    actor = flat.get(ACTOR_GROUP, flat.get("+" + ACTOR_GROUP))
    by_group = _role_backend(ACTOR_GROUP, str(actor)) if actor is not None else None
    if by_group is not None:  # the override of the actor's entry beats the option model_engine picks for it
        picked, by_engine = f"{ACTOR_GROUP}={actor}", by_group
    strategy = flat.get(STRATEGY_KEY)
    if strategy is None:
        return bool(by_engine)
    by_strategy = _strategy(strategy)
    if by_engine is not None and by_engine != by_strategy:
        raise InputError(STRATEGY_KEY, f"'{strategy}' contradicts {picked}.",
                         "set model_engine=megatron for Megatron (it sets the strategy), or drop one of them.")
    return by_strategy


def _strategy(value: Any) -> bool:
    text = str(value).lower()
    if text not in ("fsdp", "fsdp2", "megatron"):
        raise InputError(STRATEGY_KEY, f"strategy '{value}' is not modelled.{did_you_mean(text, ('fsdp', 'fsdp2', 'megatron'))}",
                         "use fsdp, fsdp2 or megatron.")
    return text == "megatron"


ROLLOUT_ENGINES = ("vllm", "sglang")
_ZERO_OK = {"fsdp_size"}
_ZERO_ALLOWED = {"rollout_nnodes", "fa_train_batch"}  # 0 is their default (no standalone pool; fully_async's batch)
TRAINER_MODES = {"sync": 0, "colocate_async": 1, "separate_async": 2}
CKPT_BACKENDS = ("naive", "nccl", "nixl", "mooncake", "hccl")
# model.fused_kernel_options.impl_backend values verl patches the forward for (0.9.1 monkey_patch.py
# patch_forward_with_backends; liger from 0.9.1, torch and triton from 0.4.1)
FUSED_BACKENDS = ("torch", "triton", "liger")

# The fully_async recipe (python -m verl.experimental.fully_async_policy.fully_async_main, its own
# fully_async_ppo_trainer.yaml): keys of its own that stand for the v1 trainer's, and the defaults its yaml changes.
# fully_async_main.py main copies rollout.nnodes / n_gpus_per_node into actor_rollout_ref.rollout.
FULLY_ASYNC_KEYS = {
    "rollout.nnodes": f"{AR}.rollout.nnodes",
    "rollout.n_gpus_per_node": f"{AR}.rollout.n_gpus_per_node",
    "async_training.trigger_parameter_sync_step": "trainer.v1.separate_async.parameter_sync_step",
}
FULLY_ASYNC_DEFAULTS = {"rollout_nnodes": 1, "rollout_gpus_per_node": 8, "ckpt_naive": False, "bypass_logprob": True,
                        # data.train_batch_size is not overridden there: verl's 1024 (legacy_data.yaml)
                        "fa_train_batch": 1024}
# The one_step_off recipe (python -m verl.experimental.one_step_off_policy.main_ppo, one_step_off_ppo_trainer.yaml):
# the same top-level rollout pool keys (main_ppo.py copies them), the yaml's nccl checkpoint engine and bypass mode;
# data.train_batch_size keeps its meaning (prompts per step). Bypass mode from v0.7.0 only
# (versions.ONE_STEP_OFF_BYPASS).
ONE_STEP_OFF_DEFAULTS = {"rollout_nnodes": 1, "rollout_gpus_per_node": 8, "ckpt_naive": False, "bypass_logprob": True}
RECIPE_ENTRY = {3: FULLY_ASYNC_ENTRY, 4: ONE_STEP_OFF_ENTRY}
# a whole command (run_command): verl's GSM8K example data (examples/data_preprocess/gsm8k.py writes it; the reward is
# verl's GSM8K rule, chosen by the rows' data_source), and the console logger (the default also logs to wandb)
EXAMPLE_INPUTS = ("data.train_files=$HOME/data/gsm8k/train.parquet", "data.val_files=$HOME/data/gsm8k/test.parquet",
                  "trainer.logger=['console']")
EXAMPLE_SOURCE = "verl's GSM8K example, written by its examples/data_preprocess/gsm8k.py"


# environment variables of a launch script that change what the run holds or where it is killed: VLLM_USE_V1 (0: vLLM's
# V0 engine, whose workers allocate a CPU swap space; rules.py vllm_v0), RAY_memory_usage_threshold (Ray's memory
# monitor line, read when main_ppo's ray.init starts Ray; rules.py ray_kill_permille)
SCRIPT_ENV = ("VLLM_USE_V1", "RAY_memory_usage_threshold")


def is_fully_async(flat: Mapping[str, Any]) -> bool:
    """A config of the fully_async recipe: it sets keys only that recipe reads (async_training.*)."""
    return any(str(k).startswith("async_training.") for k in flat)


def _fixed_rollout_pool(fixed: Mapping[str, Any]) -> int:
    """GPUs a scenario gives a standalone rollout pool (the recipes' top-level rollout.*, separate_async's
    actor_rollout_ref.rollout.*), 0 when it gives none."""
    for prefix in ("rollout.", f"{AR}.rollout."):
        nodes, per_node = fixed.get(prefix + "nnodes"), fixed.get(prefix + "n_gpus_per_node")
        if isinstance(nodes, int) and isinstance(per_node, int) and nodes > 0 and per_node > 0:
            return nodes * per_node
    return 0


def is_one_step_off(flat: Mapping[str, Any]) -> bool:
    """A config of the one_step_off recipe: the top-level rollout pool keys without the fully_async recipe's."""
    return not is_fully_async(flat) and any(k in flat for k in ("rollout.nnodes", "rollout.n_gpus_per_node"))


def _typed(key: str, spec: VarSpec, value: Any) -> Value:
    name = spec.name
    if name == "megatron":
        return _strategy(value)
    if name == "gmu_permille":
        return memory_share_permille(key, value, f"write {key}=0.5 (vLLM/SGLang memory share).")
    if name == "rollout_sync":  # older versions' rollout.mode (sync: in-process engine; 0.7 removed it)
        if str(value).lower() not in ("sync", "async"):
            raise InputError(key, f"rollout mode '{value}' is not one of verl's.", "use sync or async.")
        return str(value).lower() == "sync"
    if name == "async_mode":
        text = str(value).lower()
        if text not in TRAINER_MODES:
            raise InputError(key, f"trainer mode '{value}' is not one of verl's.{did_you_mean(text, TRAINER_MODES)}",
                             "use sync, colocate_async or separate_async.")
        return TRAINER_MODES[text]
    if name == "ckpt_naive":
        text = str(value).lower()
        if text not in CKPT_BACKENDS:
            raise InputError(key, f"checkpoint engine '{value}' is not one we know.{did_you_mean(text, CKPT_BACKENDS)}",
                             "use naive, nccl, nixl or mooncake.")
        return text == "naive"
    if name == "staleness_permille":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(key, f"'{value}' is not a number.", f"write {key}=0.5 (a share of a sync's samples).")
        return int(round(value * 1000))
    if name == "fsdp2":  # actor.strategy, checked by _strategy: fsdp (the default), fsdp2 or megatron
        return str(value).lower() == "fsdp2"
    if name == "ray_kill_permille":  # the environment's RAY_memory_usage_threshold, a share of the node's RAM
        return memory_share_permille(key, value, f"write {key}=0.95 (a share of the node's RAM).")
    if name == "vllm_v0":  # the environment's VLLM_USE_V1: 0 (or false) selects vLLM's V0 engine
        return str(value).strip().strip("'\"").lower() in ("0", "false")
    if name == "rollout_dummy_load":  # rollout.load_format: verl syncs the base model first when it holds "dummy"
        return "dummy" in str(value).lower()
    if name == "fused_kernels_triton":  # model.fused_kernel_options.impl_backend: torch (default), triton or liger
        text = str(value).strip().strip("'\"")
        if text not in FUSED_BACKENDS:
            # models/transformers/monkey_patch.py patch_forward_with_backends patches the forward only for these names,
            # as written; the log-prob pass then reads log_probs the model's own forward does not return
            raise InputError(key, f"'{value}' is not a fused-kernel backend verl runs (its forward is left unpatched "
                             f"and the first log-prob pass fails).{did_you_mean(text.lower(), FUSED_BACKENDS)}",
                             "use torch (the default), triton, or liger (verl 0.9.1).")
        return text == "triton"
    if name == "rollout_sglang":
        if str(value).lower() not in ROLLOUT_ENGINES:
            raise InputError(key, f"rollout engine '{value}' is not modelled.{did_you_mean(str(value), ROLLOUT_ENGINES)}",
                             "use vllm or sglang.")
        return str(value).lower() == "sglang"
    if value is None:
        if spec.optional:
            return None
        raise InputError(key, "is null but verl needs a value here.", f"set {key} to a number or remove it.")
    if spec.kind == "bool":
        return hydra_bool(key, value)
    value = whole_number(key, value, key)
    if name == "lora_rank":  # 0: full fine-tuning (the default)
        if value < 0:
            raise InputError(key, f"{value} is not a LoRA rank.", f"set {key}=0 (no LoRA) or a positive rank.")
        return value
    if name == "save_freq":  # ray_trainer.py saves when save_freq > 0; 0 and -1 (the default) save none
        return value
    if name in _ZERO_ALLOWED:
        if value < 0:
            raise InputError(key, f"{value} must not be negative.", f"set {key} to 0 or more.")
        return value
    if name in _ZERO_OK:
        if value == 0 or value < -1:
            raise InputError(key, f"{value} is not a valid FSDP size.", "use -1 (all GPUs) or a positive size.")
        return value
    if value < 1:
        raise InputError(key, f"{value} must be at least 1.", f"set {key} to a positive number.")
    return value


def _effective_ulysses(flat: dict[str, Any]) -> None:
    """Fold the FSDP engine's own Ulysses keys into the (deprecated) role keys the rules read.

    ``FSDPActorConfig.__post_init__`` copies ``actor.ulysses_sequence_parallel_size`` into
    ``actor.fsdp_config`` only when it is > 1; otherwise the engine reads ``fsdp_config``'s own value.
    """
    for role in ("actor", "ref"):
        top, eng = f"{AR}.{role}.ulysses_sequence_parallel_size", f"{AR}.{role}.fsdp_config.ulysses_sequence_parallel_size"
        if eng in flat:
            given = flat.get(top)
            if not (isinstance(given, int) and given > 1):
                flat[top] = flat[eng]
            if role == "actor" and f"{AR}.ref.ulysses_sequence_parallel_size" not in flat:
                # ref.ulysses_sequence_parallel_size follows the actor's deprecated key only
                flat[f"{AR}.ref.ulysses_sequence_parallel_size"] = given if given is not None else 1


def config_to_values(
    flat: Mapping[str, Any],
    *,
    gpus: int | None = None,
    model: ModelCard | None = None,
    ruleset: RuleSet = ANY_RULESET,
    megatron: bool | None = None,
) -> dict[str, Value]:
    """Native verl keys -> rule variable values, defaults filled in.

    ``megatron`` forces the backend (``None``: as the config says).
    """
    flat = {_ALIAS_KEYS.get(k, k): v for k, v in flat.items()}
    fully_async, one_step_off = is_fully_async(flat), is_one_step_off(flat)
    fa_given: dict[str, Value] = {}
    if fully_async:
        raw = flat.pop("data.train_batch_size", None)
        if raw is not None:
            fa_given["fa_train_batch"] = _typed("data.train_batch_size", ruleset.variables["fa_train_batch"], raw)
    if fully_async or one_step_off:
        flat.pop("trainer.v1.trainer_mode", None)  # the recipe's own trainer, whatever the v1 key says
        for top, key in FULLY_ASYNC_KEYS.items():
            if top in flat:
                flat[key] = flat.pop(top)
    _effective_ulysses(flat)
    variables = ruleset.variables
    backend = is_megatron(flat) if megatron is None else megatron
    by_key = ruleset.by_key()
    given: dict[str, Value] = {}
    for key, value in flat.items():
        spec = by_key.get(key)
        if spec is not None and spec.name not in DECIDED_BY_TOOL and spec.name != "megatron":
            given[spec.name] = _typed(key, spec, value)
    if "fsdp2" in variables and STRATEGY_KEY in flat:  # actor.strategy: the Megatron switch's key too
        given["fsdp2"] = _typed(STRATEGY_KEY, variables["fsdp2"], flat[STRATEGY_KEY])
    split = fully_async or one_step_off or given.get("async_mode", 0) >= 2
    if gpus is not None and split:
        # a split placement: --gpus is the cluster, the trainer and rollout pools are the config's
        if gpus < 1:
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        given["cluster_gpus"] = gpus
        gpus = None
    if gpus is not None:
        if gpus < 1:
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        nn = int(given.get("nnodes", 1))
        if "gpus_per_node" in given and given["gpus_per_node"] * nn != gpus:
            raise InputError(
                "gpus", f"--gpus {gpus} disagrees with trainer.n_gpus_per_node*trainer.nnodes = "
                f"{given['gpus_per_node']}*{nn}.", "drop --gpus or make them agree.",
            )
        if gpus % nn:
            raise InputError("gpus", f"--gpus {gpus} is not a multiple of trainer.nnodes = {nn}.",
                             "set trainer.n_gpus_per_node instead of --gpus.")
        given["gpus_per_node"] = gpus // nn
    values: dict[str, Value] = {}
    for name, spec in variables.items():
        if name in given:
            values[name] = given[name]
        elif name in INTERPOLATED or name in DECIDED_BY_TOOL:
            continue  # filled below
        else:
            values[name] = spec.default
    if backend:  # the Megatron trainer's own defaults at this release (versions.megatron_defaults)
        for name, spec in versions.megatron_defaults(ruleset.version).items():
            if name in variables and name not in given:
                values[name] = spec.default
    if fully_async and "async_mode" in variables:
        values["async_mode"] = 3
        for name, default in FULLY_ASYNC_DEFAULTS.items():
            if name not in given:
                values[name] = default
        values.update(fa_given)
        # prompts per weight sync: require_batches mini batches per trainer step, trigger_parameter_sync_step
        # steps per sync (fully_async_trainer.py required_samples; the recipe's doc on its colocate equivalent)
        values["train_batch_size"] = int(values["actor_mini"]) * int(values["require_batches"]) * int(values["sync_steps"])
    if one_step_off and "async_mode" in variables:
        values["async_mode"] = 4
        values.update({name: default for name, default in ONE_STEP_OFF_DEFAULTS.items() if name not in given})
        if ruleset.version not in versions.ONE_STEP_OFF_BYPASS:
            values["bypass_logprob"] = False  # the recipe recomputes the old log-probs, bypass_mode or not
            # (versions.ONE_STEP_OFF_BYPASS)
    if "cluster_gpus" in variables and values.get("cluster_gpus") is None and not split:
        values["cluster_gpus"] = int(values["nnodes"]) * int(values["gpus_per_node"])
    unlinked = versions.NOT_INTERPOLATED.get(ruleset.version, frozenset())
    for name, follows in INTERPOLATED.items():
        if name in variables and name not in given:
            # a key the version's yaml leaves at its own default (verl 0.2's critic per-GPU micro batch: null)
            values[name] = variables[name].default if name in unlinked else values[follows]
    if "megatron" in variables:
        values["megatron"] = backend
    values.update(_need_flags(flat))
    if "entropy_loss" in variables:
        values["entropy_loss"] = entropy_in_loss(flat)
    if ruleset.version in versions.ALWAYS_REFERENCE:
        values["need_ref"] = True
    if model is not None:
        values.update(model_constants(model))
    return values


def model_constants(model: ModelCard) -> dict[str, int]:
    return {
        **attention_constants(model),
        "num_layers": model.num_hidden_layers,
        "num_experts": model.num_experts,
        "intermediate_size": 0 if model.num_experts else model.intermediate_size,
    }


# -- export -------------------------------------------------------------------------
_EXPORT_ORDER = [
    "train_batch_size", "max_prompt_length", "max_response_length", "n", "actor_mini",
    "actor_micro_per_gpu", "actor_micro", "actor_dyn", "actor_max_tokens", "actor_sp", "logprob_micro_per_gpu",
    "logprob_micro", "logprob_dyn", "logprob_max_tokens", "ref_micro_per_gpu", "ref_micro", "ref_sp",
    # the engine: verl 0.6.1 to 0.9.1 leave rollout.name mandatory (verl/trainer/config/rollout/rollout.yaml
    # "name: ???", verl/workers/config/rollout.py RolloutConfig.name = MISSING): a command without it stops at launch
    "rollout_sglang", "rollout_tp", "rollout_dp",
    "rollout_ep", "gmu_permille", "grad_ckpt", "param_offload", "optimizer_offload", "ref_param_offload",
    "critic_mini", "critic_micro_per_gpu", "critic_micro", "critic_sp", "critic_param_offload", "critic_optimizer_offload",
    # Megatron backend
    "tp", "pp", "cp", "ep", "etp", "vpp", "megatron_param_offload", "megatron_optimizer_offload",
    "ref_tp", "ref_pp", "ref_cp", "ref_ep", "ref_etp", "ref_vpp", "ref_megatron_param_offload",
    "critic_tp", "critic_pp", "critic_cp", "critic_ep", "critic_etp", "critic_vpp",
    "critic_megatron_param_offload", "critic_megatron_optimizer_offload",
    "gpus_per_node", "nnodes",
    # placement (printed for the split and async modes only)
    "async_mode", "sync_steps", "require_batches", "rollout_nnodes", "rollout_gpus_per_node", "hybrid_engine",
    "ckpt_naive", "partial_rollout", "staleness_permille",
]
_PLACEMENT = {"async_mode", "sync_steps", "require_batches", "rollout_nnodes", "hybrid_engine", "ckpt_naive",
              "partial_rollout", "staleness_permille"}
_FULLY_ASYNC_ONLY = {"require_batches", "partial_rollout", "staleness_permille"}
_FULLY_ASYNC_EXPORT_KEYS = {v: k for k, v in FULLY_ASYNC_KEYS.items()}
# per rule set (identity_cache.by_identity): its variables' keys, and by key each one's name and default
_BY_RULESET: dict = {}
_KEYS = {**{name: spec.key for name, spec in ANY_RULESET.variables.items()}}
_OPTIONAL_OMITTED = {"etp", "vpp", "ref_etp", "ref_vpp", "critic_etp", "critic_vpp"}  # None: leave verl's default


def solution_to_overrides(solution: Mapping[str, Value], extra: Mapping[str, Any] | None = None,
                          *, megatron: bool | None = None, keys: Mapping[str, str] | None = None,
                          model_engine: bool = True) -> list[str]:
    """Paste-ready Hydra overrides for the values we decided (plus ``extra`` native keys).

    A Megatron solution starts with ``model_engine=megatron`` (verl 0.9.1 selects the Megatron
    actor/ref/critic configs with it; ``model_engine`` False: a release whose Megatron trainer config is selected by
    ``--config-name`` alone, ``versions.MODEL_ENGINE_IN_MEGATRON_CONFIG``) and prints ``*.megatron.*`` parallel sizes.
    """
    out: list[str] = []
    backend = bool(solution.get("megatron")) if megatron is None else megatron
    dyn = bool(solution.get("actor_dyn"))
    extra = dict(extra or {})
    if backend:
        extra.pop("model_engine", None)
        extra.pop(STRATEGY_KEY, None)
        if model_engine:
            out.append("model_engine=megatron")
    skip = FSDP_ONLY if backend else MEGATRON_ONLY
    mode = int(solution.get("async_mode") or 0)
    if mode == 0:
        skip = skip | _PLACEMENT
    elif mode == 1:  # colocate_async: the mode alone, no pool
        skip = skip | (_PLACEMENT - {"async_mode"}) | {"rollout_gpus_per_node"}
    elif mode != 3:
        skip = skip | _FULLY_ASYNC_ONLY
    if mode >= 3:  # the recipes' pool keys come from the solution, not again from the scenario's
        extra = {k: v for k, v in extra.items() if k not in FULLY_ASYNC_KEYS}
    keys = dict(keys or _KEYS)
    if mode >= 3:  # the recipes' own keys; their trainer is chosen by the entry point, not trainer.v1.trainer_mode
        skip = skip | {"async_mode"}
        keys.update({name: _FULLY_ASYNC_EXPORT_KEYS.get(spec_key, spec_key) for name, spec_key in keys.items()})
    if mode == 4:
        skip = skip | {"sync_steps"}
    if mode == 3:
        keys["sync_steps"] = "async_training.trigger_parameter_sync_step"
        extra.pop("data.train_batch_size", None)
        out.append("data.train_batch_size=0")
    for name in _EXPORT_ORDER:
        if name not in solution or name in skip:
            continue
        if mode == 3 and name == "train_batch_size":
            continue
        if solution[name] is None:
            continue
        if of_absent_model(name, lambda switch: bool(solution.get(switch))):
            continue
        if dyn and name in ("actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "actor_micro",
                            "logprob_micro", "ref_micro"):
            continue
        if not dyn and name in ("actor_max_tokens", "logprob_max_tokens"):
            continue
        out.append(f"{keys[name]}={_fmt(_native_value(name, solution[name]))}")
    for key, value in extra.items():  # the config's own keys, a "+" the user wrote kept (verl needs it there)
        out.append(f"{written_key(key)}={_fmt(value)}")
    return out


def overrides_to_yaml(overrides: list[str]) -> str:
    """The same overrides as a nested YAML fragment for a config file."""
    tree: dict[str, Any] = {}
    for item in overrides:
        key, _, raw = item.partition("=")
        node = tree
        parts = key.lstrip("+").split(".")  # +key / ++key add a key Hydra's schema lacks: a plain key in a file
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = _yaml_value(raw)
    return yaml.safe_dump(tree, sort_keys=False)


def _yaml_value(raw: str) -> Any:
    """A Hydra override's value as YAML holds it: a list or dict literal (``[console,wandb]``, ``['a', 'b']``) as
    a list or dict, not as the string a config file would then pass on whole."""
    text = raw.strip()
    if text[:1] in "[{":
        try:
            return safe_input.load_yaml(text, "config")
        except InputError:  # not YAML, or beyond its limits: passed on as the text it is
            pass
    return parse_scalar(raw)


def _native_value(name: str, value: Value) -> Any:
    """A rule-variable value as the verl key spells it."""
    if name == "gmu_permille":
        return value / 1000
    if name == "rollout_sglang":
        return "sglang" if value else "vllm"
    if name == "fused_kernels_triton":
        return "triton" if value else "torch"
    if name == "rollout_sync":
        return "sync" if value else "async"
    if name == "async_mode":
        return {v: k for k, v in TRAINER_MODES.items()}.get(int(value), "sync")
    if name == "ckpt_naive":
        return "naive" if value else "nccl"
    if name == "staleness_permille":
        return value / 1000
    if name == "megatron":
        return "megatron" if value else "fsdp"
    if name == "fsdp2":
        return "fsdp2" if value else "fsdp"
    if name == "vllm_v0":
        return 0 if value else 1
    if name == "ray_kill_permille":
        return value / 1000
    return value


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


# recommend --from keeps the config's dynamic batching switches (no search space moves them: DEFAULT_SEARCH and
# KNOB_SEARCH leave them out), so that the space searches the token budgets of a config that packs by tokens
# (build_space: actor_max_tokens 2-4x the longest sequence when actor_dyn is on), as fix moves them; freed, they fell
# to the default (off) in the space and the budget was never searched: verl v0.9.0's run_qwen3_30b_a3b_fsdp.sh on 8x
# H100 was "no valid config fits" where ppo_max_token_len_per_gpu=18432 does (fix's answer).
DYNAMIC_BATCHING = frozenset({"actor_dyn", "logprob_dyn", "ref_dyn", "critic_dyn"})


def keep_dynamic_batching(searchable: set[str]) -> set[str]:
    return searchable - DYNAMIC_BATCHING


# -- search space ----------------------------------------------------------------------
# the settings that shape the step itself (the pipeline, tables._step_expr): one value per solve
PLACEMENT_SETTINGS = frozenset({"async_mode", "staleness_permille"})
# What people actually use (verl examples and docs): powers of two.
DEFAULT_SEARCH: dict[str, list[Value]] = {
    "train_batch_size": pow2(16, 1024),
    "actor_mini": pow2(4, 1024),
    "actor_micro_per_gpu": pow2(1, 64),
    "logprob_micro_per_gpu": pow2(1, 128),
    "actor_sp": [1, 2, 4, 8],
    "rollout_tp": [1, 2, 4, 8],
}
# Megatron: the same batch sizes, TP inside a node, a few pipeline stages; EP for MoE models, CP for long
# sequences; VPP, ETP and first/last-stage layers only when the user searches them.
MEGATRON_SEARCH: dict[str, list[Value]] = {
    **{k: v for k, v in DEFAULT_SEARCH.items() if k != "actor_sp"},
    "tp": [1, 2, 4, 8],
    "pp": [1, 2, 4],
}
MOE_SEARCH: dict[str, list[Value]] = {"ep": [1, 2, 4, 8]}
LONG_CONTEXT = 16384  # prompt+response from which context parallel is searched (CP 1, 2)
PARALLEL_CAPPED = ("actor_sp", "rollout_tp", "tp", "pp", "ep", "cp")  # never above the GPU count

# When the user leaves them alone, these follow another variable in the search, as
# verl's own yaml interpolations (or its examples) make them.
SEARCH_TIES = {
    **{k: v for k, v in INTERPOLATED.items() if k != "critic_micro_per_gpu"},
    "ref_micro_per_gpu": "logprob_micro_per_gpu",
    "critic_micro_per_gpu": "actor_micro_per_gpu",
    "ref_param_offload": "param_offload",
    "critic_param_offload": "param_offload",
    "critic_optimizer_offload": "optimizer_offload",
    "critic_grad_ckpt": "grad_ckpt",
    # Megatron: the critic must use the actor's layout (verl.megatron.critic_parallel_matches_actor)
    "critic_tp": "tp", "critic_pp": "pp", "critic_cp": "cp", "critic_ep": "ep", "critic_etp": "etp",
    "critic_vpp": "vpp",
    "critic_megatron_param_offload": "megatron_param_offload",
    "critic_megatron_optimizer_offload": "megatron_optimizer_offload",
}


# A release with only the global micro batch keys (versions.GLOBAL_MICRO_ONLY): the global key searched in place of
# the per-GPU one, at the GPU count times each per-GPU value (the workers divide it by the data-parallel size), the
# reference's and critic's following the rollout's and actor's as the per-GPU keys do (SEARCH_TIES)
GLOBAL_MICRO_SEARCH = {"actor_micro": "actor_micro_per_gpu", "logprob_micro": "logprob_micro_per_gpu",
                       "ref_micro": "ref_micro_per_gpu", "critic_micro": "critic_micro_per_gpu"}
GLOBAL_MICRO_TIES = {"ref_micro": "logprob_micro", "critic_micro": "actor_micro"}


def _search_global_micro(domains: dict[str, list[Value]], user_set: set[str], search_defaults: Mapping[str, list[Value]],
                         total: int) -> None:
    """Search the global micro keys instead of the per-GPU ones the release lacks (``GLOBAL_MICRO_SEARCH``), and
    token-packed micro batches beside them: where rollout.n scales a global key (cost.py ``n_scale``) its smallest
    micro batch is n sequences, and use_dynamic_bsz is that verl's way to run fewer."""
    for name, per_gpu in GLOBAL_MICRO_SEARCH.items():
        domains[per_gpu] = [None]
        if name not in user_set and per_gpu in search_defaults:
            domains[name] = [total * int(v) for v in search_defaults[per_gpu]]
    if "actor_dyn" not in user_set:
        domains["actor_dyn"] = [False, True]


def default_n(algorithm: str) -> int:
    return 1 if algorithm in ("ppo", "reinforce++") else 8


# Memory and speed switches searched by ``recommend`` when the user leaves them alone.
KNOB_SEARCH: dict[str, list[Value]] = {
    "gmu_permille": [300, 400, 500, 600, 700, 800, 900],
    "grad_ckpt": [True, False],
    "param_offload": [False, True],
    "optimizer_offload": [False, True],
}


def scenario_n(scenario: Any) -> int:
    """Responses per prompt: --n, else a --set actor_rollout_ref.rollout.n, else the algorithm's default."""
    algo = canonical_algorithm(scenario.algorithm) if scenario.algorithm else "grpo"
    given = scenario.fixed.get(f"{AR}.rollout.n")
    if scenario.n is not None:
        if isinstance(given, int) and given != scenario.n:
            raise InputError("n", f"--n {scenario.n} and --set {AR}.rollout.n={given} disagree.", "give one of them.")
        return scenario.n
    return whole_number(f"{AR}.rollout.n", given, f"{AR}.rollout.n") if given is not None else default_n(algo)


def build_space(scenario: Any, model: ModelCard | None, with_knobs: bool = False, *,
                ruleset: RuleSet = ANY_RULESET, megatron: bool = False) -> Space:
    """Domains for a verl scenario: fixed values, the user's ranges, our defaults."""
    # no algorithm (recommend --from): the config's own algorithm settings, in scenario.fixed, are all there is
    algo = canonical_algorithm(scenario.algorithm) if scenario.algorithm else "grpo"
    # the algorithm's keys the release has (verl 0.2-0.3 lack algorithm.use_kl_in_reward: the KL goes into the reward
    # whenever actor.use_kl_loss is off, versions.VERSION_KEYS)
    native = {k: v for k, v in ALGORITHMS[algo].items() if not versions.lacks(k, ruleset.version)} \
        if scenario.algorithm else {}
    native.update(scenario.fixed)
    variables = ruleset.variables
    by_key = ruleset.by_key()
    n = scenario_n(scenario)
    base = config_to_values(
        {**native, "data.max_prompt_length": scenario.prompt_length,
         "data.max_response_length": scenario.response_length, f"{AR}.rollout.n": n,
         "trainer.nnodes": scenario.nnodes, "trainer.n_gpus_per_node": scenario.per_node},
        model=model, ruleset=ruleset, megatron=megatron,
    )
    total = scenario.total_gpus
    if base.get("async_mode") == 3 and "data.train_batch_size" not in scenario.fixed:
        base["fa_train_batch"] = 0  # the recipe's config we write says 0 (its batch is minis x steps)
    if "cluster_gpus" in base and base["cluster_gpus"] is None:
        # a split placement's scenario gives the trainer pool; the cluster is both pools (recommend --placement)
        pool = int(base.get("rollout_nnodes") or 0) * int(base.get("rollout_gpus_per_node") or base["gpus_per_node"])
        base["cluster_gpus"] = total + pool
    domains: dict[str, list[Value]] = {name: [value] for name, value in base.items()}
    user_set = {by_key[k].name for k in scenario.fixed if k in by_key}
    for key, values in scenario.search.items():
        spec = by_key.get(key)
        if spec is not None and spec.name in PLACEMENT_SETTINGS:
            raise InputError(f"search.{key}", "the placement is not searched key by key: each one is a solve of its own.",
                             "use recommend --placement split (or auto) to compare placements, or fix the key.")
        if spec is None or spec.name in DECIDED_BY_TOOL or spec.name == "megatron":
            raise InputError(
                f"search.{key}", f"is not a verl key we search.{did_you_mean(key, by_key)}",
                "search over batch, micro-batch and parallel sizes (data.train_batch_size, ...).",
            )
        domains[spec.name] = [_typed(key, spec, v) for v in values]
        user_set.add(spec.name)
    if megatron:
        search_defaults = dict(MEGATRON_SEARCH)
        if model is not None and model.is_moe:
            search_defaults.update(MOE_SEARCH)
        if scenario.prompt_length + scenario.response_length >= LONG_CONTEXT:
            search_defaults["cp"] = [1, 2]
    else:
        search_defaults = {**DEFAULT_SEARCH, **(KNOB_SEARCH if with_knobs else {})}
    for name, values in search_defaults.items():
        if name in user_set:
            continue
        if name in PARALLEL_CAPPED:
            values = [v for v in values if v <= total]
        domains[name] = list(values)
    for name in ("train_batch_size", "actor_mini"):
        if name not in user_set and name in search_defaults:
            domains[name] = batches_for_gpus(search_defaults[name], total, n)
    # switch to per-GPU micro sizes (deprecated global ones stay unset)
    for name in ("actor_micro", "logprob_micro", "ref_micro", "critic_micro"):
        if name not in user_set:
            domains[name] = [None]
    ties_now = dict(SEARCH_TIES)
    if ruleset.version in versions.GLOBAL_MICRO_ONLY and not user_set & set(GLOBAL_MICRO_SEARCH.values()):
        _search_global_micro(domains, user_set, search_defaults, total)
        ties_now.update(GLOBAL_MICRO_TIES)
    if True in domains.get("actor_dyn", []) and "actor_max_tokens" not in user_set:
        L = scenario.prompt_length + scenario.response_length
        domains["actor_max_tokens"] = [2 * L, 3 * L, 4 * L]
    ties: list[Rule] = []
    for name, follows in ties_now.items():
        if name in user_set or name not in variables or follows not in domains:
            continue
        kind = variables[name].kind
        a, b = (BoolVar(name), BoolVar(follows)) if kind == "bool" else (IntVar(name), IntVar(follows))
        domains[name] = list(domains[follows])
        if kind == "bool":
            holds = (a & b) | (~a & ~b)
        elif variables[name].optional:  # unset follows unset (etp, vpp)
            sa, sb = is_set(name), is_set(follows)
            holds = (sa & sb & a.eq(b)) | (~sa & ~sb)
        else:
            holds = a.eq(b)
        ties.append(tie_rule(
            name, holds, f"{variables[name].key} = {{{name}}} follows {variables[follows].key} = {{{follows}}}",
            "rlbatch-solver search space: verl's yaml interpolation / examples",
        ))
    # the config's own keys go into the printed command as it has them: those of no rule variable, and those of a
    # variable the search keeps at the config's value and the export does not write (rollout.load_format,
    # rollout.layered_summon, trainer.save_freq, ...)
    fixed_native = {k: v for k, v in native.items() if k != "model_engine" and (
        k not in by_key or (by_key[k].name not in _EXPORT_ORDER and len(domains.get(by_key[k].name, ())) == 1))}
    notes = [ALGORITHM_NOTES[algo]] if scenario.algorithm and algo in ALGORITHM_NOTES else []
    return Space(domains, ties, fixed_native, notes=notes)


# the folder of verl's own trainer yamls, as its example scripts name it for Hydra's --config-path
_VERL_CONFIG_DIRS = frozenset({"config", "verl/trainer/config"})


def parse_verl_tokens(tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Hydra overrides, plus ``--config-name=ppo_megatron_trainer`` read as ``model_engine=megatron``."""
    flat, ignored = parse_hydra_overrides(tokens, groups=True)
    name, used = None, set()
    for i, tok in enumerate(ignored):
        if tok.startswith("--config-name="):
            name, used = tok.partition("=")[2], {i}
        elif tok == "--config-name" and i + 1 < len(ignored):
            name, used = ignored[i + 1], {i, i + 1}
    for i, tok in enumerate(ignored):  # Hydra's --config-path at verl's own folder (its Megatron examples'
        # `--config-path=config`, relative to verl/trainer/main_ppo.py): understood, as the yaml it holds is the one
        # checked; another folder (a user's own yaml) stays reported as not read
        path = tok.partition("=")[2] if tok.startswith("--config-path=") else (
            ignored[i + 1] if tok == "--config-path" and i + 1 < len(ignored) else None)
        if path is not None and path.strip("'\"").rstrip("/").removeprefix("./") in _VERL_CONFIG_DIRS:
            used |= {i} if "=" in tok else {i, i + 1}
    if used and name is None:
        ignored = [tok for i, tok in enumerate(ignored) if i not in used]
    if name is not None:
        name = name.strip("'\"")
        if name.endswith(".yaml"):
            name = name[:-5]
        if name in ("ppo_trainer", "ppo_megatron_trainer"):  # understood: not reported as ignored
            ignored = [tok for i, tok in enumerate(ignored) if i not in used]
        if name == "ppo_megatron_trainer" and "model_engine" not in flat:
            flat["model_engine"] = ByConfigName("megatron")
    return flat, ignored


def split_layouts(nodes: int, per_node: int) -> list[tuple[int, int, int, int, bool]]:
    """(trainer nodes, trainer GPUs per node, rollout nodes, rollout GPUs per node, coarse) of every split that uses
    all GPUs, trainer GPUs ascending: whole nodes to each pool, or every node split between them (Ray packs each
    pool's per-node bundle into one node: single_controller/ray/base.py get_placement_groups, STRICT_PACK).
    ``coarse``: a quarter, a half or three quarters of the nodes (or of each node's GPUs) to the trainer, the
    layouts solved first. verl's published splits are among them: 4:4 on one node, 6+2 per node (4_12), 16:16,
    8:24, 32:96 (docs/async.md)."""
    quarters = (0.25, 0.5, 0.75)
    out = []
    if nodes >= 2:
        coarse = {min(nodes - 1, max(1, round(nodes * f))) for f in quarters}
        out += [(tn, per_node, nodes - tn, per_node, tn in coarse) for tn in range(1, nodes)]
    if per_node >= 2:
        coarse = {min(per_node - 1, max(1, round(per_node * f))) for f in quarters}
        out += [(nodes, tg, nodes, per_node - tg, tg in coarse) for tg in range(1, per_node)]
    return sorted(out, key=lambda lay: (lay[0] * lay[1], lay[0]))


SPLIT_GMU = [0.8, 0.9]  # a rollout pool holds the engine alone: only high shares are worth trying
SYNC_STEPS_SEARCH = [1, 2, 4, 8, 16, 32]


POOL_KEYS = {"nnodes": (f"{AR}.rollout.nnodes", "rollout.nnodes"),
             "gpus_per_node": (f"{AR}.rollout.n_gpus_per_node", "rollout.n_gpus_per_node")}


def _pinned_pool(fixed: Mapping[str, Any]) -> dict[str, int]:
    """The rollout pool's geometry the user fixed (either spelling)."""
    out = {}
    for what, keys in POOL_KEYS.items():
        for key in keys:
            if key in fixed:
                out[what] = int(fixed[key])
    return out


def verl_placements(fw: Any, scenario: Any, notes: list[str]) -> list:
    """verl's layouts for recommend --placement: colocated (the hybrid engine, trainer.v1.trainer_mode=sync or the
    scenario's colocate_async) and the separate_async splits of ``split_layouts`` (a scenario with the fully_async or
    one_step_off recipe's keys stays that recipe; a rollout pool the scenario fixes keeps only its layouts), each
    with the rollout pool's TP, the sync interval and the engine's share searched where the user left them. The keys
    the user fixed win over the layout's (a hybrid engine, a checkpoint backend), the pool geometry aside."""
    from ...layout import Layout, admits, sub_scenario

    if scenario.placement in ("split", "auto") and fw.version != versions.NEWEST:
        raise InputError("placement", f"split placements are modelled for verl {versions.NEWEST} only, not "
                         f"{fw.version}.", f"use --framework verl=={versions.NEWEST}, or --placement colocate.")
    fixed, search = scenario.fixed, scenario.search
    recipe = is_fully_async(fixed) or is_one_step_off(fixed)
    out = []
    mode = str(fixed.get("trainer.v1.trainer_mode", "sync"))
    if scenario.placement in ("colocate", "auto"):
        if recipe:
            if scenario.placement == "colocate":
                raise InputError("placement", "the scenario has a split recipe's keys (async_training.* or top-level "
                                 "rollout.*), not a colocated run's.", "drop --placement colocate, or those keys.")
            notes.append("no colocated layout was solved: the scenario has a split recipe's keys")
        elif admits(scenario, "colocate", {"trainer.v1.trainer_mode": "colocate_async" if mode == "colocate_async"
                                           else "sync"}, notes):
            out.append(Layout("colocate", f"colocated on {scenario.total_gpus} GPUs",
                              sub_scenario(scenario, fixed={"trainer.v1.trainer_mode": mode})))
    if scenario.placement in ("split", "auto") and (recipe or admits(
            scenario, "split", {"trainer.v1.trainer_mode": "separate_async"}, notes)):
        tp_key, sync_key = f"{AR}.rollout.tensor_model_parallel_size", "trainer.v1.separate_async.parameter_sync_step"
        gmu_key = f"{AR}.rollout.gpu_memory_utilization"
        pinned = _pinned_pool(fixed)
        for tn, tg, rn, rg, coarse in split_layouts(scenario.nnodes, scenario.per_node):
            if pinned and (pinned.get("nnodes", rn), pinned.get("gpus_per_node", rg)) != (rn, rg):
                continue
            if recipe:
                geometry = {"rollout.nnodes": rn, "rollout.n_gpus_per_node": rg}
            else:
                geometry = {"trainer.v1.trainer_mode": "separate_async", f"{AR}.rollout.nnodes": rn,
                            f"{AR}.rollout.n_gpus_per_node": rg}
            pools = {**geometry, f"{AR}.hybrid_engine": False}
            if not recipe:
                pools[f"{AR}.rollout.checkpoint_engine.backend"] = "nccl"
            more = {}
            if tp_key not in fixed and tp_key not in search:
                more[tp_key] = [t for t in (1, 2, 4, 8) if t <= rg]
            if (sync_key not in fixed and sync_key not in search and "async_training.trigger_parameter_sync_step"
                    not in fixed and not is_one_step_off(fixed)):
                more[sync_key] = list(SYNC_STEPS_SEARCH)
            if gmu_key not in fixed and gmu_key not in search:
                more[gmu_key] = list(SPLIT_GMU)
            out.append(Layout("split", _pools_text(tn, tg, rn, rg),
                              sub_scenario(scenario, gpus=None, gpus_per_node=tg, nnodes=tn, fixed=pools, search=more,
                                           layout_keys=geometry),
                              coarse or bool(pinned), "nodes" if tg == scenario.per_node else "within nodes"))
        if pinned and not any(lay.placement == "split" for lay in out):
            raise InputError("placement", f"the scenario fixes a rollout pool ({pinned}) that no split of "
                             f"{scenario.nnodes} node(s) of {scenario.per_node} GPUs leaves every other GPU to train on.",
                             "drop the rollout pool keys to let recommend choose the split.")
    if not out and not notes:
        raise InputError("placement", f"{scenario.total_gpus} GPU(s) leave no split: each pool needs a GPU of its own.",
                         "use --placement colocate.")
    return out


def _pools_text(tn: int, tg: int, rn: int, rg: int) -> str:
    return f"{tn * tg} trainer ({tn}x{tg}) + {rn * rg} rollout ({rn}x{rg}) GPUs"


def describe_verl_placement(values: Mapping[str, Value]) -> str | None:
    if int(values.get("async_mode") or 0) < 2:
        return None
    tn, tg = int(values["nnodes"]), int(values["gpus_per_node"])
    rn, rg = int(values.get("rollout_nnodes") or 0), int(values.get("rollout_gpus_per_node") or tg)
    return _pools_text(tn, tg, rn, rg)


class VersionPacks:
    """verl's rule packs for the versions people run (``versions.py``): a framework instance per version, and
    the version a pasted config shows. 0.9.1 is the class's own rules."""

    name: str
    version: str
    ruleset: RuleSet
    releases = versions
    versions = versions.VERSIONS
    part = "any"  # which rules of a pack (versions.ruleset_for): "any" (both backends) or "megatron"
    log_formats = ("verl", "verl-jsonl")  # the console logger's lines, the file logger's JSON lines

    def free_keys(self, values: Mapping[str, Value]) -> set[str]:
        """The searchable keys recommend --from drops from a config, less those of a variable the printed command
        never writes (not in ``_EXPORT_ORDER``: actor.fsdp_config.fsdp_size, ref.log_prob_max_token_len_per_gpu):
        dropped, such a key was priced at the config's value (the space does not search it) but left out of the
        command printed (the DAPO recipe's fsdp_size=32 printed as FSDP over all 64 GPUs, whose check gave another
        step time and peak). Kept, it is carried as the config has it (``build_space``'s fixed_native)."""
        by_key = self.ruleset.by_key()
        return {k for k in super().free_keys(values)  # type: ignore[misc]
                if k not in by_key or by_key[k].name in _EXPORT_ORDER}

    def kept_batch(self, scenario: Any) -> dict[str, Any]:
        """verl's algorithm batch: prompts per step (data.train_batch_size, default 1024) and per actor update
        (ppo_mini_batch_size, default 256: 4 updates per step; the critic's follows it). A default that the GPUs
        cannot split (train_batch_size*n must divide over them: verl.driver.batch_divisible_by_gpus, and so must
        ppo_mini_batch_size*n over the data-parallel ranks) is the nearest that they can (1020 on 24 GPUs, n 8); a
        train batch the user set keeps 4 updates per step where a mini batch of it splits, else the nearest count
        that does (a train batch of 30 on 8 GPUs, n 4: mini 6, 5 updates). A fully-async recipe's
        batch is its own (minis x steps)."""
        fixed, searched = scenario.fixed, set(scenario.search)
        train_key, mini_key = "data.train_batch_size", f"{AR}.actor.ppo_mini_batch_size"
        variables = self.ruleset.variables
        default_train, default_mini = variables["train_batch_size"].default, variables["actor_mini"].default
        updates = default_train // default_mini
        n = scenario_n(scenario)
        total = max(1, scenario.total_gpus - _fixed_rollout_pool(fixed))  # the trainer's GPUs
        unit = total // math.gcd(total, n)  # a batch whose samples split over the GPUs is a multiple of this
        out: dict[str, Any] = {}
        if train_key not in fixed and train_key not in searched and not is_fully_async(fixed):
            step = updates * unit
            out[train_key] = max(step, step * round(default_train / step))
        train = fixed.get(train_key, out.get(train_key))
        if mini_key not in fixed and mini_key not in searched and isinstance(train, int) and train > 0:
            # the mini batch that splits the train batch into the updates nearest verl's 4 (fewer on a tie)
            minis = [d for d in divisors(train) if d % unit == 0]
            if minis:
                out[mini_key] = min(minis, key=lambda d: (abs(math.log(train / d / updates)), -d))
        return out

    @classmethod
    def for_version(cls, version: str):
        """This framework with the rules of another verl version (``versions.py``), pinned to it."""
        fw = cls()
        fw.version = version
        fw.ruleset = versions.ruleset_for(version, cls.part)
        fw.doc_ruleset = versions.ruleset_for(version, "fsdp" if cls.part == "any" else cls.part)
        fw.pinned = True
        return fw

    # a release whose trainer config keys we list apart from its pack's (versions.KEY_RELEASES: 0.9.0, judged by
    # 0.9.1's rules), where the user named it or its keys dated the config; None: the pack's own release
    key_release: str | None = None
    # the release was dated from the config (``for_config``), not named by the user: a key only other releases' trainer
    # configs have is then not refused (struct_keys.refused's ``named``)
    keys_dated: bool = False
    # the release the user named where its pack is another's (0.7.0: 0.7.1's pack); None: the pack's own release
    named_release: str | None = None

    @property
    def keys_version(self) -> str:
        """The release whose trainer config keys a config is read against (Hydra refuses a key it lacks)."""
        return self.key_release or self.version

    @property
    def release_named(self) -> str:
        """The release the user named (0.7.0, 0.7.1's pack; 0.9.0, 0.9.1's), as refusals and fix name it."""
        return self.named_release or self.keys_version

    def with_named_release(self, named: str):
        """A named release another's pack judges (verl 0.9.0: 0.9.1's) keeps its own trainer config keys: 0.9.0's
        Megatron grad_offload is no key its Hydra refuses. One without a list of its own (0.7.0: 0.7.1's pack) is
        kept as ``named_release``: its pack's list then refuses no key only other releases' lists have."""
        release = named.strip().lstrip("v").partition(".post")[0]
        if release == self.version:
            return self
        fw = copy.copy(self)
        fw.named_release = release
        if versions.KEY_RELEASES.get(release) == self.version:
            fw.key_release = release
        return fw

    def for_config(self, flat: Mapping[str, Any]) -> tuple[Framework, str | None]:
        """The version pack a pasted config shows (keys only some versions have), unless the user pinned one."""
        if self.pinned:
            return self, None
        from .. import get_framework

        version, why = versions.detect(flat)
        if version is None:
            return self, (f"checked with the verl {self.version} rules, the newest we follow ({why}); name yours "
                          f"with --framework {self.name}==0.8.0 (or 0.7.1, 0.6.1) if you run another")
        pack = versions.KEY_RELEASES.get(version, version)
        fw = copy.copy(get_framework(f"{self.name}=={pack}").with_named_release(version))
        fw.keys_dated = True
        judged = f"the verl {pack} rules" + (f" (verl {version} checks as {pack} does)" if pack != version else "")
        return fw, f"checked with {judged}: {why}; name another with --framework {self.name}==VERSION"

    def unknown_keys(self, flat: Mapping[str, Any]) -> list[str]:
        """The version-specific keys (versions.py) this version's trainer config lacks: Hydra refuses them."""
        return versions.missing_keys(flat, self.keys_version)

    def key_list(self, flat: Mapping[str, Any], command: bool = False) -> KeyList:
        """The release's trainer-config keys (struct_keys.py) with the base class's; Hydra's struct config refuses a
        key under a section that lacks it (``refused``), and any other key near a known one is suspected a typo."""
        base = super().key_list(flat, command)
        added = frozenset(str(k) for k in flat if isinstance(k, AddedKey))  # +key: Hydra adds it, never refuses it
        given = [k for k in base.given if k not in added]
        # a key we know other releases to have and this one to lack stops its launch too: under a release the user
        # named, and under the one inferred, which has them all (versions.detect) unless they belong to no single
        # release (grad_offload of 0.1-0.2 beside lora_rank of 0.4 on): then one of them stops whichever release runs
        release = self.keys_version
        lacks = set(versions.missing_keys({k: None for k in given}, release))
        named = self.pinned and not self.keys_dated
        struct = struct_keys.refused(flat, given, release, named)
        asked = self.named_release or release
        if named and asked != release and struct_keys.release_paths(asked) is not None:
            # a named release judged by another's pack whose trainer config keys we hold all the same (0.7.0, judged
            # by 0.7.1's rules: config_keys/0.7.0_*.txt, its wheel's _generated_ppo_trainer.yaml and
            # _generated_ppo_megatron_trainer.yaml) is read against its own keys, as its Hydra reads it: 0.7.0's
            # top-level reward_manager.* (verl/trainer/config/reward_manager.yaml, in its ppo_trainer.yaml's defaults
            # list) is no key it refuses, and 0.7.1's reward.* is
            struct = struct_keys.refused(flat, given, asked, named)
            own = struct_keys.release_keys(asked)
            lacks = {k for k in lacks if k not in own and not any(o.startswith(k + ".") for o in own)}
            release = asked
        elif named and asked != release:
            # a named release without a list of its own (0.6.0: 0.6.1's pack) has keys its pack's list lacks
            # (0.4.1's actor.profiler.all_ranks), which its Hydra takes: a key the listed releases on either side of
            # it lack is refused, one either holds is not; with no list on one side (0.4.1: none before 0.5.0) no
            # such key is
            below, above = struct_keys.listed_around(asked)
            held = (struct_keys.release_keys(below) | struct_keys.release_keys(above)) if below and above else None
            struct = [k for k in struct if k in struct_keys.refused(flat, [k], release) or (
                held is not None and k not in held)]
            # so with versions.py's version-specific keys: one the pack on either side has (0.6.1's
            # rollout.update_weights_bucket_megabytes, which 0.7.0 has too) is not refused
            around = versions.packs_around(asked)
            lacks = {k for k in lacks if not (versions._versions_of(k) or frozenset()) & around}
        refused = frozenset(struct) | frozenset(lacks)
        plus = frozenset(k for k in refused if struct_keys.adds_with_plus(k, release))
        # a key only other releases' trainer configs have (refused under a named release): no key of the same meaning
        # we know, so fix and recommend drop it, saying which releases have it (a key a "+" adds: written with one)
        # (or, where the release has the same key one section up or down, that key: struct_keys.moved_to)
        later = tuple((k, struct_keys.moved_to(k, release), f"a key of verl {', '.join(found)}'s trainer config")
                      for k in struct if k not in lacks and k not in plus and (found := struct_keys.releases_having(k)))
        # and one of the version-specific keys we know (versions.VERSION_KEYS: trainer.use_v1 under 0.5.0) likewise
        later += tuple((k, None, "a key of " + (words if (words := versions._listed(found)).startswith("verl ")
                                                 else f"verl {words}")) for k in sorted(lacks - plus)
                       if (found := versions._versions_of(k)))
        return replace(base, keys=base.keys | struct_keys.release_keys(release), others=base.others | added,
                       successors=base.successors + later, refused=refused, plus_adds=plus,
                       refusal="Could not override '{key}'. ... Key '{leaf}' is not in struct",
                       source="verl/trainer/main_ppo.py: hydra.main (the trainer config is a struct: OmegaConf "
                              "refuses an override of a key it lacks unless it starts with +; the release's keys: "
                              "verl/trainer/config/_generated_ppo_trainer.yaml, _generated_ppo_megatron_trainer.yaml)")

    def _keys(self) -> dict[str, str]:
        """Each variable's key (computed once per rule set: ``export`` asks it of every listed config; not to be
        changed by the caller)."""
        return by_identity(_BY_RULESET, self.ruleset,
                           lambda: {name: spec.key for name, spec in self.ruleset.variables.items()}, "keys", 64)

    def release_overrides(self, overrides: list[str], solution: Mapping[str, Value]) -> list[str]:
        """An answer's overrides as this release reads them: a key its trainer config lacks (``versions.lacks``, what
        ``check`` refuses under it) is left out where the answer holds the variable's default, the value the release
        runs without the key (0.5's rollout has no data_parallel_size: one engine per TP group)."""
        defaults = by_identity(_BY_RULESET, self.ruleset, lambda: {
            spec.key: (name, spec.default) for name, spec in self.ruleset.variables.items()}, "defaults", 64)
        out = []
        for arg in overrides:
            key = arg.partition("=")[0]
            name, default = defaults.get(key.lstrip("+"), (None, None))
            if name is not None and versions.lacks(key, self.keys_version) and solution.get(name, default) == default:
                continue
            out.append(arg)
        return out

    def doc_appendix(self) -> str:
        return docs.versions_markdown() if self.version == versions.NEWEST and self.part == "any" else ""

    def placements(self, scenario: Any, notes: list[str]) -> list:
        return verl_placements(self, scenario, notes)

    def describe_placement(self, values: Mapping[str, Value]) -> str | None:
        return describe_verl_placement(values)

    column_notes = columns.COLUMN_NOTES

    def waste_words(self, ruleset: RuleSet) -> str:
        """verl refuses a step that is not whole mini batches everywhere but in two places: 0.9.1's v1 trainer pads it
        with synthetic samples (verl.advice.batch_padded: trainer/ppo/v1/trainer_base.py
        _get_required_batch_multiple), the legacy workers of 0.7 and before split it with a short last mini batch
        (verl.advice.short_mini_batch: dp_actor.py update_policy); 0.8.0's trainer fails instead (no waste)."""
        ids = {r.id for r in ruleset.rules}
        if "verl.advice.batch_padded" in ids:
            return "the step padded with synthetic samples (the v1 trainer's, to whole mini batches)"
        if "verl.advice.short_mini_batch" in ids:
            return "the step's prompts missing from its short last mini batch (not padded)"
        return super().waste_words(ruleset)

    def column_values(self, env: Mapping[str, Value]) -> dict[str, Value]:
        return columns.column_values(env)

    def micro_batches_per_gpu(self, values: Mapping[str, Value]) -> list[dict[str, Any]]:
        from .cost import n_scaled_micro_batches

        if self.part == "megatron" or values.get("megatron"):  # verl's Megatron workers never scaled them
            return []
        keys = self._keys()
        return [{**p, "variable": keys[p["variable"]]} for p in n_scaled_micro_batches(values, self.version)]

    def value_notes(self, values: Mapping[str, Value], *, priced: bool = True) -> list[str]:
        from .cost import n_scaled_note

        # verl's Megatron workers never scaled the micro batch keys by rollout.n
        notes = [] if self.part == "megatron" or values.get("megatron") else n_scaled_note(values, self.version,
                                                                                            self._keys())
        if int(values.get("async_mode") or 0) < 2 or values.get("cluster_gpus") is not None:
            return notes
        trainer = int(values["nnodes"]) * int(values["gpus_per_node"])
        pool = int(values.get("rollout_nnodes") or 0) * int(values.get("rollout_gpus_per_node") or values["gpus_per_node"])
        return notes + [f"the trainer pool ({trainer} GPUs) and the rollout pool ({pool}) need {trainer + pool} GPUs: pass "
                "--gpus with the cluster's count to check they fit (verl.async.pools_fit_cluster)"]

    def entry_point(self, values: Mapping[str, Value]) -> str | None:
        module = RECIPE_ENTRY.get(int(values.get("async_mode") or 0))
        return f"python3 -m {module}" if module else None


class VerlFramework(VersionPacks, Framework):
    name = "verl"
    version = RULESET.version
    ruleset = ANY_RULESET  # both backends: actor.strategy / model_engine switch the Megatron rules on
    doc_ruleset = RULESET  # docs/rules-verl.md: the FSDP rules (Megatron: docs/rules-verl-megatron.md)
    syntax = "hydra"
    backend = "fsdp"
    doc_intro = docs.INTRO
    policy = repair.VERL
    error_families = ("verl",)
    model_keys = ("actor_rollout_ref.model.path",)
    example_inputs, example_inputs_source = EXAMPLE_INPUTS, EXAMPLE_SOURCE
    offload_switch = ("param_offload", "actor_rollout_ref.actor.fsdp_config.param_offload=True")
    lora_switch = ("lora_rank", f"actor_rollout_ref.model.lora_rank={LORA_RANK}")
    table_columns = columns.TABLE_COLUMNS
    derived_columns = columns.FSDP_DERIVED
    column_words = columns.COLUMN_WORDS
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    # prompts per step and per policy update (mini batch) decide the training; micro batches only split it
    shapes_learning = frozenset({"train_batch_size", "actor_mini", "critic_mini"})

    def searchable(self, values: Mapping[str, Value]) -> set[str]:
        return keep_dynamic_batching(super().searchable(values))

    def repair_policy(self, values: Mapping[str, Value] | None = None):
        # a pasted config that selects the Megatron backend moves Megatron's keys
        policy = repair.VERL_MEGATRON if values is not None and values.get("megatron") else repair.VERL
        return repair.for_values(policy, values, self.version)

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def from_script(self, args: list[str], scope: Mapping[str, str], gpus: int | None,
                    notes: list[str] | None = None) -> tuple[str, list[str], int | None]:
        # verl's GPU count is trainer.n_gpus_per_node * trainer.nnodes, in the arguments; the Megatron
        # trainer config, a strategy or 0.9's model_engine=megatron (ppo_trainer.yaml's defaults list:
        # actor@actor_rollout_ref.actor: ${model_engine}_actor; examples/*/run_qwen3_8b_megatron.sh) selects the
        # Megatron backend, as is_megatron reads a pasted config
        megatron = (any(a.endswith("=megatron") and "strategy" in a for a in args)
                    or "ppo_megatron_trainer" in " ".join(args)
                    or any(a.lstrip("+") == "model_engine=megatron" for a in args))
        # an override of the actor's config group entry (actor@actor_rollout_ref.actor=megatron_actor) picks its
        # backend whatever model_engine picks for it (is_megatron); the last one written is Hydra's
        actor = [a.partition("=")[2] for a in args if a.lstrip("+").partition("=")[0] == ACTOR_GROUP]
        if actor and _role_backend(ACTOR_GROUP, actor[-1]) is not None:
            megatron = bool(_role_backend(ACTOR_GROUP, actor[-1]))
        # the environment variables the cost model reads (an ``export`` line or the command's own prefix) join the
        # arguments as the environment words they are
        env = [f"{name}={scope[name]}" for name in SCRIPT_ENV
               if name in scope and not any(a.startswith(name + "=") for a in args)]
        return ("verl-megatron" if megatron else "verl"), [*env, *args], None

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_verl_tokens(tokens)

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        return group_notes(flat, priced, self.keys_version)

    def unmodelled_backend(self, flat: Mapping[str, Any]) -> str | None:
        picked = unmodelled_engine(flat)
        return None if picked is None else f"{picked} is a training engine we do not model"

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        check_groups(flat, self.keys_version)
        return config_to_values(flat, gpus=gpus, model=model, ruleset=self.ruleset)

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        if is_megatron(scenario.fixed):
            raise InputError("framework", "this scenario selects the Megatron backend.",
                             "use --framework verl-megatron to search Megatron parallel sizes.")
        return build_space(scenario, model, with_knobs, ruleset=self.ruleset)

    def cost_spec(self, model: ModelCard, gpu: Any):
        from .cost import cost_spec

        spec = cost_spec(model, gpu, self.version)
        fsdp_phases = spec.phases_run

        def phases_run(values: Mapping[str, Value]) -> list[str]:
            if values.get("megatron"):
                raise InputError(
                    STRATEGY_KEY, "this config uses the Megatron backend.",
                    "use --framework verl-megatron to predict its memory (or drop --gpu/--model).",
                )
            return fsdp_phases(values)

        spec.phases_run = phases_run
        return spec

    def native_value(self, name: str, value: Value) -> Any:
        return value if value is None else _native_value(name, value)

    def export_yaml(self, native: list[str]) -> str | None:
        return overrides_to_yaml(native)

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        out = solution_to_overrides(solution, space.fixed_native if space else None, keys=self._keys())
        return self.release_overrides(out, solution)

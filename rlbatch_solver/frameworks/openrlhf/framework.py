"""OpenRLHF 0.11.2 (``python -m openrlhf.cli.train_ppo_ray``) config import and export.

Import: ``--flag value`` arguments as pasted from a launch script (or a YAML
file, nested or flat), in the dotted names of 0.10.2+ (``--train.batch_size``)
or the underscore names they replaced (``--train_batch_size``), -> values of
the rule variables in ``rules.py``, with 0.11.2's argparse defaults where
a flag is absent. Underscore names are mapped to their dotted successors and
reported by the error ``openrlhf.driver.legacy_flag_names``: 0.11.2's
argparse has no aliases for them (``fix`` renames them: ``old_names``).

Export: a solution -> paste-ready ``--flag value`` arguments in 0.11.2 names
(switches as bare ``--flag``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...release_numbers import release_numbers
from ...errors import InputError, did_you_mean
from ...rules.base import Rule, RuleKind, RuleSet, Stage, Value
from ...rules.ids import tie_rule
from ...rules.expr import BoolVar, IntVar, divides
from . import columns, docs, errors, repair, versions
from .cost import one_world
from .names import (ALL_RELEASE_FLAGS, CONVERTED_LEGACY, DOTTED_OF, KEPT_LEGACY, LEGACY_FLAGS, LEGACY_ONLY,
                    NO_SUCCESSOR_WHY, RENAMED_LEGACY, SUCCESSOR_OF, release_has, release_key, releases_with)
from .release_flags import RELEASE_FLAGS
from .rules import RULESET, VARIABLES
from ..key_names import KeyList
from ..base import Framework, Space, attention_constants, divisors, pow2, priced_words
from ...costmodel.host import STANDARD_NODE_GPUS
from ..overrides import ListFlag, memory_share_permille, parse_flag_args, split_tokens, resolve_algorithm, whole_number

ESTIMATORS, GROUP_ESTIMATORS = versions.ESTIMATORS, versions.GROUP_ESTIMATORS
# estimator values of older releases
LEGACY_ESTIMATORS = {"grpo": "group_norm"}

# What each --algo sets, as OpenRLHF's example scripts do (examples/scripts/*.sh).
ALGORITHMS: dict[str, dict[str, Any]] = {
    "ppo": {"algo.advantage.estimator": "gae", "algo.kl.init_coef": 0.01},
    "grpo": {"algo.advantage.estimator": "group_norm", "algo.kl.init_coef": 0.001, "algo.kl.use_loss": True,
             "algo.kl.estimator": "k3"},
    # DAPO (train_dapo_ray_hybrid_engine.sh): group_norm with dynamic filtering and a clip-higher range
    "dapo": {"algo.advantage.estimator": "group_norm", "algo.kl.init_coef": 0.001, "algo.kl.use_loss": True,
             "algo.kl.estimator": "k3", "algo.dynamic_filtering_enable": True},
    "dr_grpo": {"algo.advantage.estimator": "dr_grpo", "algo.kl.init_coef": 0.001, "algo.kl.use_loss": True},
    "gspo": {"algo.advantage.estimator": "group_norm", "actor.policy_loss_type": "gspo", "algo.kl.init_coef": 0.0},
    # ADPO is not an OpenRLHF estimator: group-normalized advantages, so GRPO's batch rules
    "adpo": {"algo.advantage.estimator": "group_norm", "algo.kl.init_coef": 0.001, "algo.kl.use_loss": True},
    "rloo": {"algo.advantage.estimator": "rloo", "algo.kl.init_coef": 0.001, "algo.kl.use_loss": True},
    "reinforce++": {"algo.advantage.estimator": "reinforce", "algo.kl.init_coef": 0.01},
    "reinforce++-baseline": {"algo.advantage.estimator": "reinforce_baseline", "algo.kl.init_coef": 0.001,
                             "algo.kl.use_loss": True, "algo.kl.estimator": "k2"},
}
ALGORITHM_ALIASES = {"reinforce_plus_plus": "reinforce++", "reinforcepp": "reinforce++", "reinforce": "reinforce++",
                     "reinforce_baseline": "reinforce++-baseline", "group_norm": "grpo", "dr-grpo": "dr_grpo"}

# Variables not read from one flag: other flags decide the need_* switches, the model card the constants.
DECIDED_BY_TOOL = {"need_critic", "need_ref", "need_reward_model", "group_estimator", "legacy_flag_names", "one_world",
                   "cluster_num_gpus", "num_heads", "num_kv_heads", "max_position_embeddings"}
_NONNEG = {"vllm_num_engines", "vllm_generate_batch_size"}  # 0 means "none" / "same as rollout.batch_size"
# a group's size may be 0 when its model does not run (train_ppo_ray builds no group for it: argparse takes any int);
# one that runs with 0 GPUs is refused once the run's models are known (``_check_unused_groups``)
_GROUP_SIZES = {f"{g}_{n}": g for g in ("ref", "critic", "reward") for n in ("nnodes", "gpus_per_node")}
_GROUP_RUNS = {"ref": "need_ref", "critic": "need_critic", "reward": "need_reward_model"}


def canonical_algorithm(name: str) -> str:
    return resolve_algorithm(name, ALGORITHM_ALIASES, ALGORITHMS, "OpenRLHF")




# the pre-0.10 length flags (0.4.0 to 0.8.11), converted together (normalize_flags), each -> the dotted flag that
# replaced it: the response limit (the same number) and the prompt limit (prompt and response together). 0.8.11's
# cli/train_ppo_ray.py train() gives the vLLM engines a context of --max_len, or else prompt_max_len +
# generate_max_len, and trainer/ppo_utils/experience_maker.py SamplesGenerator._generate_vllm cuts each prompt to
# prompt_max_len tokens and generates up to generate_max_len. 0.11.2's --data.max_len is the total (its argparse help:
# "Max total sequence length (prompt + response)"; the engines' context, create_vllm_engines), --rollout.max_new_tokens
# vLLM's max_tokens (trainer/ppo_utils/samples_generator.py SamplesGenerator._dispatch_prompts_to_vllm), and
# utils/agent.py SingleTurnAgentExecutor.execute cuts each prompt to data.max_len - rollout.max_new_tokens tokens: so
# data.max_len = prompt_max_len + generate_max_len and rollout.max_new_tokens = generate_max_len keep both limits
LENGTH_FLAGS = {"generate_max_len": "rollout.max_new_tokens", "prompt_max_len": "data.max_len"}
OLD_LENGTH_DEFAULT = 1024  # both flags' default (0.8.11 cli/train_ppo_ray.py argparse)


def _old_lengths(flat: Mapping[str, Any]) -> bool:
    """Whether the config sets --generate_max_len or --prompt_max_len (normalize_flags reads them as the two flags
    that replaced them)."""
    return any(str(k).removeprefix("--") in LENGTH_FLAGS for k in flat)


def _lengths_words(flat: Mapping[str, Any], native: Mapping[str, Any]) -> tuple[str, bool, str]:
    """The config's pre-0.10 length flags (what a dotted release refuses), whether it is one, and the two flags that
    replaced them with the numbers they were read as."""
    given = {str(k).removeprefix("--"): v for k, v in flat.items()}
    shown = [f"--{k} {given[k]}" for k in reversed(LENGTH_FLAGS) if k in given]
    old = " ".join(shown) + (": a flag" if len(shown) == 1 else ": flags") + " of the releases before 0.10, which " \
        "0.10.2 and later refuse"
    return old, len(shown) == 1, (f"--data.max_len {native.get('data.max_len')} (prompt and response together) and "
                                  f"--rollout.max_new_tokens {native.get('rollout.max_new_tokens')}")


def _old_lengths_note(flat: Mapping[str, Any], native: Mapping[str, Any]) -> list[str]:
    """The pre-0.10 length flags a dotted release refuses, said with the two that replaced them and their numbers."""
    if not _old_lengths(flat):
        return []
    old, one, new = _lengths_words(flat, native)
    return [f"{old}; {'it was' if one else 'they were'} read as {new}: write those instead"]


def _length_successors(flat: Mapping[str, Any]) -> list[tuple[str | None, str | None, Any]]:
    """The pre-0.10 length flags as the dotted flags that replaced them, with the values normalize_flags reads
    (LENGTH_FLAGS): rows (the old flag, None where the config leaves it at its default; the dotted flag, None where the
    config sets that one too, under its own name or a one-to-one older one such as --max_len; its value). None where
    the config sets neither, or a value that is no whole number (the reading says so)."""
    if not _old_lengths(flat):
        return []
    native, _ = normalize_flags(flat)
    plain = {str(k).removeprefix("--") for k in flat}
    rows = []
    for old, new in LENGTH_FLAGS.items():
        set_too = any(new in (k, DOTTED_OF.get(k)) for k in plain - set(LENGTH_FLAGS))
        if not set_too and not isinstance(native.get(new), int):
            return []
        rows.append((old if old in plain else None, None if set_too else new, native.get(new)))
    return [row for row in rows if row[0] or row[1]]


def normalize_flags(flat: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """Flags (with or without ``--``) in 0.11.2's dotted names, and whether old names were used."""
    out: dict[str, Any] = {}
    legacy = False
    old: dict[str, Any] = {}
    for raw_key, value in flat.items():
        key = raw_key[2:] if raw_key.startswith("--") else raw_key
        if key in LEGACY_FLAGS:
            legacy = True
            old[LEGACY_FLAGS[key]] = value
        elif key in LEGACY_ONLY:
            # a flag kept under its own name is refused by name (key_list: other_release_flags), not by this rule
            legacy = legacy or key not in KEPT_LEGACY
            old[key] = value
        else:
            out[key] = value
    if "ref_reward_offload" in old:
        value = old.pop("ref_reward_offload")
        old.setdefault("ref.offload", value)
        old.setdefault("reward.offload", value)
    if any(k in old for k in LENGTH_FLAGS):  # before 0.10: prompt_max_len + generate_max_len instead of max_len
        gen = old.pop("generate_max_len", OLD_LENGTH_DEFAULT)
        prompt = old.pop("prompt_max_len", OLD_LENGTH_DEFAULT)
        old.setdefault("rollout.max_new_tokens", gen)
        if isinstance(gen, int) and isinstance(prompt, int) and not isinstance(gen, bool):
            old.setdefault("data.max_len", prompt + gen)
    for k in [k for k in old if k in LEGACY_ONLY]:  # in the config's order (a set's would change run to run)
        value = old.pop(k, None)
        if value is not None and (k in KEPT_LEGACY or k in RENAMED_LEGACY):  # the config's own setting
            out.setdefault(RENAMED_LEGACY.get(k, k), value)
    for k, v in old.items():  # a dotted flag given as well wins
        out.setdefault(k, v)
    return out, legacy


def _typed(key: str, name: str, value: Any) -> Value:
    spec = VARIABLES[name]
    if name == "fp16":
        if value not in ("bf16", "fp16"):
            raise InputError(key, f"'{value}' is not a parameter dtype of OpenRLHF.", f"write --{key} bf16 or fp16.")
        return value == "fp16"
    if name == "gmu_permille":
        return memory_share_permille(key, value, f"write --{key} 0.6 (vLLM memory share).")
    if value is None:
        if spec.optional:
            return None
        raise InputError(key, "is null but OpenRLHF needs a value here.", f"give --{key} a value or drop it.")
    if spec.kind == "bool":
        if isinstance(value, bool):
            return value
        raise InputError(key, f"'{value}' is not a switch value.", f"write --{key} alone (store_true) or drop it.")
    value = whole_number(key, value, f"--{key}")
    if name == "zero_stage":
        if value not in (0, 1, 2, 3):
            raise InputError(key, f"{value} is not a DeepSpeed ZeRO stage.", "use 0, 1, 2 or 3.")
        return value
    if name in _NONNEG or name in _GROUP_SIZES:
        if value < 0:
            raise InputError(key, f"{value} must not be negative.", f"set --{key} to 0 or more.")
        if name == "vllm_generate_batch_size" and value == 0:
            return None  # OpenRLHF: a falsy value means rollout.batch_size
        return value
    if value < 1:
        raise InputError(key, f"{value} must be at least 1.", f"set --{key} to a positive number.")
    return value


def _number(flat: Mapping[str, Any], key: str, default: float, version: str = versions.NEWEST) -> float:
    value = flat.get(key, default)
    shown = release_key(key, version)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(shown, f"'{value}' is not a number.", f"write --{shown} 0.01.")
    if value < 0:
        raise InputError(shown, f"{value} must not be negative.", f"set --{shown} to 0 or more.")
    return float(value)


def _check_unused_groups(values: dict[str, Value], version: str = versions.NEWEST) -> None:
    """A group sized 0 is fine for a model the run does not have (read as 1: no rule reads an absent model's group,
    and none may divide by 0), and an input error for one it has."""
    for name, group in _GROUP_SIZES.items():
        if values.get(name) == 0 and not values.get(_GROUP_RUNS[group]):
            values[name] = 1
        elif values.get(name) == 0:
            key = release_key(VARIABLES[name].key, version)
            raise InputError(key, f"0, but this run has a {group} model, which needs GPUs.",
                             f"set --{key} to a positive number.")


def _need_flags(flat: Mapping[str, Any], version: str = versions.NEWEST) -> dict[str, bool]:
    """need_critic / need_ref / need_reward_model / group_estimator as ``version``'s train_ppo_ray decides them
    (versions.RELEASES: its estimators, and whether it always builds the reference model)."""
    release = versions.RELEASES[version]
    key = "algo.advantage.estimator"
    shown = release_key(key, version)
    if not release.has_estimator and key in flat:
        raise InputError(shown, f"is not a flag of OpenRLHF {version}: it trains PPO with a critic only (0.5 "
                         "added --advantage_estimator).",
                         "drop it, or name the release the config is for (--framework openrlhf==0.5.9 or newer).")
    est = flat.get(key, "gae")
    if version == versions.NEWEST:
        est = LEGACY_ESTIMATORS.get(str(est), est)
    if est not in release.estimators:
        choices = release.estimators
        raise InputError(
            shown, f"'{est}' is not an advantage estimator of OpenRLHF {version}.{did_you_mean(str(est), choices)}",
            f"use one of: {', '.join(choices)}.",
        )
    remote = bool(flat.get("reward.remote_url")) or bool(flat.get("train.agent_func_path"))
    return {
        "need_critic": est == "gae",  # the driver clears critic.model_name_or_path for every other estimator
        # train(): ref group only if init_coef > 0 (0.4.0 and 0.5.9: always)
        "need_ref": release.ref_always or _number(flat, "algo.kl.init_coef", 0.01, version) > 0,
        "need_reward_model": not remote,  # train(): reward group unless reward.remote_url (agent sets it)
        "group_estimator": est in release.group_estimators,
    }


def config_to_values(
    flat: Mapping[str, Any],
    *,
    gpus: int | None = None,
    model: ModelCard | None = None,
    version: str = versions.NEWEST,
) -> dict[str, Value]:
    """train_ppo_ray flags -> rule variable values, the argparse defaults of ``version`` (0.11.2's unless another
    release we follow is named) filled in."""
    flat, legacy = normalize_flags(flat)
    ruleset = versions.ruleset_for(version)
    by_key = ruleset.by_key()
    values: dict[str, Value] = {}
    for name, spec in ruleset.variables.items():
        if name in DECIDED_BY_TOOL:
            continue
        # an input error names the flag as the release spells it (underscore names before 0.10.2)
        values[name] = _typed(release_key(spec.key, version), name, flat[spec.key]) if spec.key in flat \
            else spec.default
    for key in flat:
        spec = by_key.get(key)
        if spec is not None and spec.name in DECIDED_BY_TOOL:
            raise InputError(release_key(key, version), "is decided from other flags, not set directly.", "drop it.")
    values.update(_need_flags(flat, version))
    _check_unused_groups(values, version)
    values["legacy_flag_names"] = legacy
    if gpus is not None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        values["cluster_num_gpus"] = gpus  # unknown: the GPU budget rule is skipped (and listed as skipped)
    if model is not None:
        values.update(attention_constants(model))
    return values


# -- export -------------------------------------------------------------------------
_EXPORT_ORDER = [
    "actor_nnodes", "actor_gpus_per_node", "ref_nnodes", "ref_gpus_per_node", "critic_nnodes", "critic_gpus_per_node",
    "reward_nnodes", "reward_gpus_per_node", "vllm_num_engines", "vllm_tp", "colocate_all", "colocate_actor_ref",
    "colocate_critic_reward", "async_train", "partial_rollout", "vllm_sleep", "gmu_permille",
    "rollout_batch_size", "vllm_generate_batch_size", "micro_rollout_batch_size", "n", "train_batch_size",
    "micro_train_batch_size", "max_len", "max_new_tokens", "zero_stage", "ring_attn_size", "ds_tp", "fp16",
    "packing_samples", "dynamic_batch", "train_max_tokens", "grad_ckpt", "adam_offload", "ref_offload",
    "reward_offload", "enable_ema", "load_in_4bit",
]
# a flag of a model group that does not run is left out
_NEEDS = {
    **{f"ref_{w}": "need_ref" for w in ("nnodes", "gpus_per_node", "offload")},
    **{f"critic_{w}": "need_critic" for w in ("nnodes", "gpus_per_node")},
    **{f"reward_{w}": "need_reward_model" for w in ("nnodes", "gpus_per_node", "offload")},
    "colocate_actor_ref": "need_ref",
    "colocate_critic_reward": "need_critic",
}


def _exported(name: str, solution: Mapping[str, Value]) -> bool:
    if name == "train_max_tokens":
        return bool(solution.get("dynamic_batch"))
    if name in ("reward_nnodes", "reward_gpus_per_node") and solution.get("need_critic") \
            and solution.get("colocate_critic_reward"):
        return True  # train() compares them with the critic's even when the reward is remote
    need = _NEEDS.get(name)
    return need is None or bool(solution.get(need, True))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def release_flag(key: str, value: Any, version: str) -> str | None:
    """One exported ``--key value`` as ``version`` reads it; 0.5.9 has a switch for the k3 KL estimator
    (``--use_kl_estimator_k3``) where later releases have ``--kl_estimator``."""
    if key == "algo.kl.estimator" and not release_has(key, version):
        return flag("use_kl_estimator_k3", value == "k3")
    return flag(release_key(key, version), value)


# how an --algo places its KL term (ALGORITHMS): a release without the flag computes the KL its own way (0.5.9: in
# the reward, k1 or --use_kl_estimator_k3), so the setting is left out rather than refused
KL_DETAILS = frozenset({"algo.kl.use_loss", "algo.kl.estimator"})


def check_release_flags(native: dict[str, Any], version: str, algo: str | None) -> list[str]:
    """A recommendation for an older release sets only flags it has: an ``--algo`` (or a fixed flag) that needs one
    it lacks is an input error naming the release; an ``--algo``'s KL placement it lacks is left out, and the notes
    returned say so."""
    notes: list[str] = []
    if version == versions.NEWEST:
        return notes
    for key in sorted(KL_DETAILS):
        if algo and key in ALGORITHMS[algo] and key in native and not release_has(key, version) \
                and not (key == "algo.kl.estimator" and "use_kl_estimator_k3" in RELEASE_FLAGS[version]):
            value = native.pop(key)
            if value is not False:
                notes.append(_kl_left_out(key, value, algo, version))
    release = versions.RELEASES[version]
    est = native.get("algo.advantage.estimator", "gae")
    field = "algo" if algo else release_key("algo.advantage.estimator", version)
    if est not in release.estimators:
        raise InputError(field, f"{'--algo ' + algo if algo else 'the config'} runs the {est} advantage estimator, "
                         f"which OpenRLHF {version} does not have (its estimators: {', '.join(release.estimators)}).",
                         "choose an algorithm of that release (--algo ppo runs on every release), or name a newer "
                         "release with --framework openrlhf==VERSION.")
    for key, value in native.items():
        if key == "algo.advantage.estimator" and not release.has_estimator:
            continue  # gae: PPO, the one algorithm 0.4.0 runs
        if key == "algo.kl.estimator" and value in ("k1", "k3") and "use_kl_estimator_k3" in RELEASE_FLAGS[version]:
            continue
        if key == ASSUMED_REWARD_KEY or release_has(key, version) or value is False or value is None:
            continue
        shown = f"--{release_key(key, version)}" + ("" if value is True else f" {value}")
        what = f"--algo {algo} sets {shown}" if algo and key in ALGORITHMS[algo] else f"{shown} is set"
        raise InputError(field if algo and key in ALGORITHMS[algo] else key,
                         f"{what}, but OpenRLHF {version}'s train_ppo_ray has no such flag.",
                         "choose an algorithm of that release (--algo ppo runs on every release), or name a newer "
                         "release with --framework openrlhf==VERSION.")
    return notes


def _kl_left_out(key: str, value: Any, algo: str, version: str) -> str:
    """Why the answer for an older release lacks one of the ``--algo``'s KL settings (KL_DETAILS)."""
    shown = f"--{key}" + ("" if value is True else f" {value}")
    k3 = "use_kl_estimator_k3" in RELEASE_FLAGS[version]
    if key == "algo.kl.use_loss":
        how = ("its KL penalty goes into the reward, weighted by --init_kl_coef (openrlhf/models/utils.py "
               "compute_reward, from trainer/ppo_utils/experience_maker.py), "
               + ("k1, or k3 with --use_kl_estimator_k3" if k3 else "k1"))
    else:
        how = "its KL estimate is k1, the only one it has (openrlhf/models/utils.py compute_approx_kl)"
    return (f"--algo {algo} sets {shown} on the newest OpenRLHF; {version}'s train_ppo_ray has no --"
            f"{release_key(key, version)}, so the command leaves it out: {how}")


def flag(key: str, value: Any) -> str | None:
    """One ``--key value`` (a switch: bare ``--key`` when on, nothing when off)."""
    if value is None or value is False:
        return None
    if value is True:
        return f"--{key}"
    if isinstance(value, list):  # an nargs='+' flag (--target_modules q_proj v_proj): one word per item
        return ListFlag(f"--{key}", [_fmt(v) for v in value])
    return f"--{key} {_fmt(value)}"


def solution_to_flags(solution: Mapping[str, Value], extra: Mapping[str, Any] | None = None,
                      version: str = versions.NEWEST) -> list[str]:
    """Paste-ready flags, in the names of ``version`` (underscore names before 0.10.2)."""
    out: list[str] = []
    for name in _EXPORT_ORDER:
        # a flag the release does not have (0.6.2: no --ds_tensor_parallel_size) is left at what it does without it
        if name not in solution or not _exported(name, solution) or not release_has(VARIABLES[name].key, version):
            continue
        value = solution[name]
        if name == "gmu_permille" and value is not None:
            value = value / 1000
        if name == "fp16":
            value = "fp16" if value else None
        item = flag(release_key(VARIABLES[name].key, version), value)
        if item and item not in out:  # before 0.10.2 --ref_reward_offload is both offloads' flag
            out.append(item)
    for key, value in (extra or {}).items():
        if key in KEPT_LEGACY and key not in RELEASE_FLAGS[version]:  # an old release's flag: argparse refuses it here
            continue
        item = release_flag(key, value, version)
        if item:
            out.append(item)
    return out


# -- search space ----------------------------------------------------------------------
def _divisors(x: int) -> list[int]:
    return divisors(x)


# the reward function of OpenRLHF's examples (examples/python/reward_func.py, run from its repository's folder),
# assumed where a config names no reward: printed with the answer, once, for the user to replace
ASSUMED_REWARD = "examples/python/reward_func.py"
ASSUMED_REWARD_KEY = "reward.remote_url"  # --remote_rm_url before 0.10.2: every release has it

# What people use (OpenRLHF's example scripts and docs): powers of two.
DEFAULT_SEARCH: dict[str, list[Value]] = {
    "rollout_batch_size": pow2(16, 1024),
    "train_batch_size": pow2(16, 1024),
    "micro_train_batch_size": pow2(1, 16),
    "micro_rollout_batch_size": pow2(1, 32),
}

# Memory and speed switches searched when the user leaves them alone (recommend).
KNOB_SEARCH: dict[str, list[Value]] = {
    "gmu_permille": [400, 500, 600, 700, 800, 900],
    "zero_stage": [2, 3],
    "grad_ckpt": [True, False],
    "adam_offload": [False, True],
}

# Group layouts follow the actor's unless the user sets them (the examples give all groups one size).
GROUP_TIES = {f"{g}_{what}": f"actor_{what}" for g in ("ref", "critic", "reward") for what in ("nnodes", "gpus_per_node")}


def default_n(algorithm: str) -> int:
    return 1 if algorithm in ("ppo", "reinforce++") else 8


def _tie(name: str, follows: str) -> Rule:
    if VARIABLES[name].kind == "bool":
        a, b = BoolVar(name), BoolVar(follows)
        holds = (a & b) | (~a & ~b)
    else:
        holds = IntVar(name).eq(IntVar(follows))
    return tie_rule(name, holds,
                    f"{VARIABLES[name].key} = {{{name}}} follows {VARIABLES[follows].key} = {{{follows}}}",
                    "rlbatch-solver search space: OpenRLHF's examples give every model group one layout")


def build_space(scenario: Any, model: ModelCard | None, with_knobs: bool = False,
                version: str = versions.NEWEST) -> Space:
    """Domains for an OpenRLHF scenario: fixed values, the user's ranges, our defaults; for an older release
    (``version``) its defaults and only the flags its train_ppo_ray has."""
    # no algorithm (recommend --from): the config's own algorithm flags, in scenario.fixed, are all there is
    if scenario.fixed.get(LAUNCHER):
        # recommend --from a command of the launcher without Ray: the search places train_ppo_ray's groups and engines
        raise InputError("launcher", f"recommend searches train_ppo_ray's layouts (Ray placement groups, vLLM "
                         f"engines); a command of {NON_RAY_MODULE} (the launcher without Ray, one DeepSpeed world) is "
                         "not searched.", "check it with `rlbatch check` or repair it with `rlbatch fix` (both judge "
                         "train_ppo.py's own flags), or recommend from a train_ppo_ray command.")
    algo = canonical_algorithm(scenario.algorithm) if scenario.algorithm else "grpo"
    native = dict(ALGORITHMS[algo]) if scenario.algorithm else {}
    native.update(scenario.fixed)
    native, _ = normalize_flags(native)
    notes = check_release_flags(native, version, algo if scenario.algorithm else None)
    if not versions.RELEASES[version].has_estimator:
        native.pop("algo.advantage.estimator", None)  # gae (check_release_flags): 0.4.0 has no such flag
    if not native.get("reward.model_name_or_path") and not native.get("train.agent_func_path"):
        # a scenario names no reward model: assume a reward function (reward.remote_url), as the RLVR examples;
        # the exported flags carry a placeholder for it
        native.setdefault(ASSUMED_REWARD_KEY, ASSUMED_REWARD)
    total, per_node, nnodes = scenario.total_gpus, scenario.per_node, scenario.nnodes
    n = scenario.n if scenario.n is not None else default_n(algo)
    lengths = {"data.max_len": scenario.prompt_length + scenario.response_length,
               "rollout.max_new_tokens": scenario.response_length, "rollout.n_samples_per_prompt": n}
    groups = {f"{g}.num_nodes": nnodes for g in ("actor", "ref", "critic", "reward")}
    base = config_to_values({**groups, **lengths, **native}, gpus=total, model=model, version=version)
    ruleset = versions.ruleset_for(version)
    by_key = ruleset.by_key()
    user_set = {by_key[k].name for k in native if k in by_key}
    domains: dict[str, list[Value]] = {name: [value] for name, value in base.items()}
    for raw_key, values in scenario.search.items():
        key = raw_key[2:] if raw_key.startswith("--") else raw_key
        key = LEGACY_FLAGS.get(key, key)
        spec = by_key.get(key)
        if spec is None or spec.name in DECIDED_BY_TOOL:
            raise InputError(
                f"search.{raw_key}", f"is not an OpenRLHF flag we search.{did_you_mean(key, by_key)}",
                "search over batch, micro-batch, GPU and parallel sizes (train.batch_size, vllm.num_engines, ...).",
            )
        domains[spec.name] = [_typed(key, spec.name, v) for v in values]
        user_set.add(spec.name)
    search: dict[str, list[Value]] = dict(DEFAULT_SEARCH)
    search["actor_gpus_per_node"] = sorted(set(pow2(1, per_node)) | {per_node})
    search["vllm_num_engines"] = sorted(set(pow2(1, total)) | set(_divisors(total)))
    search["vllm_tp"] = [t for t in (1, 2, 4, 8) if t <= per_node]
    search["colocate_all"] = [True, False]
    search["packing_samples"] = [True]  # the examples all pack (flash-attention varlen)
    if base["need_ref"]:
        search["colocate_actor_ref"] = [False, True]
    if base["need_critic"]:
        search["colocate_critic_reward"] = [False, True]
    if with_knobs:
        search.update(KNOB_SEARCH)
    for name, values in search.items():
        # an older release searches only what its train_ppo_ray has a flag for (0.4.0: no packing, no colocate_all,
        # no vLLM memory share); the rest keeps its default
        if name not in user_set and release_has(ruleset.variables[name].key, version):
            domains[name] = list(values)
    extra: list[Rule] = []
    for name, follows in GROUP_TIES.items():
        if name in user_set:
            continue
        domains[name] = list(domains[follows])
        extra.append(_tie(name, follows))
    # One canonical spelling per layout: colocate_all already colocates actor+ref and critic+reward.
    extra.append(Rule(
        "search.canonical_colocation",
        ~BoolVar("colocate_all") | (~BoolVar("colocate_actor_ref") & ~BoolVar("colocate_critic_reward")),
        "train.colocate_all = {colocate_all} already places ref and critic with the actor "
        "(colocate_actor_ref = {colocate_actor_ref}, colocate_critic_reward = {colocate_critic_reward})",
        Stage.SEARCH, "rlbatch-solver search space: no duplicate layouts", kind=RuleKind.SEARCH,
    ))
    if scenario.objective != "gpus":  # --objective gpus asks how few of them will do: some may stay idle
        extra.append(Rule(
            "search.use_all_gpus", IntVar("gpus_needed").eq(IntVar("cluster_num_gpus")),
            "the layout uses {gpus_needed} of the {cluster_num_gpus} GPUs",
            Stage.SEARCH, "rlbatch-solver search space: engines x TP and the model groups cover the GPUs",
            kind=RuleKind.SEARCH,
        ))
    if not {"train_batch_size", "rollout_batch_size"} & user_set:
        extra.append(Rule(
            "search.whole_train_batches", divides(IntVar("train_batch_size"), IntVar("rollout_samples")),
            "rollout.batch_size*n = {rollout_samples} is a multiple of train.batch_size = {train_batch_size}",
            Stage.SEARCH, "rlbatch-solver search space: the advice openrlhf.advice.whole_train_batches",
            kind=RuleKind.SEARCH,
        ))
    fixed_native = {k: v for k, v in native.items() if k not in by_key}
    return Space(domains, extra, fixed_native, notes)


# the environment variables a launch script sets that the host estimate reads (cost only): the one that picks vLLM's
# engine (vllm/envs.py) and Ray's memory monitor line (src/ray/common/ray_config_def.h memory_usage_threshold, read
# from RAY_memory_usage_threshold when Ray starts)
VLLM_USE_V1 = "VLLM_USE_V1"
RAY_THRESHOLD = "RAY_memory_usage_threshold"
SCRIPT_ENV = (VLLM_USE_V1, RAY_THRESHOLD)
# The non-Ray launcher (versions.has_non_ray_launcher): ``deepspeed --module openrlhf.cli.train_ppo``, ``python -m
# openrlhf.cli.train_ppo`` or the script itself (examples/train_ppo.py before it moved into the package) under deepspeed
# or torchrun. Its words in a command set this internal key (not a flag: key_list leaves it out).
NON_RAY_MODULE = "openrlhf.cli.train_ppo"
LAUNCHER = "__non_ray_launcher"


def _non_ray_word(word: Any) -> bool:
    """A command word that names openrlhf/cli/train_ppo.py (not train_ppo_ray.py)."""
    w = str(word).strip("'\"")
    return w == NON_RAY_MODULE or w == "train_ppo.py" or w.endswith("/train_ppo.py")


def _launched(flat: Mapping[str, Any]):
    """The non-Ray launcher's own split (parse stores launch_script.launcher_gpus' reading of its words as LAUNCHER's
    value where they give a count), else None."""
    from ...launch_script import Launched

    started = flat.get(LAUNCHER)
    return started if isinstance(started, Launched) and started.per_node else None


def _a_release_flag(key: str) -> bool:
    """Whether ``key`` is a flag some release's train_ppo_ray parses (release_flags.py, each in its own spelling), not
    one of the tool's own inputs (cluster_num_gpus is --gpus; release_has reads anything as the newest's)."""
    return any(release_key(key, v) in flags for v, flags in RELEASE_FLAGS.items())


def _launcher_count(flat: Mapping[str, Any]) -> int:
    """The GPUs the non-Ray launcher's own words start, else 0."""
    launched = _launched(flat)
    return launched.gpus if launched is not None else 0


def _cost_flags(flat: Mapping[str, Any], version: str = versions.NEWEST) -> dict[str, Value]:
    """Cost-model inputs no rule reads (cost.py): --ds.enable_sleep, --vllm.enforce_eager (--enforce_eager before
    0.10.2), DeepSpeed's gradient accumulation dtype (--grad_accum_dtype, or the release's default: fp32 in 0.4.0,
    versions.py), and what the release's code decides: its log-prob path, 0.5.9's lowered colocated vLLM share and
    whether its pinned vLLM counts its CUDA graphs inside its budget."""
    native, _ = normalize_flags(flat)
    dtype = native.get("grad_accum_dtype", native.get("ds.grad_accum_dtype"))
    fp32 = versions.RELEASES[version].grad_accum_fp32 if dtype in (None, "") else str(dtype) == "fp32"
    release = versions.RELEASES[version]
    return {"ds_sleep": bool(native.get("ds.enable_sleep", False)),
            # the non-Ray launcher (LAUNCHER): one DeepSpeed world over every GPU, each rank holding every model
            # (cost.py make_plan)
            "one_world": bool(flat.get(LAUNCHER, False)),
            # the ranks its launcher's own words start (parse; 0: they say none), for value_notes
            "launcher_gpus": _launcher_count(flat),
            # --overlap_comm (--ds.overlap_comm from 0.10.2): DeepSpeed's overlap_comm, two ZeRO-1/2 reduce buckets
            "ds_overlap_comm": _true(native.get("ds.overlap_comm", native.get("overlap_comm", False))),
            # the dotted releases' --vllm.enforce_eager, or the --enforce_eager of the releases before 0.10.2 (the
            # same "Disable CUDA graph in vLLM", names.SUCCESSOR_OF), which a config of those releases carries
            "vllm_eager": bool(native.get("vllm.enforce_eager", native.get("enforce_eager", False))),
            "grad_accum_fp32": fp32,
            # the release's log-prob code (versions.Release.logits) and its colocated vLLM share
            "logits_gather": release.logits != "openrlhf", "logits_fp32_model": release.logits == "openrlhf-0.4",
            "colocate_lowers_gmu": release.colocate_lowers_gmu,
            # the pinned vLLM counts its CUDA graphs inside gpu_memory_utilization (vLLM 0.21 on)
            "vllm_graphs_in_budget": release.vllm_graphs_in_budget,
            # with vLLM sleep, the weight sync wakes the engines' weights only (0.11.2), not their KV cache
            "sync_wakes_weights_only": release.sync_wakes_weights_only,
            # without vLLM engines the release's actor generates itself (versions.Release.hf_generate), with
            # flash-attention 2 where --flash_attn is given (0.4.0-0.7.5; models/actor.py Actor.__init__:
            # attn_implementation "flash_attention_2" if use_flash_attention_2 else "eager")
            "hf_generate": release.hf_generate,
            "flash_attn": bool(native.get("flash_attn", False)),
            # with engines, the release's ranks call them micro batch by micro batch (Release.engine_calls_per_micro_batch)
            "vllm_micro_calls": release.engine_calls_per_micro_batch,
            # the order the release's make_experience dispatches the experience forwards in (cost.py concurrency)
            "experience_order": versions.EXPERIENCE_ORDERS.index(release.experience_order),
            # checkpoints (host memory only, cost.py host_layout): --save_steps / --ckpt.save_steps (-1: none) and
            # how the release's save_model gathers the model (--save_hf_ckpt repeats that save at each checkpoint:
            # the same bytes)
            "save_steps": _save_steps(flat), "save_clones_every_rank": release.save_clones_every_rank,
            # the passes of each update over the replay buffer (_max_epochs)
            "max_epochs": _max_epochs(flat),
            # --deepspeed_enable_sleep also offloads the 16-bit gradient partitions on DeepSpeed 0.16.5 and later
            # (utils/deepspeed/deepspeed_utils.py offload_deepspeed_states, 0.7.5: OffloadStateTypeEnum.lp_grads)
            "ds_sleep_lp_grads": release_numbers(release.deepspeed) >= (0, 16, 5),
            # the DeepSpeed its wheel pins, as major x 10000 + minor x 100 + patch: which ZeRO-Offload host buffers
            # that release allocates (host memory only, costmodel/host.py DS_*_FROM)
            "deepspeed_release": _release_number(release.deepspeed),
            # the engines run vLLM's V0 engine, whose workers allocate a CPU swap space (host memory only): the pinned
            # vLLM's default, or the launch script's VLLM_USE_V1 (vllm/envs.py)
            "vllm_v0": _vllm_v0(flat, release), **_ray_threshold(flat), **_lora_values(native)}


def _lora_values(native: Mapping[str, Any]) -> dict[str, Value]:
    """LoRA and the 4-bit base (cost.py ``make_plan``, frameworks/bnb.py): ``--ds.lora.rank`` (``--lora_rank`` before
    0.10.2) over ``--ds.lora.target_modules`` (default "all-linear", the only targets priced); ``--ds.load_in_4bit``
    (``--load_in_4bit``) loads the actor, reference, reward model and critic with one BitsAndBytesConfig
    (models/actor.py Actor.__init__, models/model.py get_llm_for_sequence_regression: nf4, double quantization,
    bf16 compute, in 0.8.11 and 0.11.2); the vLLM engines get no quantization (trainer/ray/vllm_engine.py) and load
    the 16-bit checkpoint."""
    key = "ds.lora.rank" if "ds.lora.rank" in native else "lora_rank"
    rank = native.get(key)
    # argparse reads the rank as an int (type=int, default 0); models/actor.py trains LoRA only when it is > 0
    rank = 0 if rank in (None, "") else max(0, whole_number(key, rank, f"--{key}"))
    four = native.get("ds.load_in_4bit", native.get("load_in_4bit", False))
    return {"lora_rank": rank, "load_bits": 4 if _true(four) else 16,
            "nested_quant": True, "engine_load_bits": 16}


def _release_number(version: str) -> int:
    """"0.17.6" -> 1706 (major x 10000 + minor x 100 + patch)."""
    parts = (list(release_numbers(version)) + [0, 0, 0])[:3]
    return parts[0] * 10000 + parts[1] * 100 + parts[2]


def _ray_threshold(flat: Mapping[str, Any]) -> dict[str, Value]:
    """The script's RAY_memory_usage_threshold as per mille of the node's RAM (none when unset)."""
    if flat.get(RAY_THRESHOLD) is None:
        return {}
    try:
        share = float(str(flat[RAY_THRESHOLD]).strip("'\""))
    except ValueError:
        share = -1.0
    return {"ray_kill_permille": memory_share_permille(RAY_THRESHOLD, share, f"write {RAY_THRESHOLD}=0.95 (a share "
                                                                           "of the node's RAM).")}


def _vllm_v0(flat: Mapping[str, Any], release: versions.Release) -> bool:
    """Whether the engines run vLLM's V0 engine: VLLM_USE_V1 as the script's environment sets it (0/false: V0, where
    the pinned vLLM still has it), else the pinned vLLM's default (V0 before vLLM 0.8)."""
    env = flat.get(VLLM_USE_V1)
    if env is None:
        return release.vllm_v0_default
    return release.vllm_has_v0 and str(env).strip().strip("'\"").lower() in ("0", "false")


def _flag(flat: Mapping[str, Any], old: str, new: str, default: Any) -> Any:
    """A flag's value under its old or its dotted name, with or without the dashes."""
    for key in (new, old, f"--{new}", f"--{old}"):
        if key in flat:
            return flat[key]
    return default


def _whole_flag(flat: Mapping[str, Any], old: str, new: str, default: int) -> tuple[str, int]:
    """A whole-number flag under its old or its dotted name, and the name it was given as."""
    raw = _flag(flat, old, new, default)
    key = new if new in flat or f"--{new}" in flat else old
    return key, whole_number(key, raw, f"--{key}")


def _save_steps(flat: Mapping[str, Any]) -> int:
    """--save_steps (--ckpt.save_steps from 0.10.2): the steps between DeepSpeed checkpoints; -1, the default, saves
    none (ppo_trainer.py: save_steps = inf)."""
    return _whole_flag(flat, "save_steps", "ckpt.save_steps", -1)[1]


def _max_epochs(flat: Mapping[str, Any]) -> int:
    """--max_epochs (--train.max_epochs from 0.10.2, default 1): the passes of the actor's and the critic's update
    over the step's replay buffer, each of its optimizer steps (0.11.2 trainer/ray/ppo_actor.py
    ActorPPOTrainer.ppo_train and ppo_critic.py CriticPPOTrainer.ppo_train: for epoch in range(self.max_epochs))."""
    key, epochs = _whole_flag(flat, "max_epochs", "train.max_epochs", 1)
    if epochs < 1:
        raise InputError(key, f"{epochs} must be at least 1 (no update would run).", f"set --{key} to 1 or more.")
    return epochs


class OpenRLHFFramework(Framework):
    name = "openrlhf"
    named_release: str | None = None  # the release the user named, where another's pack judges it (0.6.1: 0.6.2)
    version = RULESET.version
    ruleset = RULESET
    syntax = "flags"
    doc_intro = docs.INTRO
    policy = repair.OPENRLHF
    error_families = ("openrlhf",)
    legacy_flags = LEGACY_FLAGS
    derived_columns = columns.DERIVED
    column_words = columns.WORDS
    log_formats = ("openrlhf",)  # "Global step N: {...}"
    model_keys = ("--actor.model_name_or_path", "--pretrain")
    # a whole command (run_command): the data and the reward function of OpenRLHF's examples
    # (examples/scripts/train_ppo_with_reward_fn.sh and examples/python/reward_func.py, in its repository)
    # (the reward function comes with the answer, ASSUMED_REWARD, unless the user names a reward model or an agent)
    example_inputs = ("--data.prompt_dataset OpenRLHF/prompt-collection-v0.1", "--data.input_key context_messages",
                      "--data.apply_chat_template")
    example_inputs_source = "OpenRLHF's examples, run from its repository's folder"
    offload_switch = ("adam_offload", "ds.adam_offload=true")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    # samples per policy update and prompts per rollout decide the training; micro batches only split it
    shapes_learning = frozenset({"train_batch_size", "rollout_batch_size"})
    scenario_vars = {"response_length": "max_new_tokens", "n": "n", "nnodes": "actor_nnodes"}
    # the actor group's; the other groups follow it (GROUP_TIES) and vLLM's engines are searched (gpus_needed)
    gpu_count_vars = ("actor_gpus_per_node", "actor_nnodes")

    releases = versions
    versions = versions.VERSIONS

    def for_config(self, flat: Mapping[str, Any]):
        """The release a pasted config's flags date it to (flags only some releases' train_ppo_ray has), unless the
        user named one; 0.11.2 when nothing dates it."""
        if self.pinned:
            return self, None
        from .. import get_framework

        version, why = versions.detect(flat)
        if version is None:
            return self, (f"checked with the OpenRLHF {self.version} rules, the newest we follow: {why}; name yours with "
                          f"--framework openrlhf==VERSION if you run another")
        if version == self.version:
            return self, None
        return get_framework(f"{self.name}=={version}"), (
            f"checked with the OpenRLHF {version} rules and defaults: {why}; name another with --framework "
            f"openrlhf==VERSION. {versions.upgrade_note(version, flat)}")

    def old_names(self, flat: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
        """From 0.10.2 on, the underscore flags train_ppo_ray's argparse refuses (openrlhf.driver.legacy_flag_names):
        each one-to-one flag with its dotted name (LEGACY_FLAGS, and the data flags of RENAMED_LEGACY), where the
        config does not set that name too; the rest (--bf16, --enforce_eager, --prompt_max_len ...: no successor of the
        same name and meaning we know) as they are."""
        if not versions.dotted_names(self.version):
            return {}, []
        plain = list(dict.fromkeys(str(k).removeprefix("--") for k in flat))  # in the config's order
        successor = {**LEGACY_FLAGS, **RENAMED_LEGACY}
        renames = {k: successor[k] for k in plain if k in successor and successor[k] not in plain}
        converted = {old for old, _, _ in self.converted_names(flat)[0]}
        left = [k for k in plain if (k in LEGACY_ONLY or k in successor) and k not in renames and k not in converted]
        return renames, left

    def converted_names(self, flat: Mapping[str, Any]) -> tuple[list[tuple[str | None, str | None, Any]], list[str]]:
        """From 0.10.2 on, the pre-0.10 length flags (--prompt_max_len, --generate_max_len), which have no one-to-one
        successor: written as --data.max_len and --rollout.max_new_tokens with the numbers normalize_flags reads
        them as (_length_successors), and said so."""
        if not versions.dotted_names(self.version):
            return [], []
        rows = _length_successors(flat)
        if not rows:
            return [], []
        old, one, new = _lengths_words(flat, normalize_flags(flat)[0])
        same = ", the same prompt and response limits" if all(row[1] for row in rows) else ""
        return rows, [f"{old}: a repair writes {'it' if one else 'them'} as {new}{same}"]

    def names_written(self) -> dict[str, Value]:
        return {"legacy_flag_names": False}

    def waste_words(self, ruleset: RuleSet) -> str:
        return "the cluster's GPUs left idle (no placement group asks for them)"  # rules.py idle_gpus

    def doc_appendix(self) -> str:
        return docs.versions_markdown() if self.version == versions.NEWEST else ""

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        """``--flag value`` arguments, and the environment words ``VLLM_USE_V1=...`` and
        ``RAY_memory_usage_threshold=...`` (a launch script's own)."""
        words = split_tokens(tokens)
        entry = next((i for i, w in enumerate(words) if _non_ray_word(w)), None)
        if entry is not None:
            # the non-Ray launcher's script or module (LAUNCHER): what comes before it is deepspeed's or torchrun's own
            # (--module, --num_gpus, --nproc_per_node=4 ...), but for the environment words
            from ...launch_script import launcher_gpus

            # (the GPUs they start, when they say: deepspeed's --num_gpus, torchrun's --nproc_per_node, times the nodes,
            # else a CUDA_VISIBLE_DEVICES=... word before the launcher, as a script's is read)
            env = dict(w.split("=", 1) for w in words[:entry] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w))
            started = launcher_gpus(words[:entry], {k: v.strip("'\"") for k, v in env.items()})
            words = [w for w in words[:entry] if any(w.startswith(k + "=") for k in SCRIPT_ENV)] + words[entry + 1:]
        flat, ignored = parse_flag_args(words)
        for word in list(ignored):
            key, eq, value = word.partition("=")
            if eq and key in SCRIPT_ENV:
                flat[key] = value.strip("'\"")
                ignored.remove(word)
        if entry is not None:
            flat[LAUNCHER] = started if started.per_node else True  # the launcher's own split where its words give one
        return flat, ignored

    def from_script(self, args: list[str], scope: Mapping[str, str], gpus: int | None,
                    notes: list[str] | None = None) -> tuple[str, list[str], int | None]:
        """A launch script's own ``VLLM_USE_V1`` and ``RAY_memory_usage_threshold`` (an ``export`` line or the
        command's prefix) join the arguments."""
        name, out, gpus = super().from_script(args, scope, gpus, notes)
        env = [f"{key}={scope[key]}" for key in SCRIPT_ENV
               if key in scope and not any(a.startswith(key + "=") for a in out)]
        return name, [*env, *out], gpus

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        """What of LoRA and 4-bit loading is not priced (``_lora_values``: the actor's LoRA, and with
        ``--ds.load_in_4bit`` its NF4 base and the reference and reward models', are). The critic
        (``--algo.advantage.estimator gae``, the default) gets the same LoRA and 4-bit base (trainer/ray/ppo_critic.py
        get_llm_for_sequence_regression), priced as a full bf16 model; 4-bit loading without LoRA is priced in bf16."""
        native, _ = normalize_flags(flat)
        lora = _lora_values(native)
        notes: list[str] = _old_lengths_note(flat, native) if versions.dotted_names(self.version) else []
        if flat.get(LAUNCHER):
            notes.append(f"{NON_RAY_MODULE} (the launcher without Ray): memory and time {priced_words(priced, plural=True)}"
                         " with the actor, critic, reward and reference models on every GPU of one DeepSpeed world (the "
                         "cluster's GPUs: --gpus, else the launcher's --num_gpus / --nproc_per_node); train_ppo_ray's own checks (its placement groups, colocation and "
                         "driver checks) are not made: train_ppo.py makes none of them")
        # the flag as the config spells it (normalize_flags maps the pre-0.10.2 name)
        four = "--load_in_4bit" if any(str(k).removeprefix("--") == "load_in_4bit" for k in flat) else \
            "--ds.load_in_4bit"
        # (with vLLM engines a 4-bit run stops at its first weight sync: rule openrlhf.vllm.load_in_4bit_weight_sync)
        if not lora["lora_rank"]:
            return notes + ([f"{four} without LoRA: a 4-bit model trained in full is not modelled for OpenRLHF; memory "
                             f"and time {priced_words(priced, plural=True)} as full-parameter bf16 training"]
                            if lora["load_bits"] == 4 else [])
        estimator = native.get("algo.advantage.estimator", native.get("advantage_estimator", "gae"))
        if str(estimator) != "gae":
            return notes
        base = " and 4-bit base" if lora["load_bits"] == 4 else ""
        return notes + [f"the critic's LoRA{base} (--algo.advantage.estimator gae) is not modelled for OpenRLHF: the "
                        f"critic {priced_words(priced)} as full-parameter bf16 training (its weights, gradients and "
                        "optimizer states: an over-estimate of what it holds); the actor's LoRA "
                        f"{priced_words(priced)}"]

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        release = self.named_release or self.version
        if flat.get(LAUNCHER) and not versions.has_non_ray_launcher(release):
            last = ".".join(map(str, versions.NON_RAY_LAUNCHER_UNTIL))
            raise InputError("launcher", f"OpenRLHF {release} has no {NON_RAY_MODULE} (openrlhf/cli/train_ppo.py, "
                             f"the launcher without Ray): the releases before {last} (0.4.0 to 0.6.1) have it.",
                             "name the release the command is for (--framework openrlhf==0.5.9), or launch "
                             "openrlhf.cli.train_ppo_ray.")
        values = config_to_values(flat, gpus=gpus, model=model, version=self.version)
        values.update(_cost_flags(flat, self.version))
        # the non-Ray launcher's DeepSpeed world is every GPU the launcher starts (deepspeed / torchrun: one rank
        # per GPU): the cluster's GPUs (--gpus, or a script's launcher words: launch_script.py launcher_gpus), else
        # the launcher words given with the command (parse), on nodes of up to the standard 8
        # (the launcher's own node split where it starts that world: torchrun --nnodes 2 --nproc_per_node 4 is 2 x 4;
        # or whole nodes of its per-node ranks where its node count was not read)
        world, launched = gpus or values["launcher_gpus"], _launched(flat)
        if values["one_world"] and world:
            if launched is not None and (world == launched.gpus and launched.nodes
                                         or launched.nodes is None and world % launched.per_node == 0):
                per = launched.per_node
            else:
                per = STANDARD_NODE_GPUS if world % STANDARD_NODE_GPUS == 0 else world
            values["actor_nnodes"], values["actor_gpus_per_node"] = world // per, per
        # what one world means for the rules and the cost model alike (cost.py one_world)
        return dict(one_world(values))

    def value_notes(self, values: Mapping[str, Value], *, priced: bool = True) -> list[str]:
        """Under the non-Ray launcher: the world the models are priced on (to_values), where the rules check it too.
        (A launcher whose own GPU count is not --gpus: launch_script.gpus_note, the note a script, a pasted command and
        a command given as a list of words get.)"""
        if not values.get("one_world"):
            return []
        nodes, per = int(values.get("actor_nnodes") or 1), int(values.get("actor_gpus_per_node") or 1)
        given = ("" if values.get("cluster_num_gpus") or values.get("launcher_gpus") else
                 f" (no GPU count given: {nodes * per} assumed, pass --gpus)")
        return [f"{NON_RAY_MODULE}: checked, and memory and time {priced_words(priced, plural=True)}, as one DeepSpeed "
                f"world of {nodes * per} GPU(s) ({nodes} node(s) x {per}), every model on each of them{given}"]

    def with_named_release(self, named: str) -> "OpenRLHFFramework":
        """A named release another's pack judges (0.6.1 checks as 0.6.2) keeps its name for what only the release
        decides: whether its wheel has the non-Ray launcher (versions.has_non_ray_launcher)."""
        named = named.strip().lstrip("v")
        if named == self.version:
            return self
        fw = copy.copy(self)
        fw.named_release = named
        return fw

    def placements(self, scenario: Any, notes: list[str]) -> list:
        """Colocated: every model and the vLLM engines on the actor's GPUs (--train.colocate_all), synchronous.
        Split: --train.async_enable, whose vLLM engines always get GPUs of their own (train_ppo_ray.py shared_pg);
        one solve places the engines and the model groups over the cluster (the space searches the engine count, TP
        and the groups' GPUs, and uses every GPU), with actor groups of a power of two or all but one or two GPUs of
        a node, and batch sizes that are also three times a power of two, so that 6-GPU groups divide them."""
        from ...layout import Layout, admits, sub_scenario

        out = []
        # an older release: colocated only where it has --colocate_all_models (0.5 on), and its engines on GPUs of
        # their own synchronously (--async_train came in 0.8)
        has_async = release_has("train.async_enable", self.version)
        colocate = {"train.colocate_all": True, "train.async_enable": False} if has_async else \
            {"train.colocate_all": True}
        if scenario.placement in ("colocate", "auto") and not release_has("train.colocate_all", self.version):
            if scenario.placement == "colocate":
                raise InputError("placement", f"OpenRLHF {self.version} has no --colocate_all_models (0.5 added it).",
                                 "use --placement split, or name a newer release with --framework openrlhf==VERSION.")
            notes.append(f"no colocated layout was solved: OpenRLHF {self.version} has no --colocate_all_models")
        elif scenario.placement in ("colocate", "auto") and admits(scenario, "colocate", colocate, notes):
            out.append(Layout("colocate", f"colocated on {scenario.total_gpus} GPUs",
                              sub_scenario(scenario, fixed=colocate, layout_keys=colocate)))
        split = {"train.async_enable": True} if has_async else {"train.colocate_all": False}
        if scenario.placement in ("split", "auto") and admits(scenario, "split", split, notes):
            more = {}
            if "actor.num_gpus_per_node" not in scenario.fixed and "actor.num_gpus_per_node" not in scenario.search:
                # the actor's share of a node: powers of two and what leaves one or two engine GPUs free
                per = scenario.per_node
                more["actor.num_gpus_per_node"] = sorted({v for v in (*pow2(1, per), per - 1, per - 2) if v >= 1})
            for key, name in (("rollout.batch_size", "rollout_batch_size"), ("train.batch_size", "train_batch_size")):
                if key not in scenario.fixed and key not in scenario.search:
                    values = DEFAULT_SEARCH[name]
                    more[key] = sorted(set(values) | {3 * v for v in values if 3 * v <= values[-1]})
            out.append(Layout("split", f"{'async' if has_async else 'synchronous'}: vLLM engines on GPUs of their own",
                              sub_scenario(scenario, fixed=split, layout_keys=split, search=more)))
        return out

    def run_command(self, native: Sequence[str], values: Mapping[str, Value], model: str) -> list[str]:
        """The whole command; for a release before 0.10.2 the model and the example's data in its flag names."""
        words = super().run_command(native, values, model)
        if self.version == versions.NEWEST:
            return words
        out = [words[0]]
        for word in words[1:]:
            key, _, rest = word[2:].partition(" ") if word.startswith("--") else ("", "", "")
            out.append(f"--{release_key(key, self.version)}{' ' + rest if rest else ''}" if key else word)
        return out

    def describe_placement(self, values: Mapping[str, Value]) -> str | None:
        env = RULESET.full_env(values)
        engines = int(env.get("vllm_gpus") or 0)
        if values.get("colocate_all") and not values.get("async_train"):
            return None
        kind = "async" if values.get("async_train") else "synchronous"
        return f"{kind}: {int(env.get('gpus_needed') or 0) - engines} training + {engines} vLLM GPUs"

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        space = build_space(scenario, model, with_knobs, self.version)
        space.domains.update({k: [v] for k, v in _cost_flags(scenario.fixed, self.version).items()})
        return space

    def cost_spec(self, model: ModelCard, gpu: Any):
        from .cost import cost_spec

        return cost_spec(model, gpu)

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        return solution_to_flags(solution, space.fixed_native if space else None, self.version)

    def native_value(self, name: str, value: Value) -> Any:
        if name == "fp16":
            return "fp16" if value else "bf16"
        return super().native_value(name, value)

    def native_key(self, name: str) -> str:
        """The flag as the release we follow spells it (underscore names before 0.10.2)."""
        if name not in self.ruleset.variables:
            return super().native_key(name)  # a cost input (cost_input_keys): already the release's spelling
        return release_key(self.ruleset.variables[name].key, self.version)

    @property
    def cost_input_keys(self) -> Mapping[str, tuple[str, ...]]:
        # lora_rank (_lora_values reads it), written by fix's LoRA way out: --ds.lora.rank since 0.10.2, --lora_rank
        # before (train_ppo_ray.py)
        return {"lora_rank": ("ds.lora.rank" if "ds.lora.rank" in RELEASE_FLAGS[self.version] else "lora_rank",)}

    def assignment(self, name: str, value: Value) -> str:
        key = self.native_key(name)
        if name == "fp16":
            return f"--{key} {self.native_value(name, value)}"
        if value is False:
            return f"(drop --{key})"
        if value is None:
            return f"(drop --{key})"
        return flag(key, self.native_value(name, value)) or f"(drop --{key})"

    def normalize(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        return normalize_flags(flat)[0]

    def oom_advice_for(self, text: str) -> Mapping[str, tuple[str, ...]]:
        """A traceback of the launcher without Ray (openrlhf/cli/train_ppo.py, key_names.launcher_in_message): its
        own parser's flags (errors.NON_RAY_OOM_ADVICE), not train_ppo_ray's dotted or group flags."""
        from ..key_names import launcher_in_message

        return errors.NON_RAY_OOM_ADVICE if launcher_in_message(text) else self.oom_advice

    @property
    def release_named(self) -> str:
        """The release the user named (0.6.1, 0.6.2's pack), as refusals and fix name it."""
        return self.named_release or self.version

    def key_list(self, flat: Mapping[str, Any], command: bool = False) -> KeyList:
        """Every flag of this release's train_ppo_ray (release_flags.py): argparse refuses any other. A flag of another
        release is not judged here (the release's own checks say what it does there, legacy_flag_names), nor one
        argparse reads as the single flag it begins (allow_abbrev)."""
        non_ray = bool(flat.get(LAUNCHER)) and self.version in versions.NON_RAY_LACKS
        # the non-Ray launcher's own parser (versions.non_ray_flags): none of train_ppo_ray's placement/vLLM flags
        flags = versions.non_ray_flags(self.version) if non_ray else RELEASE_FLAGS[self.version]
        script = "train_ppo.py" if non_ray else "train_ppo_ray.py"
        given = tuple(k for k in map(str, flat) if k not in SCRIPT_ENV and k != LAUNCHER  # not flags
                      and (sum(1 for f in flags if f.startswith(k)) != 1 or k in flags))
        refused = other_release_flags(given, self.version)
        if non_ray:
            lacks = versions.NON_RAY_LACKS[self.version]
            refused.update({k: (None, "a flag of train_ppo_ray.py only, not of openrlhf.cli.train_ppo") for k in given
                            if k.removeprefix("--") in lacks})
        return KeyList(given, flags, complete=True, others=ALL_RELEASE_FLAGS, flags=True,
                       refusal=script + ": error: unrecognized arguments: {key}",
                       source=f"openrlhf/cli/{script}: parser.parse_args (argparse refuses a flag it does not define)",
                       refused=frozenset(refused), successors=tuple((k, *refused[k]) for k in refused))

    def repair_policy(self, values: Mapping[str, Value] | None = None):
        """The class's policy; under the non-Ray launcher (one_world) less the variables whose flag train_ppo.py's
        parser lacks (versions.NON_RAY_LACKS: the groups' sizes, colocation, vLLM, --ref_reward_offload): fix and
        recommend --from never offer a flag its parse_args() refuses."""
        policy = super().repair_policy(values)
        lacks = (versions.NON_RAY_LACKS.get(self.version, frozenset()) if values and values.get("one_world")
                 else frozenset())
        # nor a flag a later release added (0.4.0's train_ppo_ray has no --vllm_gpu_memory_utilization, 0.6.2 no
        # --ds_tensor_parallel_size: release_flags.py): fix priced it and printed a command argparse refuses
        out = {n for n in (*policy.rules, *policy.memory, *policy.hardware)
               if n in VARIABLES and (release_key(VARIABLES[n].key, self.version) in lacks
                                      or (not release_has(VARIABLES[n].key, self.version)
                                          and _a_release_flag(VARIABLES[n].key)))}
        return replace(policy, rules=tuple(n for n in policy.rules if n not in out),
                       memory=tuple(n for n in policy.memory if n not in out),
                       ranks={n: r for n, r in policy.ranks.items() if n not in out},
                       hardware={n: h for n, h in policy.hardware.items() if n not in out}) if out else policy

    def scenario_fields(self, values: Mapping[str, Value]) -> dict[str, Any]:
        # --data.max_len bounds prompt + response (--rollout.max_new_tokens the response); the GPUs are the
        # ones the placement uses (every model group and the vLLM engines), over the actor's nodes
        out = super().scenario_fields(values)
        response, total_len = int(values.get("max_new_tokens") or 0), int(values.get("max_len") or 0)
        if total_len > response > 0:
            out["prompt_length"] = total_len - response
        nodes = int(values.get("actor_nnodes") or 1)
        gpus = self.hardware(values)[0]
        out["gpus_per_node"], out["nnodes"] = (gpus // nodes, nodes) if gpus % nodes == 0 else (gpus, 1)
        return out

    def hardware(self, values: Mapping[str, Value]) -> tuple[int, int]:
        gpus = values.get("cluster_num_gpus")
        if not gpus:
            gpus = RULESET.full_env(values).get("gpus_needed") or 1
        return int(gpus), int(values.get("max_len") or 0)


def other_release_flags(given: Sequence[str], version: str) -> dict[str, tuple[str | None, str]]:
    """The flags of ``given`` another release has and ``version``'s argparse refuses (parse_args: "unrecognized
    arguments"), less those openrlhf.driver.legacy_flag_names says (renamed one to one, or converted: LEGACY_FLAGS,
    RENAMED_LEGACY, CONVERTED_LEGACY), each with its successor in ``version`` (names.SUCCESSOR_OF; None: none, drop it)
    and the words that say which releases have it. Judged for the dotted releases (0.10.2 on): an older release named
    with dotted flags is left to its own rules."""
    if not versions.dotted_names(version):
        return {}
    flags = RELEASE_FLAGS[version]
    said = set(LEGACY_FLAGS) | set(RENAMED_LEGACY) | CONVERTED_LEGACY
    out: dict[str, tuple[str | None, str]] = {}
    for key in given:
        key = key.removeprefix("--")
        if key in flags or key not in ALL_RELEASE_FLAGS or key in said:
            continue
        have = releases_with(key)
        span = have[0] if len(have) == 1 else f"{have[0]} to {have[-1]}"
        successor = SUCCESSOR_OF.get(key)
        why = NO_SUCCESSOR_WHY.get(key)
        out[key] = (successor if successor in flags else None,
                    f"a flag of OpenRLHF {span}" + (f"; {why}" if why else ""))
    return out


def _true(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes")

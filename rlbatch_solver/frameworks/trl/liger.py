"""TRL's Liger switch as a config sets it: which flag turns it on in the release whose code the config runs
(``versions.liger_flags``), whether the update's loss is then Liger's chunked one (``versions.liger_loss_flags``,
priced in cost.py), and the rule variables of what that release refuses beside it (``versions.LIGER_REFUSES``,
rules.py ``_liger_rules``)."""

from __future__ import annotations

from typing import Any, Mapping

from ... import safe_input
from ...errors import InputError
from ...rules.base import Value
from ..overrides import flag_bool, flag_float
from . import versions

# the settings the refusals read (rules.py VARS), beside use_peft, a flag of its own
SETTINGS = ("loss_bnpo", "two_sided", "entropy_mask", "token_level_is", "off_policy_mask", "liger_fused_ce")
RULE_VARIABLES = frozenset(versions.LIGER_REFUSES) | frozenset(SETTINGS)


def _given(value: Any) -> bool:
    return value not in (None, "None", "none", "null", "")


def switched(flat: Mapping[str, Any], flags: tuple[str, ...]) -> bool:
    """Whether the first of ``flags`` the config sets is true (a deprecated alias, when given, wins: GRPOConfig
    0.25-0.27 ``self.use_liger_kernel = self.use_liger_loss``)."""
    given = [k for k in flags if _given(flat.get(k))]
    return bool(given) and flag_bool(given[0], flat[given[0]])


def liger_loss(flat: Mapping[str, Any], version: str) -> bool:
    """The update's loss is Liger's chunked GRPO loss in TRL ``version`` (costmodel/constants.py LIGER_GRPO_*)."""
    return switched(flat, versions.liger_loss_flags(version))


def _word(flat: Mapping[str, Any], key: str, default: str) -> str:
    return str(flat.get(key, default)).strip().lower()


def _number_given(flat: Mapping[str, Any], key: str) -> bool:
    """A number field (None by default) is set; a value that is no number is refused naming it."""
    if not _given(flat.get(key)):
        return False
    flag_float(key, flat[key])
    return True


def _fused_cross_entropy(raw: Any) -> bool:
    """liger_kernel_config's fused_linear_cross_entropy: a mapping from a YAML config, or the JSON text of a flag."""
    if isinstance(raw, str) and _given(raw):
        raw = safe_input.load_yaml(raw, "liger_kernel_config")
    if raw is None or raw in ("None", "none", "null", ""):
        return False
    if not isinstance(raw, Mapping):
        raise InputError("liger_kernel_config", f"'{raw}' is not a mapping of Liger kernel names to true/false.",
                         "write --liger_kernel_config '{\"rope\": true, \"rms_norm\": true}'.")
    return flag_bool("liger_kernel_config.fused_linear_cross_entropy", raw.get("fused_linear_cross_entropy", False))


def rule_values(flat: Mapping[str, Any], version: str) -> dict[str, Value]:
    """The rules' liger_* gates (``versions.liger_refusals`` for TRL ``version``) and the settings they read."""
    out: dict[str, Value] = dict(versions.liger_refusals(version, switched(flat, versions.liger_flags(version))))
    out["loss_bnpo"] = _word(flat, "loss_type", "bnpo") == "bnpo"  # 0.17's default, the only release that asks
    out["two_sided"] = _number_given(flat, "delta")
    out["entropy_mask"] = flag_float("top_entropy_quantile", flat.get("top_entropy_quantile", 1.0)) < 1.0
    out["token_level_is"] = _word(flat, "importance_sampling_level", "token") == "token"
    out["off_policy_mask"] = _number_given(flat, "off_policy_mask_threshold")
    out["liger_fused_ce"] = _fused_cross_entropy(flat.get("liger_kernel_config"))
    return out

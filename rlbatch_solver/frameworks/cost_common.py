"""Pieces the framework cost specs (``*_cost.py``) share."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..costmodel.constants import MCORE_RECOMPUTE_MODULES
from ..costmodel.phase import Phase
from ..errors import InputError
from ..rules.base import Value


def phases_run(values: Mapping[str, Value]) -> list[str]:
    """Phases of a PPO-style step (verl, OpenRLHF): the reference forward only with ``need_ref``,
    the critic update only with ``need_critic``."""
    phases = [Phase.ROLLOUT, Phase.OLD_LOG_PROB]
    if values.get("need_ref"):
        phases.append(Phase.REF)
    phases.append(Phase.ACTOR_UPDATE)
    if values.get("need_critic"):
        phases.append(Phase.CRITIC_UPDATE)
    return phases


def token_budget(values: Mapping[str, Value], dyn: str, tokens: str) -> int | None:
    """The per-GPU token budget ``values[tokens]`` when dynamic batching (``values[dyn]``) is on, else None."""
    return int(values[tokens]) if values.get(dyn) else None


# A framework whose cost is another's (EasyR1 and SkyRL on verl's FSDP terms, slime on verl-megatron's) maps its rule
# values onto that framework's: ``fixed`` values the mapped framework reads that this one never varies, and
# ``fills``, each mapped name -> (its sources among this framework's variables, how it is computed from them).
Fills = Mapping[str, tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Any]]]


def mapped_values(values: Mapping[str, Value], fixed: Mapping[str, Value], fills: Fills) -> dict[str, Any]:
    """This framework's rule values as the mapped framework's: the fixed ones, the values, each fill computed."""
    out: dict[str, Any] = {**fixed, **values}
    for name, (_, fn) in fills.items():
        out[name] = fn(values)
    return out


def mapped_inputs(table: Mapping[str, list[str]], fills: Fills, variables: Mapping[str, Any]) -> dict[str, list[str]]:
    """The mapped framework's phase inputs in this framework's variables: a filled name by its sources, a name of
    its own as itself, a fixed one dropped."""
    out = {}
    for phase, names in table.items():
        mine: list[str] = []
        for name in names:
            sources = fills[name][0] if name in fills else ((name,) if name in variables else ())
            mine += [s for s in sources if s not in mine]
        out[phase] = mine
    return out


def mapped_unread(unread: Callable[[str, str, Mapping[str, Any]], set], fixed: Mapping[str, Value], fills: Fills,
                  variables: Mapping[str, Any]) -> Callable[[str, str, Mapping[str, Any]], set]:
    """The ``unread`` of the mapped framework (its inputs no plan of a space reads) for this framework's spaces: a
    filled name takes the values its sources' domains give it (where all its sources but the first have one value);
    only names that are this framework's variables and no filled name's source come back, so nothing the plan reads
    is dropped."""
    sources = {s for srcs, _ in fills.values() for s in srcs}

    def mine(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
        full = {**{k: [v] for k, v in fixed.items()}, **domains}
        for name, (srcs, fn) in fills.items():
            if all(s in domains for s in srcs) and all(len(domains[s]) == 1 for s in srcs[1:]):
                rest = {s: domains[s][0] for s in srcs[1:]}
                full[name] = list(dict.fromkeys(fn({**rest, srcs[0]: x}) for x in domains[srcs[0]]))
        return {n for n in unread(phase, kind, full) if n in variables and n not in sources}

    return mine


def modules_code(raw: Any, field: str) -> int:
    """A megatron-core recompute_modules value (a list, or its Hydra text ``[core_attn,moe]``) as a bit set over
    ``MCORE_RECOMPUTE_MODULES`` (unset: megatron-core's ["core_attn"]). A name megatron-core does not know is an
    input error: its TransformerConfig refuses it (transformer_config.py __post_init__, "Invalid choices for
    recompute_modules")."""
    if raw is None:
        names = ["core_attn"]
    elif isinstance(raw, (list, tuple)):
        names = [str(x) for x in raw]
    else:
        names = [x.strip().strip("'\"") for x in str(raw).strip().strip("[]").replace(" ", ",").split(",")]
    code = 0
    for name in (n for n in names if n and n.lower() not in ("none", "null")):
        if name not in MCORE_RECOMPUTE_MODULES:
            raise InputError(field, f"'{name}' is not a megatron-core recompute module.",
                             f"use names from {', '.join(MCORE_RECOMPUTE_MODULES)}.")
        code |= 1 << MCORE_RECOMPUTE_MODULES.index(name)
    return code


def recompute_modules(code: int) -> tuple[str, ...]:
    """The module names of a ``modules_code`` bit set."""
    return tuple(n for i, n in enumerate(MCORE_RECOMPUTE_MODULES) if int(code) >> i & 1)


DEFAULT_RECOMPUTE_MODULES = modules_code(None, "")

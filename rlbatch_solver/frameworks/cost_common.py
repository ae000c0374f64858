"""Pieces the framework cost specs (``*_cost.py``) share."""

from __future__ import annotations

from typing import Mapping

from ..costmodel.phase import Phase
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

"""Pieces the framework cost specs (``*_cost.py``) share."""

from __future__ import annotations

from typing import Mapping

from ..rules.base import Value


def phases_run(values: Mapping[str, Value]) -> list[str]:
    """Phases of a PPO-style step (verl, OpenRLHF): the reference forward only with ``need_ref``,
    the critic update only with ``need_critic``."""
    phases = ["rollout", "old_log_prob"]
    if values.get("need_ref"):
        phases.append("ref")
    phases.append("actor_update")
    if values.get("need_critic"):
        phases.append("critic_update")
    return phases


def token_budget(values: Mapping[str, Value], dyn: str, tokens: str) -> int | None:
    """The per-GPU token budget ``values[tokens]`` when dynamic batching (``values[dyn]``) is on, else None."""
    return int(values[tokens]) if values.get(dyn) else None

"""The Python API: one function per command, each in its own module under ``commands/``.

    >>> import rlbatch_solver as rb
    >>> rb.check(["data.train_batch_size=64", ...], framework="verl", gpus=4).valid
    >>> rb.enumerate(rb.default_scenario(), limit=10).count
    >>> rb.recommend(rb.default_scenario()).best
    >>> rb.fix(["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24", ...], framework="verl", gpus=4)
    >>> rb.explain("real_train_batch_size (260) must be divisible by minimal possible batch size (8)")
"""

from __future__ import annotations

from .commands.check import CheckReport, MemoryCheck, check
from .commands.common import read_config, validate_solutions
from .commands.enumerate import EnumerateReport, enumerate  # noqa: A004 - the public name users expect
from .commands.explain import ExplainedRule, ExplainReport, explain
from .commands.fix import FixReport, fix, relaxations
from .commands.recommend import (OBJECTIVE_SENSE, Choice, RecommendReport, Start, memory_floor, prepare, recommend,
                                 recommend_from, scenario_from_config)
from .errors import InputError

__all__ = ["check", "enumerate", "recommend", "fix", "explain", "CheckReport", "MemoryCheck", "EnumerateReport",
           "RecommendReport", "Choice", "Start", "recommend_from", "scenario_from_config", "FixReport", "ExplainReport", "ExplainedRule", "InputError",
           "validate_solutions", "read_config", "prepare", "memory_floor", "relaxations", "OBJECTIVE_SENSE"]

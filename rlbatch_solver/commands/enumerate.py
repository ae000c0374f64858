"""``enumerate``: every valid config of a scenario's search space."""

from __future__ import annotations

from dataclasses import dataclass

from ..frameworks import get_framework
from ..frameworks.base import Space
from ..rules.base import Value
from ..scenario import Scenario
from ..solver.settings import DEFAULT_TIME_LIMIT_S
from .common import model_card, validate_solutions


@dataclass
class EnumerateReport:
    framework: str
    version: str
    solutions: list[dict[str, Value]]
    native: list[list[str]]
    complete: bool
    status: str
    raw_size: int
    wall_time_s: float
    space: Space

    @property
    def count(self) -> int:
        return len(self.solutions)


def enumerate(  # noqa: A001 - the public name users expect
    scenario: Scenario,
    *,
    limit: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> EnumerateReport:
    """Every valid config in the scenario's search space (up to ``limit``)."""
    from ..solver.model import enumerate_solutions

    fw = get_framework(scenario.framework)
    if scenario.gpu:  # enumerate needs no GPU type, but a mistyped one is still an error
        from ..catalog.gpus import load_gpu

        load_gpu(scenario.gpu)
    card = model_card(scenario.model)
    space = fw.space(scenario, card)
    ruleset = fw.ruleset.extended(space.extra_rules)
    res = enumerate_solutions(ruleset, space.domains, limit=limit, time_limit_s=time_limit_s)
    validate_solutions(ruleset, res.solutions)
    native = [fw.export(s, space) for s in res.solutions]
    return EnumerateReport(fw.name, fw.version, res.solutions, native, res.complete, res.status,
                           space.raw_size, res.wall_time_s, space)

"""Best configs by an objective, proven in order.

``optimize`` solves for the optimum, then excludes that assignment of the free
variables and solves again, ``top`` times. When each solve ends OPTIMAL, the
returned order is proven: no unlisted config beats a listed one. Every solve
has a time limit; its status travels with its answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ..rules.base import RuleSet, Value
from ..rules.expr import IntExpr
from .model import DEFAULT_TIME_LIMIT_S, STATUS_TEXT, Domains, build_model


@dataclass
class Ranked:
    solution: dict[str, Value]
    objective: int
    status: str  # "optimal" when proven, "feasible" when the time limit cut the proof short

    @property
    def proven(self) -> bool:
        return self.status == "optimal"


@dataclass
class OptimizeResult:
    ranked: list[Ranked]
    status: str  # status of the first solve: optimal / feasible / infeasible / unknown
    wall_time_s: float
    skipped_rules: list[tuple[str, str]] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return bool(self.ranked) and all(r.proven for r in self.ranked)


def _exclude(model: cp_model.CpModel, built, solution: dict[str, Value]) -> None:
    """Forbid this exact assignment of the free variables."""
    diffs = []
    for name in built.free:
        var = built.decision[name]
        flag = built.set_flags.get(name)
        value = solution[name]
        if value is None:
            if flag is not None and not isinstance(flag, bool):
                diffs.append(flag)  # differ by being set
            continue
        if flag is not None and not isinstance(flag, bool):
            diffs.append(flag.Not())
        if isinstance(var, (bool, int)):
            continue
        b = model.NewBoolVar(f"diff_{name}")
        model.Add(var != int(value)).OnlyEnforceIf(b)
        model.Add(var == int(value)).OnlyEnforceIf(b.Not())
        diffs.append(b)
    if not diffs:  # nothing is free: no other config exists
        model.AddBoolOr([])
    else:
        model.AddBoolOr(diffs)


def optimize(
    ruleset: RuleSet,
    domains: Domains,
    objective: IntExpr,
    *,
    maximize: bool = False,
    top: int = 1,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    workers: int = 2,
) -> OptimizeResult:
    """The ``top`` best assignments by ``objective``, best first."""
    built = build_model(ruleset, domains)
    target, _, _ = built.compiler.int(objective)
    if maximize:
        built.model.Maximize(target)
    else:
        built.model.Minimize(target)
    ranked: list[Ranked] = []
    first_status = "unknown"
    total = 0.0
    for k in range(top):
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = time_limit_s
        solver.parameters.num_workers = workers
        status = solver.Solve(built.model)
        total += solver.WallTime()
        text = STATUS_TEXT.get(status, str(status))
        if k == 0:
            first_status = text
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        sol = built.solution(solver)
        value = int(target) if isinstance(target, int) else int(solver.Value(target))
        ranked.append(Ranked(sol, value, text))
        _exclude(built.model, built, sol)
    return OptimizeResult(ranked, first_status, total, built.skipped)

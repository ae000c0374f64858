"""Best configs by an objective, proven in order.

``optimize`` solves for the optimum. For the next ``top - 1`` it enumerates
every config whose objective lies within a small band of the optimum (0.1%, then
wider) and sorts them: when that enumeration completes with at least ``top``
configs, no config outside the band can beat one inside it, so the order is
proven, in two solves instead of ``top``. If the band holds too many configs
(ties by the thousand), it falls back to excluding each answer and solving
again, ``top`` times; each of those solves that ends OPTIMAL is proven too.
Every solve has a time limit; its status travels with its answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ..rules.base import RuleSet, Value
from ..rules.expr import IntExpr
from .settings import new_solver, tune_for_optimization
from .model import DEFAULT_TIME_LIMIT_S, STATUS_TEXT, Domains, _Collector, _decode, build_model, \
    tune_for_enumeration

BANDS = (0.001, 0.01, 0.05, 0.25)  # relative width of the objective band enumerated for the runners-up
BAND_LIMIT = 2000  # configs in a band beyond which enumeration gives way to exclusion


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
    """The ``top`` best assignments by ``objective``, best first; ``time_limit_s`` bounds every solve together."""
    from ..deadline import Deadline

    deadline = Deadline(time_limit_s)
    built = build_model(ruleset, domains)
    target, _, _ = built.compiler.int(objective)
    if maximize:
        built.model.Maximize(target)
    else:
        built.model.Minimize(target)
    result = OptimizeResult([], "unknown", 0.0, built.skipped)
    _solve_next(built, target, max(0.01, deadline.left()), workers, result, maximize)
    if top == 1 or not result.ranked:
        return result
    if result.status == "optimal":
        best = result.ranked[0].objective
        # a band is worth at most half of what the optimum cost: beyond that, exclusion is as fast
        band_limit_s = min(deadline.left(), max(0.25, 0.5 * result.wall_time_s))
        for band in BANDS:
            found, wall = _band(ruleset, domains, objective, maximize, best, band, band_limit_s)
            result.wall_time_s += wall
            if found is None:  # too many configs in the band, or out of time: exclusion instead
                break
            if len(found) >= top or band == BANDS[-1]:
                # everything outside the band is worse than everything in it: a proven prefix
                result.ranked = [Ranked(sol, value, "optimal") for value, sol in found[:top]]
                break
    for r in result.ranked:
        _exclude(built.model, built, r.solution)
    while len(result.ranked) < top and not deadline.expired():
        if not _solve_next(built, target, max(0.01, deadline.left()), workers, result, maximize):
            break
    return result


def _solve_next(built, target, time_limit_s: float, workers: int, result: OptimizeResult,
                maximize: bool = False) -> bool:
    """Solve once more; append the answer (and exclude it from later solves).

    After an answer, the next one cannot be better (only configs were removed): its objective is
    bounded by the last, so a tie is proven the moment it is found, and the last answer is the
    search's starting hint.
    """
    if result.ranked and not isinstance(target, int):
        last = result.ranked[-1]
        built.model.Add(target <= last.objective if maximize else target >= last.objective)
        built.model.ClearHints()
        for name in built.free:
            var, value = built.decision[name], last.solution.get(name)
            if value is not None and not isinstance(var, (bool, int)):
                built.model.AddHint(var, int(value))
    solver = new_solver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = workers
    tune_for_optimization(solver.parameters)
    status = solver.Solve(built.model)
    result.wall_time_s += solver.WallTime()
    text = STATUS_TEXT.get(status, str(status))
    if not result.ranked:
        result.status = text
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    sol = built.solution(solver)
    value = int(target) if isinstance(target, int) else int(solver.Value(target))
    result.ranked.append(Ranked(sol, value, text))
    _exclude(built.model, built, sol)
    return True


class _ObjectiveCollector(_Collector):
    """Free-variable values and the objective of each solution."""

    def __init__(self, built, target, limit: int) -> None:
        super().__init__(built, limit)
        self.target = target
        self.values: list[int] = []

    def on_solution_callback(self) -> None:
        self.values.append(int(self.target) if isinstance(self.target, int) else int(self.Value(self.target)))
        super().on_solution_callback()


def _band(ruleset: RuleSet, domains: Domains, objective: IntExpr, maximize: bool, best: int, band: float,
          time_limit_s: float) -> tuple[list[tuple[int, dict[str, Value]]] | None, float]:
    """Every config whose objective is within ``band`` of ``best``, best first (ties by value),
    or None when there are more than BAND_LIMIT of them or the enumeration did not finish."""
    built = build_model(ruleset, domains)
    target, _, _ = built.compiler.int(objective)
    width = max(1, int(abs(best) * band))
    if not isinstance(target, int):
        built.model.Add(target >= best - width) if maximize else built.model.Add(target <= best + width)
    solver = new_solver()
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = time_limit_s
    tune_for_enumeration(built, solver.parameters)
    collector = _ObjectiveCollector(built, target, BAND_LIMIT + 1)
    status = solver.Solve(built.model, collector)
    if status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE) or collector.hit_limit:
        return None, solver.WallTime()
    unique: dict[tuple, tuple[int, dict[str, Value]]] = {}
    for value, sol in zip(collector.values, _decode(built, collector)):
        key = tuple(sorted((k, -1 if v is None else int(v)) for k, v in sol.items()))
        unique[key] = (value, sol)
    order = sorted(unique.items(), key=lambda kv: ((-kv[1][0] if maximize else kv[1][0]), kv[0]))
    return [item for _, item in order], solver.WallTime()

"""Best configs by an objective, proven in order.

``optimize`` solves for the optimum. For the next ``top - 1`` it enumerates
every config whose objective lies within a small band of the optimum (0.1%, then
wider) and sorts them: when that enumeration completes with at least ``top``
configs, no config outside the band can beat one inside it, so the order is
proven, in two solves instead of ``top``. If the band holds too many configs
(ties by the thousand), it falls back to excluding each answer and solving
again, ``top`` times; each of those solves that ends OPTIMAL is proven too.
Every solve has a time limit; its status travels with its answer.

Same input, same answer, on any machine and at any load: what may stop short by design (the bands' enumeration, a
solve given ``work``) is bounded by CP-SAT's deterministic time, not by seconds. The bands together get
``BAND_WORK_SHARE`` of the first solve's deterministic time (at least ``BAND_WORK_FLOOR``): a band that outgrows it
gives way to exclusion, at every load alike (their budget in seconds, half the first solve's wall time, made the same
command list two choices on a quiet machine and one on a busy one). The seconds (``time_limit_s``) stay as the
safety net: a solve they cut short answers "feasible", not proven.

Ties: CP-SAT with several workers returns any optimum of what it minimizes, so the same command could answer either
of two equally fast configs from run to run. With a tie-break (``then``: recommend's fewest changed values, then
least memory) the optimum is settled in a second solve over the configs of the optimal objective only (minimizing
``then``, several expressions folded into one by their ranges), and the band orders its configs by objective, then
``then``, then value. The first solve, which proves the objective, is the one it was without a tie-break. With
runners-up asked for, that second solve runs only where no band ranks them: a band that completes holds every config
of the optimal objective in that order, so its first is the settled optimum (the 64-GPU Megatron MoE of
benchmarks/bench_recommend.py: two settling solves, about 0.4 s, saved; the same answers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from ortools.sat.python import cp_model

from ..rules.base import RuleSet, Value
from ..rules.expr import IntExpr
from .settings import SOLVER_WORKERS, new_solver, tune_for_optimization
from .model import DEFAULT_TIME_LIMIT_S, STATUS_TEXT, Domains, _Collector, _decode, build_model, \
    tune_for_enumeration

BANDS = (0.001, 0.01, 0.05, 0.25)  # relative width of the objective band enumerated for the runners-up
BAND_LIMIT = 2000  # configs in a band beyond which enumeration gives way to exclusion
# the bands' deterministic work, all of them together: this share of the first solve's (a band is worth at most half
# of what the optimum cost: beyond that, exclusion is as fast), and at least the floor (deterministic time units:
# the bands of benchmarks/bench_recommend.py's scenarios take 0.001-0.1 together; the floor keeps small models' bands)
BAND_WORK_SHARE = 0.5
BAND_WORK_FLOOR = 0.25
# the largest range the folded tie-break may span: CP-SAT's integer variables are 64-bit and its presolve scales
# objectives, so stay well inside (beyond it, the last levels' ties are left to the solver)
COMBINED_LIMIT = 2**52


@dataclass
class Ranked:
    solution: dict[str, Value]
    objective: int
    status: str  # "optimal" when proven, "feasible" when the time limit cut the proof short
    then: int = 0  # the tie-break's value (``optimize``'s ``then``), 0 without one

    @property
    def proven(self) -> bool:
        return self.status == "optimal"


@dataclass
class OptimizeResult:
    ranked: list[Ranked]
    status: str  # status of the first solve: optimal / feasible / infeasible / unknown
    wall_time_s: float
    skipped_rules: list[tuple[str, str]] = field(default_factory=list)
    work: float = 0.0  # CP-SAT's deterministic time of its solves (the same at any load)

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
    workers: int = SOLVER_WORKERS,
    then: IntExpr | tuple[IntExpr, ...] | None = None,
    hint: Mapping[str, Value] | None = None,
    work: float | None = None,
) -> OptimizeResult:
    """The ``top`` best assignments by ``objective``, best first; ``time_limit_s`` bounds every solve together (each
    is given what is left of it; an answer is "optimal" only where its solve proved it and every answer before it
    was proven).
    ``then``: among configs of equal objective, the smallest of it first (several: compared in turn; the module's
    text). ``hint``: a config the first solve starts its search from (one near the optimum, valid or not); the
    answers do not depend on it, the time does. ``work``: each solve's limit in deterministic time (``new_solver``):
    a step that takes whatever a short search finds, the same at any load; its solves run one worker (with several,
    CP-SAT's portfolio shares solutions as its threads happen to find them, so what a limit cuts depends on their
    timing; ``interleave_search``, deterministic with several, cost the OpenRLHF 8x A100 Qwen2.5-7B first solve
    0.69 deterministic units with 2 workers against 0.008 with one, and its capped alternative found nothing)."""
    from ..deadline import Deadline, OutOfTime

    deadline = Deadline(time_limit_s)
    if deadline.expired():  # no time left for even the model's construction (the command's budget is spent)
        return OptimizeResult([], "unknown", 0.0)
    try:  # pricing the cost tables (the rules', the objective's) counts against the same limit
        built = build_model(ruleset, domains, deadline=deadline)
        target = _Target(built, objective, then, maximize)
    except OutOfTime:
        return OptimizeResult([], "unknown", deadline.elapsed())
    if work is not None:
        workers = 1
    built.compiler.deadline = None  # the model is built: what follows is solves, each with its own limit
    # the bands enumerate this model as it is now (no objective, bound, hint or exclusion yet): a copy, not a rebuild
    unsolved = built.model.clone() if top > 1 else None
    built.model.Minimize(target.sign * target.primary)
    if hint is not None:
        _hint(built.model, built, hint)
    result = OptimizeResult([], "unknown", 0.0, built.skipped)
    # with runners-up, the optimum's tie is settled only if the bands do not rank it (a band that completes orders
    # the optimal objective's configs by the tie-break itself, so its first is the settled one)
    _solve_next(built, target, deadline, workers, result, maximize, settle=top == 1, work=work)
    if top == 1 or not result.ranked:
        return result
    banded = False
    if result.status == "optimal":
        best = result.ranked[0].objective
        # a band is worth at most half of what the optimum cost: beyond that, exclusion is as fast
        budget = max(BAND_WORK_FLOOR, BAND_WORK_SHARE * result.work)  # all the bands together
        for band in BANDS:
            if budget <= 0 or deadline.expired():
                break
            found, wall, spent = _band(replace(built, model=unsolved.clone()), target, maximize, best, band,
                                       deadline.left(), budget)
            result.wall_time_s += wall
            result.work += spent
            budget -= spent
            if found is None:  # too many configs in the band, or out of time: exclusion instead
                break
            if len(found) >= top or band == BANDS[-1]:
                # everything outside the band is worse than everything in it: a proven prefix
                result.ranked = [Ranked(sol, value, "optimal", tie) for value, tie, sol in found[:top]]
                banded = True
                break
    if not banded and result.ranked[0].proven and target.span > 1 and not deadline.expired():
        _settle_tie(built, target, result, deadline.left() * 0.5, work)
    for r in result.ranked:
        _exclude(built.model, built, r.solution)
    while len(result.ranked) < top and not deadline.expired():
        if not _solve_next(built, target, deadline, workers, result, maximize, work=work):
            break
    if not all(r.proven for r in result.ranked):  # unproven answers bound nothing: a later one may be better
        result.ranked.sort(key=lambda r: (target.sign * r.objective, r.then))
    return result


def _solve_next(built, target, deadline, workers: int, result: OptimizeResult, maximize: bool = False,
                settle: bool = True, work: float | None = None) -> bool:
    """Solve once more; append the answer (and exclude it from later solves).

    After an answer, the next one cannot be better (only configs were removed): its objective is
    bounded by the last, so a tie is proven the moment it is found, and the last answer is the
    search's starting hint. A proven answer's tie is settled (``_settle_tie``) before it is excluded;
    ``settle`` False: neither (the caller settles and excludes it).
    """
    if result.ranked and deadline.expired():
        return False
    if result.ranked and not isinstance(target.primary, int):
        last = result.ranked[-1]
        if last.proven:  # a bound only from a proven answer: an unproven one may have better configs left
            built.model.Add(target.sign * target.primary >= target.sign * last.objective)
        _hint(built.model, built, last.solution)
    solver = _optimizer(deadline.left(), workers, work)
    status = solver.Solve(built.model)
    result.wall_time_s += solver.WallTime()
    result.work += solver.deterministic_time
    text = STATUS_TEXT.get(status, str(status))
    if not result.ranked:
        result.status = text
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    if status == cp_model.OPTIMAL and result.ranked and not result.ranked[-1].proven:
        # optimal among the configs not yet ranked, but an earlier answer was not proven: the order is not
        text = STATUS_TEXT[cp_model.FEASIBLE]
    sol = built.solution(solver)
    result.ranked.append(Ranked(sol, target.read(solver, target.primary), text, target.read(solver, target.then)))
    if not settle:
        return True
    if status == cp_model.OPTIMAL and target.span > 1 and not deadline.expired():
        _settle_tie(built, target, result, deadline.left() * 0.5, work)
    _exclude(built.model, built, result.ranked[-1].solution)
    return True


def _optimizer(time_limit_s: float, workers: int, work: float | None = None):
    """The solver of an optimizing solve: its time limit (and deterministic one), its workers, the lighter presolve."""
    solver = new_solver(time_limit_s, work)
    solver.parameters.num_workers = workers
    tune_for_optimization(solver.parameters)
    return solver


def _hint(model: cp_model.CpModel, built, solution: dict[str, Value]) -> None:
    model.ClearHints()
    for name in built.free:
        var, value = built.decision[name], solution.get(name)
        if value is not None and not isinstance(var, (bool, int)):
            model.AddHint(var, int(value))


def _settle_tie(built, target: "_Target", result: OptimizeResult, time_limit_s: float,
                work: float | None = None) -> None:
    """Replace the last answer by the config of least tie-break among those of its objective not yet excluded (in a
    copy of the model: the runners-up are searched in the first). Out of time, the best found so far (the tie then
    left unsettled, and the answer says it is not proven: another config of its objective may be the one a longer
    search prints).

    One worker without the LP relaxation: with the objective fixed, the search is over few configs, and a second
    worker or the relaxation's cuts only add work (benchmarks/bench_recommend.py's 64-GPU Megatron MoE: 0.37 to 0.11
    CPU seconds a tie; the same optimum, proven)."""
    best = result.ranked[-1]
    model = built.model.Clone()
    if not isinstance(target.primary, int):
        model.Add(target.primary == best.objective)
    model.Minimize(target.then)
    _hint(model, built, best.solution)
    solver = _optimizer(time_limit_s, 1, work)
    solver.parameters.linearization_level = 0
    status = solver.Solve(model)
    result.wall_time_s += solver.WallTime()
    result.work += solver.deterministic_time
    settled = best.status if status == cp_model.OPTIMAL else STATUS_TEXT[cp_model.FEASIBLE]
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        sol = built.solution(solver)
        result.ranked[-1] = Ranked(sol, best.objective, settled, target.read(solver, target.then))
    else:
        result.ranked[-1] = replace(best, status=settled)


class _Target:
    """The objective (``sign``: -1 to maximize) and the tie-break: ``then`` is one expression or several, compared
    in turn, folded into one (each scaled by the ranges of those after it: ``span`` in all); the last ones are
    dropped where the fold could outgrow COMBINED_LIMIT (the ties they would settle are then left to the solver)."""

    def __init__(self, built, objective: IntExpr, then, maximize: bool) -> None:
        self.primary, _, _ = built.compiler.int(objective)
        self.sign = -1 if maximize else 1
        levels = [built.compiler.int(e) for e in ((then,) if isinstance(then, IntExpr) else (then or ()))]
        levels = [(lin, t_hi - t_lo + 1) for lin, t_lo, t_hi in levels if not isinstance(lin, int)]
        while levels and math.prod(n for _, n in levels) >= COMBINED_LIMIT:
            levels.pop()
        self.then, self.span = 0, 1
        for lin, n in levels:  # lexicographic: the first level weighs most
            self.then = self.then * n + lin
            self.span *= n

    @staticmethod
    def read(solver, expr) -> int:
        return int(expr) if isinstance(expr, int) else int(solver.Value(expr))


class _ObjectiveCollector(_Collector):
    """Free-variable values, the objective and the tie-break of each solution."""

    def __init__(self, built, target: _Target, limit: int) -> None:
        super().__init__(built, limit)
        self.target = target
        self.values: list[tuple[int, int]] = []

    def on_solution_callback(self) -> None:
        self.values.append((self.target.read(self, self.target.primary), self.target.read(self, self.target.then)))
        super().on_solution_callback()


def _band(built, tied: "_Target", maximize: bool, best: int, band: float,
          time_limit_s: float, work: float) -> tuple[list[tuple[int, int, dict[str, Value]]] | None, float, float]:
    """Every config whose objective is within ``band`` of ``best``: (objective, tie-break, values), best first (ties
    by the tie-break, then by value), or None when there are more than BAND_LIMIT of them or the enumeration did not
    finish (within ``time_limit_s`` seconds and ``work`` deterministic time); with its wall and deterministic
    time. ``built``: the model with its objective and tie-break compiled (``tied``), nothing else added."""
    target = tied.primary
    width = max(1, int(abs(best) * band))
    if not isinstance(target, int):
        built.model.Add(target >= best - width) if maximize else built.model.Add(target <= best + width)
    solver = new_solver(time_limit_s, work)
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.num_workers = 1
    tune_for_enumeration(built, solver.parameters)
    collector = _ObjectiveCollector(built, tied, BAND_LIMIT + 1)
    status = solver.Solve(built.model, collector)
    if status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE) or collector.hit_limit:
        return None, solver.WallTime(), solver.deterministic_time
    unique: dict[tuple, tuple[int, int, dict[str, Value]]] = {}
    for (value, tie), sol in zip(collector.values, _decode(built, collector)):
        key = tuple(sorted((k, -1 if v is None else int(v)) for k, v in sol.items()))
        unique[key] = (value, tie, sol)
    order = sorted(unique.items(), key=lambda kv: ((-kv[1][0] if maximize else kv[1][0]), kv[1][1], kv[0]))
    return [item for _, item in order], solver.WallTime(), solver.deterministic_time

"""The nearest valid config to the one a user has.

Every variable gets a domain that contains the user's value; the objective
counts what changes, in this order of importance:

1. how many variables change (``CHANGE_WEIGHT`` each);
2. how far each moves, ``|log2(new / old)|`` in hundredths (doubling a micro
   batch costs as much as halving it; 64 -> 66 is cheaper than 64 -> 32);
   switching a flag counts as two doublings, setting or unsetting a key as one;
3. the framework's order of what to try first (``rank``, smaller first), so
   that among equally small changes the seeds' advice wins.

``change_cost`` is the one definition of that cost: the CP-SAT model tables
it per variable, and the brute-force tests evaluate it directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ortools.sat.python import cp_model

from ..rules.base import UNSET_PLACEHOLDER, RuleSet, Value
from .model import DEFAULT_TIME_LIMIT_S, STATUS_TEXT, Domains, build_model

CHANGE_WEIGHT = 1_000_000  # one more changed key always costs more than any distance
DISTANCE_SCALE = 100  # hundredths of a doubling
MAX_DISTANCE = 2_000  # 20 doublings: caps the distance term below CHANGE_WEIGHT / (keys * 10)
RANK_WEIGHT = 1  # ranks are 0..9; distances are multiplied by 10 to leave room for them
MAX_RANK = 9


def _distance(a: int, b: int) -> int:
    if a <= 0 or b <= 0:
        return DISTANCE_SCALE * 4
    return min(MAX_DISTANCE, round(DISTANCE_SCALE * abs(math.log2(b / a))))


def change_cost(old: Value, new: Value, rank: int = 0, reference: int | None = None) -> int:
    """Cost of moving one variable from ``old`` to ``new`` (0 when unchanged).

    Setting a key that was unset costs one doubling plus the distance from
    ``reference`` (a related value the user did set, e.g. the actor's micro
    batch for the critic's), so the new value resembles the user's others.
    """
    if old is None and new is None:
        return 0
    if old is not None and new is not None and old == new and isinstance(old, bool) == isinstance(new, bool):
        return 0
    rank = min(max(rank, 0), MAX_RANK)
    if isinstance(old, bool) or isinstance(new, bool):
        distance = 2 * DISTANCE_SCALE  # switching a feature changes behaviour: two doublings
    elif new is None:
        distance = DISTANCE_SCALE  # unsetting a key: one doubling
    elif old is None:
        distance = DISTANCE_SCALE + (_distance(int(reference), int(new)) if reference else 0)
    else:
        distance = _distance(int(old), int(new))
    return CHANGE_WEIGHT + 10 * distance + RANK_WEIGHT * rank


def total_cost(current: Mapping[str, Value], candidate: Mapping[str, Value], ranks: Mapping[str, int],
               references: Mapping[str, int] | None = None) -> int:
    references = references or {}
    return sum(change_cost(current.get(n), candidate[n], ranks.get(n, MAX_RANK), references.get(n)) for n in candidate)


@dataclass
class Change:
    name: str
    old: Value
    new: Value


@dataclass
class RepairResult:
    solution: dict[str, Value] | None
    changes: list[Change]
    objective: int | None
    status: str  # optimal (proven nearest) / feasible (time limit hit) / infeasible / unknown
    wall_time_s: float
    rules_now_satisfied: dict[str, list[str]] = field(default_factory=dict)  # changed var -> rule ids it is read by

    @property
    def proven(self) -> bool:
        return self.status == "optimal"

    @property
    def changed_count(self) -> int:
        return len(self.changes)


def _value_lits(built, name: str, values: list[Value]) -> tuple[list, list[tuple]]:
    """The CP-SAT variables that carry ``name`` and, per domain value, their tuple."""
    var = built.decision[name]
    flag = built.set_flags.get(name)
    cols = []
    if flag is not None and not isinstance(flag, bool):
        cols.append(("flag", flag))
    if not isinstance(var, (bool, int)):
        cols.append(("var", var))
    rows = []
    for v in values:
        row = []
        for kind, _ in cols:
            if kind == "flag":
                row.append(0 if v is None else 1)
            else:
                row.append(UNSET_PLACEHOLDER if v is None else int(v))
        rows.append(tuple(row))
    return [c for _, c in cols], rows


def repair(
    ruleset: RuleSet,
    domains: Domains,
    current: Mapping[str, Value],
    *,
    ranks: Mapping[str, int] | None = None,
    references: Mapping[str, int] | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> RepairResult:
    """The valid assignment of ``domains`` closest to ``current`` by ``change_cost``."""
    ranks = ranks or {}
    references = references or {}
    built = build_model(ruleset, domains)
    model = built.model
    costs = []
    for name in built.free:
        values = list(dict.fromkeys(domains[name]))
        cols, rows = _value_lits(built, name, values)
        if not cols:
            continue
        per_value = [change_cost(current.get(name), v, ranks.get(name, MAX_RANK), references.get(name))
                     for v in values]
        hi = max(per_value)
        cost = model.NewIntVar(0, hi, f"chg_{name}")
        model.AddAllowedAssignments(cols + [cost], [r + (c,) for r, c in zip(rows, per_value)])
        costs.append(cost)
    model.Minimize(sum(costs) if costs else 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = 2
    status = solver.Solve(model)
    text = STATUS_TEXT.get(status, str(status))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return RepairResult(None, [], None, text, solver.WallTime())
    sol = built.solution(solver)
    changes = [Change(n, current.get(n), sol[n]) for n in sol if change_cost(current.get(n), sol[n]) > 0]
    broken_before = {v.rule for v in ruleset.check(current).errors}
    readers = {ch.name: [r.id for r in ruleset.rules if r.id in broken_before and ch.name in reads_through(ruleset, r)]
               for ch in changes}
    return RepairResult(sol, changes, int(solver.ObjectiveValue()), text, solver.WallTime(), readers)


def reads_through(ruleset: RuleSet, rule) -> set[str]:
    """Base variables a rule reads, through derived quantities."""
    derived = {d.name: d for d in ruleset.derived}
    from ..rules.expr import variables

    out: set[str] = set()
    todo = list(variables(rule.expr))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in derived:
            todo.extend(variables(derived[name].expr))
        else:
            out.add(name.removesuffix("_set"))
    return out

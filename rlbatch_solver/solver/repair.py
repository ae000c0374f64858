"""The nearest valid config to the one a user has, by CP-SAT.

Every variable gets a domain that contains the user's value; the objective is
``costs.candidate_cost`` (changed keys, waste, distances, ranks), tabled per
variable. ``api.fix`` first tries the direct search of one- and two-key moves
(``solver/nearest.py``); this model answers when the nearest repair is larger.

Memory rules are not tabled here: a memory table spans the cross product of
its phase's inputs (hundreds of thousands of cost-model calls on a pasted
config's candidate domains). Instead each solution is checked against the
memory rules and, when a phase does not fit, that phase's input values are
excluded (a no-good cut) and the model solved again. A cut removes only
configs that do not fit, so an optimal answer of the last solve is the
nearest fitting one, and an infeasible last solve proves none fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ortools.sat.python import cp_model

from ..deadline import Deadline
from ..rules.base import UNSET_PLACEHOLDER, RuleKind, RuleSet, Severity, Value
from .costs import (  # noqa: F401 - re-exported: the tests and api import them from here
    CHANGE_WEIGHT, DISTANCE_SCALE, MAX_DISTANCE, MAX_RANK, RANK_WEIGHT, WASTE_BASE, WASTE_EXCESS_PER_PERMILLE,
    WASTE_NAME, WASTE_PER_PERMILLE, WASTE_TOLERANCE_PERMILLE, WARNING_COST, candidate_cost, change_cost, reads_through, same_value, total_cost, waste_cost,
)
from .settings import new_solver
from .model import DEFAULT_TIME_LIMIT_S, STATUS_TEXT, Domains, build_model


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
    method: str = "cp-sat"  # "direct" (every one- and two-key move evaluated) or "cp-sat"
    evaluated: int = 0  # configs the direct search evaluated
    # no repair found: the candidate breaking the fewest rules, and the rules it still breaks
    partial: dict[str, Value] | None = None
    partial_broken: list[str] = field(default_factory=list)
    # proven without a solve: memory rule -> (least MiB its phase needs in the domains, usable MiB)
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)
    # proven nearest among the candidate grid only, not over every integer of the direct search's wide range
    grid_only: bool = False
    # the steps the clock stopped (the safety net of a search bounded by work), in words: the answer is not proven
    cut_short: list[str] = field(default_factory=list)
    work_spent: float = 0.0  # CP-SAT deterministic time of every solve (``repair(work=)``)

    @property
    def proven(self) -> bool:
        return self.status == "optimal"


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


def _warnings_cost(built) -> cp_model.LinearExprT:
    """``costs.WARNING_COST`` for each advice warning of the model that the solution breaks, as an objective term:
    each warning's rule literal negated (1 exactly when the warning is broken; OR-Tools reads a negated literal in a
    linear expression as ``1 - literal``, cp_model.py LinearExpr.get_integer_var_value_map, from 9.10 on)."""
    terms, fixed = [], 0
    for rule in built.rules:
        if rule.severity is not Severity.WARNING:
            continue
        holds = built.rule_lits[rule.id]
        if isinstance(holds, bool):
            fixed += 0 if holds else WARNING_COST
        else:
            terms.append(holds.Not())
    return fixed + WARNING_COST * sum(terms) if terms else fixed


def _lazy_split(ruleset: RuleSet) -> tuple[RuleSet, list]:
    """The rule set without its memory rules and cost tables, and the memory rules."""
    lazy = [r for r in ruleset.rules if r.kind is RuleKind.MEMORY]
    if not lazy:
        return ruleset, []
    derived = [d for d in ruleset.derived if not d.name.startswith(("mem_", "us_"))]
    rules = [r for r in ruleset.rules if r.kind is not RuleKind.MEMORY]
    return RuleSet(ruleset.framework, ruleset.version, ruleset.variables, derived, rules, compiled_like=ruleset), lazy


def _value_conds(model, built, name: str, value: Value, at_least: bool = False) -> list:
    """Literals (added to ``model``) whose conjunction says ``name`` takes ``value`` (None: unset), or with
    ``at_least`` a set value of at least ``value``; [] when fixed."""
    if name not in built.free:
        return []
    var, flag = built.decision[name], built.set_flags.get(name)
    conds = []
    if flag is not None and not isinstance(flag, bool):
        conds.append(flag if value is not None else flag.Not())
    if value is not None and not isinstance(var, (bool, int)):
        if name in built.compiler.bools:
            conds.append(var if value else var.Not())
        else:
            eq = model.NewBoolVar(f"is_{name}_{value}")
            if at_least:
                model.Add(var >= int(value)).OnlyEnforceIf(eq)
                model.Add(var < int(value)).OnlyEnforceIf(eq.Not())
            else:
                model.Add(var == int(value)).OnlyEnforceIf(eq)
                model.Add(var != int(value)).OnlyEnforceIf(eq.Not())
            conds.append(eq)
    return conds


def _exclude(model, built, cut: dict[str, Value], grows: frozenset[str]) -> None:
    """No solution with a memory phase's inputs as in ``cut``; for an input memory grows with (a micro
    batch, a token budget: the policy's ``grows_memory``) no larger value either, since the phase needs at
    least as much there (tests/test_fix.py checks the memory model grows with them)."""
    model.AddBoolOr([c.Not() for n, v in cut.items()
                     for c in _value_conds(model, built, n, v, at_least=n in grows and isinstance(v, int)
                                           and not isinstance(v, bool))])


def repair(
    ruleset: RuleSet,
    domains: Domains,
    current: Mapping[str, Value],
    *,
    ranks: Mapping[str, int] | None = None,
    references: Mapping[str, int] | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    deadline: Deadline | None = None,
    min_changes: int = 0,
    hint: Mapping[str, Value] | None = None,
    on_cut: Callable[[str], None] | None = None,
    grows: frozenset[str] = frozenset(),
    held: frozenset[str] = frozenset(),
    below: int | None = None,
    misfit_grows: frozenset[str] | Mapping[str, frozenset[str]] | None = None,
    work: float | None = None,
) -> RepairResult:
    """The valid assignment of ``domains`` closest to ``current`` by ``costs.candidate_cost``.

    ``grows``: the keys raising costs a little more (``costs.change_cost``); ``misfit_grows``: those at whose every
    larger value a phase that misfits misfits too, which widen a memory cut (``_exclude``; ``grows`` where None),
    or per phase (phase -> keys).

    ``min_changes``: a lower bound on the changed keys already proven (the direct search found
    no smaller repair), which prunes the search. ``deadline`` bounds every solve together. ``below``: only a
    repair cheaper than this is sought (one already found costs that much); "infeasible" then says none is.
    ``work``: every solve together within this much CP-SAT deterministic time (``settings.new_solver``), for a
    search that may stop short by design (beating an answer in hand): what it finds is then the same at any load;
    the deadline stays the safety net, and either cut leaves the repair not proven.

    Waste (padding) in the objective makes CP-SAT's bound weak (a solve of seconds became
    minutes on verl's 25 free variables), so it is solved in two steps: the nearest repair that
    wastes nothing (the waste fixed at 0: no waste term), then any wasteful repair strictly
    cheaper than that, all costs counted (waste beyond the tolerance priced as keys, ``costs.waste_cost``).
    Both proven: the cheaper of the two is the optimum. A valid ``current`` is its own repair, however much it
    wastes (a config that runs needs no change; check warns about its padding).
    """
    ranks = ranks or {}
    references = references or {}
    deadline = deadline or Deadline(time_limit_s)
    if min_changes == 0 and below is None and not ruleset.failing_errors(current):
        return repair_result(ruleset, current, dict(current), candidate_cost(
            ruleset, current, current, ranks, references, grows, held), "optimal", 0.0)
    model_rs, lazy = _lazy_split(ruleset)
    built = build_model(model_rs, domains)
    model = built.model
    costs, changed_keys = [], []
    for name in built.free:
        values = list(dict.fromkeys(domains[name]))
        cols, rows = _value_lits(built, name, values)
        if not cols:
            continue
        per_value = [change_cost(current.get(name), v, ranks.get(name, MAX_RANK), references.get(name), name in grows,
                                 name in held) for v in values]
        cost = model.NewIntVar(0, max(per_value), f"chg_{name}")
        model.AddAllowedAssignments(cols + [cost], [r + (c,) for r, c in zip(rows, per_value)])
        changed = model.NewBoolVar(f"changed_{name}")  # the key count, stated apart: it propagates well
        model.Add(cost >= CHANGE_WEIGHT).OnlyEnforceIf(changed)
        model.Add(cost == 0).OnlyEnforceIf(changed.Not())
        costs.append(cost)
        changed_keys.append(changed)
    changes_cost = sum(costs) if costs else 0
    objective = changes_cost + _warnings_cost(built)  # the advice warnings the repair breaks (costs.WARNING_COST)
    if min_changes > 0 and costs:
        model.Add(sum(changed_keys) >= min_changes)
        model.Add(changes_cost >= min_changes * CHANGE_WEIGHT)  # the same, as a bound on the objective
    if hint:
        for name in built.free:
            var = built.decision[name]
            if name in hint and hint[name] is not None and not isinstance(var, (bool, int)):
                model.AddHint(var, int(hint[name]))
    lazy_reads = {r.id: sorted(reads_through(ruleset, r) & set(domains)) for r in lazy}
    # (rule inputs -> values) that do not fit, with the keys it widens over: every stage excludes them
    cuts: list[tuple[dict[str, Value], frozenset[str]]] = []
    waste = built.compiler.ints[WASTE_NAME] if built.compiler.resolve(WASTE_NAME) else None
    if waste is None or waste[2] <= 0:  # no waste in this space: one solve
        model.Minimize(objective)
        stages = [model]
    else:
        clean = model.Clone()
        clean.Add(waste[0] == 0)
        clean.Minimize(objective)
        wasteful = model.Clone()
        wasteful.Add(waste[0] >= 1)
        stages = [clean, wasteful]
        # waste beyond the tolerance costs as keys: its excess, stated as the max it is
        excess = wasteful.NewIntVar(0, max(0, waste[2] - WASTE_TOLERANCE_PERMILLE), "waste_excess")
        wasteful.AddMaxEquality(excess, [waste[0] - WASTE_TOLERANCE_PERMILLE, 0])
        full_objective = (objective + WASTE_PER_PERMILLE * waste[0] + WASTE_BASE
                          + WASTE_EXCESS_PER_PERMILLE * excess)
        wasteful.Minimize(full_objective)
    if below is not None and costs:  # a repair costing this much is in hand: only a cheaper one is news
        stages[0].Add(objective <= below - 1)
        stages[0].Add(sum(changed_keys) <= (below - 1) // CHANGE_WEIGHT)  # the same as a count: it prunes at once
        if len(stages) > 1:
            stages[1].Add(full_objective <= below - 1)
            stages[1].Add(sum(changed_keys) <= (below - 1 - WASTE_BASE) // CHANGE_WEIGHT)
    best: tuple[int, dict[str, Value], str] | None = None
    wall, statuses = 0.0, []
    spent = [0.0]  # deterministic time of every solve so far (``work``)
    for i, stage in enumerate(stages):
        if i == 1 and best is not None:
            if min_changes * CHANGE_WEIGHT + WASTE_BASE + WASTE_PER_PERMILLE >= best[0]:
                statuses.append("infeasible")  # any wasteful repair costs at least that much: proven by arithmetic
                break
            stage.Add(full_objective <= best[0] - 1)  # only a strictly cheaper wasteful repair is news
            # ... which changes no more keys than the clean one: stated as a count, it prunes at once
            stage.Add(sum(changed_keys) <= (best[0] - 1 - WASTE_BASE) // CHANGE_WEIGHT)
        solved = _solve_lazily(stage, built, ruleset, lazy_reads, cuts, deadline, on_cut,
                               grows if misfit_grows is None else misfit_grows, work, spent)
        wall += solved.wall_s
        statuses.append(solved.status)
        if solved.solution is not None:
            best = (solved.objective, solved.solution, solved.status)
    proven = all(s in ("optimal", "infeasible") for s in statuses)
    if best is None:
        text = "infeasible" if proven else ("unknown" if "unknown" in statuses else statuses[-1])
        return RepairResult(None, [], None, text, wall, work_spent=spent[0])
    return repair_result(ruleset, current, best[1], best[0], "optimal" if proven else "feasible", wall,
                         work_spent=spent[0])


@dataclass(frozen=True)
class LazySolve:
    """One stage's solve with its memory rules added lazily: the solver's status, the solution (None without one)
    and its objective, and the solver's wall time over every round."""

    status: str
    solution: dict[str, Value] | None
    objective: int | None
    wall_s: float


def _solve_lazily(model, built, ruleset: RuleSet, lazy_reads: dict[str, list[str]], cuts: list, deadline: Deadline,
                  on_cut, grows: frozenset[str] | Mapping[str, frozenset[str]] = frozenset(),
                  work: float | None = None, spent: list[float] | None = None) -> LazySolve:
    """Solve; while a solution breaks a memory rule, exclude that phase's input values and solve again. ``grows``:
    the keys a cut widens over, or per phase (phase -> keys). ``work``: the deterministic time every solve of the
    repair may spend together, ``spent[0]`` what they have.

    One worker: with two, which of several equally near repairs a solve returns, and how far a search cut short
    gets, depended on how the threads ran (the machine's load); with one, the same model gives the same answer."""
    spent = spent if spent is not None else [0.0]
    for cut, wide in cuts:  # cuts found by an earlier stage hold here too
        _exclude(model, built, cut, wide)
    wall = 0.0
    while True:
        if deadline.expired() or (work is not None and spent[0] >= work):
            return LazySolve("unknown", None, None, wall)
        solver = new_solver(max(0.01, deadline.left()), None if work is None else work - spent[0])
        solver.parameters.num_workers = 1
        status = solver.Solve(model)
        wall += solver.WallTime()
        spent[0] += solver.deterministic_time
        text = STATUS_TEXT.get(status, str(status))
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return LazySolve(text, None, None, wall)
        sol = built.solution(solver)
        misfits = [rid for rid in ruleset.failing_errors(sol) if rid in lazy_reads] if lazy_reads else []
        if not misfits:
            return LazySolve(text, sol, int(round(solver.ObjectiveValue())), wall)  # a float: 1037721.99.. is 1037722
        for rid in misfits:  # exclude this phase's inputs as they are: that phase does not fit with them
            wide = grows.get(ruleset.rule(rid).stage, frozenset()) if isinstance(grows, Mapping) else grows
            cut = _widen_cut(ruleset, rid, {n: sol[n] for n in lazy_reads[rid]}, built, wide)
            cuts.append((cut, wide))
            _exclude(model, built, cut, wide)  # no free input: the phase never fits, the model becomes infeasible
            if on_cut:
                on_cut(rid)


WIDEN_EVALUATIONS = 400  # memory evaluations one cut may spend on dropping inputs (tens of ms)


def _widen_cut(ruleset: RuleSet, rule_id: str, cut: dict[str, Value], built, grows: frozenset[str]) -> dict[str, Value]:
    """``cut`` without the inputs whose every value leaves the phase out of memory.

    A cut names every input of the phase's memory table, but many are not read in the case at hand
    (a token budget without dynamic batching, an expert-parallel size of a dense model): one cut per
    value of those would take a solve each. An input is dropped when the phase misfits for every
    combination of the dropped inputs' values (the others as in the cut; an input memory grows with
    at its cut value, the least the cut covers), so the wider cut excludes only configs that do not fit.
    """
    import itertools

    from ..rules.expr import evaluate, variables

    rule = ruleset.rule(rule_id)
    tables = [d for d in ruleset.derived if d.name in variables(rule.expr) and hasattr(d.expr, "fn")]
    if len(tables) != 1:
        return cut
    table = tables[0].expr
    domains = built.compiler.domains
    def misfits(trial: list[str]) -> bool:
        for combo in itertools.product(*(_domain_of(built, n) for n in trial)):
            env = ruleset.base_env({**cut, **dict(zip(trial, combo))})
            value = table.fn(*(env[i.name] for i in table.inputs))  # cached: rows asked again cost nothing
            if evaluate(rule.expr, {**env, tables[0].name: value}):
                return False
        return True

    free = [n for n in cut if n in built.free and n in domains]
    # an input that alone can make the phase fit stays; the others are dropped while they jointly misfit
    alone = sorted((n for n in free if misfits([n])), key=lambda n: len(_domain_of(built, n)))
    dropped: list[str] = []
    spent = sum(len(_domain_of(built, n)) for n in free)
    for name in alone:
        trial = dropped + [name]
        combos = math.prod(len(_domain_of(built, n)) for n in trial)
        if spent + combos > WIDEN_EVALUATIONS:
            continue
        spent += combos
        if misfits(trial):
            dropped.append(name)
    return {n: v for n, v in cut.items() if n not in dropped}


def _domain_of(built, name: str) -> list[Value]:
    """The values ``name`` may take in the model (None for unset)."""
    values = list(built.compiler.domains.get(name, []))
    flag = built.set_flags.get(name)
    if flag is None:
        return values
    from ..rules.base import UNSET_PLACEHOLDER as unset

    out = [v for v in values if v != unset]
    has_unset = (flag is False) or (not isinstance(flag, bool) and unset in values)
    return ([None] if has_unset else []) + out


def changes_between(current: Mapping[str, Value], candidate: Mapping[str, Value]) -> list[Change]:
    return [Change(n, current.get(n), candidate[n]) for n in candidate if not same_value(current.get(n), candidate[n])]


def repair_result(ruleset: RuleSet, current: Mapping[str, Value], sol: dict[str, Value], objective: int | None,
                  status: str, wall: float, **extra) -> RepairResult:
    """A found repair with its changes and, per changed variable, the broken rules that read it: the errors, and the
    advice warnings the repair clears."""
    changes = changes_between(current, sol)
    warned = set(ruleset.failing(current, Severity.WARNING)) - set(ruleset.failing(sol, Severity.WARNING))
    broken_before = set(ruleset.failing_errors(current)) | warned
    readers = {ch.name: [r.id for r in ruleset.rules if r.id in broken_before and ch.name in reads_through(ruleset, r)]
               for ch in changes}
    return RepairResult(sol, changes, objective, status, wall, readers, **extra)


def fewest_moved(ruleset: RuleSet, domains: Domains, held: Mapping[str, Value], *,
                 time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> tuple[dict[str, Value] | None, str]:
    """A valid assignment of ``domains`` that moves the fewest of ``held``'s variables off their held values (each
    held value must be in its domain; the other variables are free and cost nothing): (the assignment or None,
    the solver's status). Unlike ``repair``, only the held variables count, all alike; among equals, the earliest in
    the domains' order (one answer whatever the solver's threads do). Only an "optimal" status
    proves the assignment moves the fewest; "feasible" (the time limit came first) is a valid one, not proven the
    fewest."""
    built = build_model(ruleset, domains)
    model = built.model
    moved, at = [], []
    for name, value in held.items():
        if name not in built.free:
            continue
        values = list(dict.fromkeys(domains[name]))
        cols, rows = _value_lits(built, name, values)
        off = model.NewBoolVar(f"moved_{name}")
        index = model.NewIntVar(0, len(values) - 1, f"at_{name}")
        model.AddAllowedAssignments(cols + [off, index], [r + (0 if same_value(v, value) else 1, i)
                                                          for i, (r, v) in enumerate(zip(rows, values))])
        moved.append(off)
        at.append((index, len(values)))
    if moved:
        # among the settings that move the fewest, one answer whatever the solver's threads do: the earliest in the
        # domains' order, the held variables' order first (a number in mixed radix, below one move's weight)
        order, weight = 0, 1
        for index, size in reversed(at):
            order, weight = order + weight * index, weight * size
        model.Minimize(weight * sum(moved) + order)
    solver = new_solver(time_limit_s)
    status = solver.Solve(model)
    text = STATUS_TEXT.get(status, str(status))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, text
    return built.solution(solver), text

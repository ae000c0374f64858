"""Build a CP-SAT model from a rule set and variable domains; enumerate it.

Domains map each variable name to the values it may take: one value for what
the user fixed, several for what we search. ``None`` in an optional
variable's domain means "unset". Every solve has a time limit and reports its
status, so an answer is always labelled proven or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ortools.sat.python import cp_model

from ..rules.base import UNSET_PLACEHOLDER, Rule, RuleSet, Severity, Value
from ..rules.expr import variables
from .compile import Compiler

from .settings import DEFAULT_TIME_LIMIT_S, new_solver  # noqa: F401 - re-exported

STATUS_TEXT = {
    cp_model.OPTIMAL: "optimal",
    cp_model.FEASIBLE: "feasible",
    cp_model.INFEASIBLE: "infeasible",
    cp_model.MODEL_INVALID: "model_invalid",
    cp_model.UNKNOWN: "unknown",
}

Domains = Mapping[str, Sequence[Value]]


@dataclass
class BuiltModel:
    """A CP-SAT model plus the maps from our names to its variables."""

    model: cp_model.CpModel
    compiler: Compiler
    decision: dict[str, cp_model.IntVar]  # variable name -> CP-SAT var (bools too)
    set_flags: dict[str, cp_model.IntVar]  # optional variable name -> its "is set" literal
    rule_lits: dict[str, object]  # rule id -> literal equivalent to the rule holding
    rules: list[Rule]
    skipped: list[tuple[str, str]]

    def value_of(self, solver: cp_model.CpSolverBase, name: str) -> Value:
        flag = self.set_flags.get(name)
        if flag is not None and not (flag if isinstance(flag, bool) else solver.BooleanValue(flag)):
            return None
        var = self.decision[name]
        if isinstance(var, (bool, int)):  # fixed by a one-value domain
            return var
        if name in self.compiler.bools:
            return bool(solver.BooleanValue(var))
        return int(solver.Value(var))

    def solution(self, solver) -> dict[str, Value]:
        out = dict(self.fixed_values)
        for name in self.free:
            out[name] = self.value_of(solver, name)
        return out

    def __post_init__(self) -> None:
        # values of variables fixed by one-value domains are known before solving
        self.free = [n for n in self.decision if not _is_const(self.decision[n]) or
                     (n in self.set_flags and not _is_const(self.set_flags[n]))]
        self.fixed_values = {n: self.value_of(None, n) for n in self.decision if n not in self.free}


def _is_const(x: object) -> bool:
    return isinstance(x, (bool, int))


def build_model(
    ruleset: RuleSet,
    domains: Domains,
    *,
    enforce: bool = True,
    include_warnings: bool = False,
    rule_filter: Iterable[str] | None = None,
    deadline=None,
) -> BuiltModel:
    """Variables from ``domains``, derived quantities, and one literal per rule.

    With ``enforce`` every applicable error rule (and warning rule when
    ``include_warnings``) must hold; otherwise the literals are left free for
    callers that assume or count them (repair, explain). ``deadline``: pricing the cost tables' rows stops with
    ``deadline.OutOfTime`` once it has passed (the model's construction, like its solves, within a command's time).
    """
    model = cp_model.CpModel()
    comp = Compiler(model)
    comp.deadline = deadline
    decision: dict[str, cp_model.IntVar] = {}
    set_flags: dict[str, cp_model.IntVar] = {}
    for name, values in domains.items():
        values = list(values)
        if not values:
            raise ValueError(f"empty domain for {name}")
        spec = ruleset.variables.get(name)
        is_bool = (spec is not None and spec.kind == "bool") or all(isinstance(v, bool) for v in values)
        if is_bool:
            decision[name] = comp.add_bool(name, [bool(v) for v in values])
            continue
        ints = [int(v) for v in values if v is not None]
        optional = spec is not None and spec.optional
        if optional:
            has_unset = any(v is None for v in values)
            flag = comp.add_bool(spec.set_flag, ([False] if has_unset else []) + ([True] if ints else []))
            set_flags[name] = flag
            var = comp.add_int(name, ints + ([UNSET_PLACEHOLDER] if has_unset else []))
            if has_unset and ints and not _is_const(var):
                # unset is one solution, not one per placeholder; set means a value of the domain
                model.Add(var == UNSET_PLACEHOLDER).OnlyEnforceIf(flag.Not())
                if UNSET_PLACEHOLDER not in ints:
                    model.Add(var != UNSET_PLACEHOLDER).OnlyEnforceIf(flag)
        elif any(v is None for v in values):
            raise ValueError(f"{name} cannot be unset")
        else:
            var = comp.add_int(name, ints)
        decision[name] = var

    known = set(comp.ints) | set(comp.bools)
    rules, skipped = ruleset.applicable(known)
    for d in ruleset.derived:
        if all(comp.knows(v) for v in variables(d.expr)):
            comp.defer(d.name, d.expr)

    wanted = set(rule_filter) if rule_filter is not None else None
    if enforce:
        from .row_filter import RowFilter

        comp.row_filter = RowFilter(ruleset, domains, [
            r.id for r in rules if (wanted is None or r.id in wanted) and r.severity is Severity.ERROR])
    rule_lits: dict[str, object] = {}
    kept: list[Rule] = []
    for r in rules:
        if wanted is not None and r.id not in wanted:
            continue
        lit = comp.lit(r.expr)
        rule_lits[r.id] = lit
        kept.append(r)
        if enforce and (r.severity is Severity.ERROR or include_warnings):
            comp.enforce(lit)
    return BuiltModel(model, comp, decision, set_flags, rule_lits, kept, skipped)


@dataclass
class EnumerateResult:
    solutions: list[dict[str, Value]]
    complete: bool  # every feasible tuple is listed (the search finished, no limit hit)
    status: str
    wall_time_s: float
    skipped_rules: list[tuple[str, str]] = field(default_factory=list)


class _Collector(cp_model.CpSolverSolutionCallback):
    """Keeps the raw values of the free variables; dicts are built after the search."""

    def __init__(self, built: BuiltModel, limit: int | None) -> None:
        super().__init__()
        self.limit = limit
        self.rows: list[list[int]] = []
        self.hit_limit = False
        # (name, CP-SAT var or None, set-flag var or None) for each free variable
        self.columns = []
        for name in built.free:
            var = built.decision[name]
            flag = built.set_flags.get(name)
            self.columns.append((name, None if _is_const(var) else var, None if flag is None or _is_const(flag) else flag))
        self.lits = [x for _, v, f in self.columns for x in (v, f) if x is not None]

    def on_solution_callback(self) -> None:
        self.rows.append([self.Value(x) for x in self.lits])
        if self.limit is not None and len(self.rows) >= self.limit:
            self.hit_limit = True
            self.StopSearch()


def _decode(built: BuiltModel, collector: _Collector) -> list[dict[str, Value]]:
    out = []
    bools = built.compiler.bools
    for row in collector.rows:
        sol = dict(built.fixed_values)
        it = iter(row)
        for name, var, flag in collector.columns:
            value = next(it) if var is not None else built.decision[name]
            is_set = bool(next(it)) if flag is not None else built.set_flags.get(name, True)
            if not is_set:
                sol[name] = None
            elif name in bools:
                sol[name] = bool(value)
            else:
                sol[name] = int(value)
        out.append(sol)
    return out


def tune_for_enumeration(built: BuiltModel, parameters) -> None:
    """Depth-first search over the decision variables, without the LP relaxation.

    Measured on the verl rule set (benchmarks/bench_enumerate.py): the LP
    relaxation costs about 10x per solution when enumerating and never prunes,
    since every constraint is a reified divisibility or comparison.
    """
    decision = [v for v in built.decision.values() if not _is_const(v)]
    flags = [f for f in built.set_flags.values() if not _is_const(f)]
    if decision or flags:
        built.model.AddDecisionStrategy(decision + flags, cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
    parameters.search_branching = cp_model.FIXED_SEARCH
    parameters.linearization_level = 0


def enumerate_solutions(
    ruleset: RuleSet,
    domains: Domains,
    *,
    limit: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    include_warnings: bool = False,
) -> EnumerateResult:
    """Every assignment of ``domains`` that satisfies the rules (up to ``limit``)."""
    built = build_model(ruleset, domains, include_warnings=include_warnings)
    solver = new_solver(time_limit_s)
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.num_workers = 1
    tune_for_enumeration(built, solver.parameters)
    collector = _Collector(built, limit)
    status = solver.Solve(built.model, collector)
    complete = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE) and not collector.hit_limit
    return EnumerateResult(
        _decode(built, collector), complete, STATUS_TEXT.get(status, str(status)), solver.WallTime(), built.skipped
    )

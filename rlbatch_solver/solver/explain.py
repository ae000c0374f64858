"""Why a search space has no valid config: a small set of conflicting rules.

Each rule's literal is assumed true; CP-SAT's
``SufficientAssumptionsForInfeasibility`` returns a subset that cannot hold
together. We then shrink it by deletion (drop a rule, re-solve; keep it out if
still infeasible) so the set printed is minimal: every rule in it matters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ..rules.base import Rule, RuleSet, Severity
from .settings import new_solver
from .model import STATUS_TEXT, Domains, build_model


@dataclass
class Conflict:
    rules: list[Rule]
    status: str  # "infeasible" when proven, "unknown" when the time limit hit first
    proven_minimal: bool
    # the values the domains fix, with every derived quantity whose inputs they fix (the messages' numbers)
    fixed: dict = field(default_factory=dict)
    # each rule is broken by the fixed values on its own (several conflicts of one rule, not one set of several)
    each_alone: bool = False

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rules]


def _infeasible_with(ruleset: RuleSet, domains: Domains, ids: list[str], time_limit_s: float):
    built = build_model(ruleset, domains, enforce=False, rule_filter=ids)
    for rid in ids:
        built.compiler.enforce(built.rule_lits[rid])
    solver = new_solver(time_limit_s)
    solver.parameters.num_workers = 1
    return solver.Solve(built.model)


def conflicting_rules(ruleset: RuleSet, domains: Domains, time_limit_s: float = 10.0) -> Conflict:
    """A minimal set of error rules that no value in ``domains`` satisfies together; ``time_limit_s`` bounds every
    solve together (out of time, the set found so far, not proven minimal)."""
    conflict = _conflicting_rules(ruleset, domains, time_limit_s)
    conflict.fixed = ruleset.full_env({k: v[0] for k, v in domains.items() if len(v) == 1 and v[0] is not None})
    return conflict


def _conflicting_rules(ruleset: RuleSet, domains: Domains, time_limit_s: float) -> Conflict:
    from ..deadline import Deadline

    deadline = Deadline(time_limit_s)
    built = build_model(ruleset, domains, enforce=False)
    errors = [r for r in built.rules if r.severity is Severity.ERROR]
    broken = [r for r in errors if built.rule_lits[r.id] is False]
    if broken:  # fixed values alone break these rules: each is a conflict of one
        return Conflict(broken, "infeasible", True, each_alone=True)
    errors = [r for r in errors if built.rule_lits[r.id] is not True]
    lits = [built.rule_lits[r.id] for r in errors]
    built.model.AddAssumptions(lits)
    solver = new_solver(deadline.left())
    solver.parameters.num_workers = 1  # assumption cores need a single worker
    status = solver.Solve(built.model)
    if status != cp_model.INFEASIBLE:
        return Conflict([], STATUS_TEXT.get(status, str(status)), False)
    core_idx = {lit.Index() for lit in [built.rule_lits[r.id] for r in errors]} & set(
        solver.SufficientAssumptionsForInfeasibility()
    )
    core = [r for r in errors if built.rule_lits[r.id].Index() in core_idx]
    if not core:  # the domains alone are empty after propagation
        return Conflict([], "infeasible", True)
    # deletion filter: try to drop each rule
    keep = [r.id for r in core]
    minimal = True
    for i, rid in enumerate(list(keep)):
        if deadline.expired():  # the rest stay in: a conflict still, perhaps not a minimal one
            minimal = False
            break
        trial = [k for k in keep if k != rid]
        st = _infeasible_with(ruleset, domains, trial, deadline.left() / (len(core) - i))
        if st == cp_model.INFEASIBLE:
            keep = trial
        elif st != cp_model.OPTIMAL and st != cp_model.FEASIBLE:
            minimal = False
    return Conflict([ruleset.rule(k) for k in keep], "infeasible", minimal)

"""Why a search space has no valid config: a small set of conflicting rules.

Two steps, both under one time budget:

1. A sufficient set. Each error rule's literal is assumed true in one solve; CP-SAT's
   ``SufficientAssumptionsForInfeasibility`` returns a subset that cannot hold together. That solve runs without
   CP-SAT's presolve and LP relaxation: with assumptions, presolve must keep every solution, and its probing over
   the cost tables was most of the work (a MoE on 8x L40S, verl-megatron: 7.5 of CP-SAT's deterministic seconds
   with presolve, 1.4 without; 3.4 s of wall time, 0.46 s; benchmarks/bench_conflict.py), for the same set. Out of
   time, the set is every error rule, if one ordinary solve proves they cannot hold together (and if deletion does
   not narrow that to a minimal set in time, no set is named: "not isolated within the time limit").
2. Deletion. Each rule of the set is dropped in turn and the rest solved as an ordinary model (the rules enforced,
   so cost-table rows they break are not priced: solver/row_filter.py); if still infeasible the rule stays out. The
   set printed is then minimal: every rule in it matters. Each of these solves gets a share of what is left; one
   that runs out of it keeps its rule in (a conflict still, not proven minimal).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ..rules.base import Rule, RuleSet, Severity
from .settings import new_solver
from .model import STATUS_TEXT, Domains, build_model

# the sufficient set's solve may take this share of the budget; deletion has the rest (and whatever it leaves): its
# trials are ordinary solves of 0.01-0.1 s, a few for a small set
CORE_SHARE = 0.8


@dataclass
class Conflict:
    rules: list[Rule]
    status: str  # "infeasible" when proven, "unknown" when the time limit hit first
    proven_minimal: bool
    # the values the domains fix, with every derived quantity whose inputs they fix (the messages' numbers)
    fixed: dict = field(default_factory=dict)
    # each rule is broken by the fixed values on its own (several conflicts of one rule, not one set of several)
    each_alone: bool = False
    # the clock (the safety net of a search bounded by ``work``) stopped a solve: the set is as far as it got
    cut_short: bool = False

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rules]


class _Work:
    """What the solves of one conflict search may spend together in CP-SAT's deterministic time (None: no bound but
    the seconds), and what they have. ``clock``: a solve ended without an answer with work of its share left: its
    seconds (its share of the deadline, the safety net) stopped it, not the work bound."""

    def __init__(self, limit: float | None) -> None:
        self.limit, self.spent, self.clock = limit, 0.0, False

    def left(self, share: float = 1.0) -> float | None:
        return None if self.limit is None else max(0.0, (self.limit - self.spent) * share)

    def spend(self, solver, status: int, allowed: float | None) -> None:
        """Count a solve's work; ``allowed``: the work it was given (``left``'s answer when it started)."""
        if self.limit is not None:
            self.spent += solver.deterministic_time
            # one worker: a solve ends UNKNOWN only at a limit; under its work limit, the seconds were it
            if status == cp_model.UNKNOWN and allowed is not None and solver.deterministic_time < allowed:
                self.clock = True


def _solve_with(ruleset: RuleSet, domains: Domains, ids: list[str], time_limit_s: float, work: _Work | None = None,
                share: float = 1.0) -> int:
    """The status of the model with only the error rules ``ids``, enforced."""
    built = build_model(ruleset, domains, rule_filter=ids)
    work = work or _Work(None)
    allowed = work.left(share)
    solver = new_solver(time_limit_s, allowed)
    solver.parameters.num_workers = 1
    status = solver.Solve(built.model)
    work.spend(solver, status, allowed)
    return status


def conflicting_rules(ruleset: RuleSet, domains: Domains, time_limit_s: float = 10.0,
                      work: float | None = None) -> Conflict:
    """A minimal set of error rules that no value in ``domains`` satisfies together; ``time_limit_s`` bounds every
    solve together (out of time, the set found so far, not proven minimal). ``work``: every solve together within
    this much CP-SAT deterministic time (the same set at any load); the seconds are then the safety net, and a
    set they cut says so (``Conflict.cut_short``): one solve its share of the seconds stopped with work left is
    enough, as is the whole deadline running out."""
    from ..deadline import Deadline

    deadline = Deadline(time_limit_s)
    spent = _Work(work)
    conflict = _conflicting_rules(ruleset, domains, deadline, spent)
    conflict.fixed = ruleset.full_env({k: v[0] for k, v in domains.items() if len(v) == 1 and v[0] is not None})
    # cut: a solve the clock stopped with work left (its share of the seconds, before the whole deadline ran out:
    # the set then depends on the machine's speed, minimal or not), or the deadline out before a minimal set
    conflict.cut_short = work is not None and not conflict.each_alone and (spent.clock or (deadline.expired() and not (
        conflict.status == "infeasible" and conflict.proven_minimal)))
    return conflict


def _sufficient(built, errors: list[Rule], time_limit_s: float, work: _Work) -> tuple[int, list[Rule] | None]:
    """(status, the error rules CP-SAT's assumption core names; None when it did not finish)."""
    lits = [built.rule_lits[r.id] for r in errors]
    built.model.AddAssumptions(lits)
    allowed = work.left(CORE_SHARE)
    solver = new_solver(time_limit_s, allowed)
    solver.parameters.num_workers = 1  # assumption cores need a single worker
    solver.parameters.cp_model_presolve = False  # see the module's docstring
    solver.parameters.linearization_level = 0
    status = solver.Solve(built.model)
    work.spend(solver, status, allowed)
    if status != cp_model.INFEASIBLE:
        return status, None
    core = {lit.Index() for lit in lits} & set(solver.SufficientAssumptionsForInfeasibility())
    return status, [r for r in errors if built.rule_lits[r.id].Index() in core]


def _conflicting_rules(ruleset: RuleSet, domains: Domains, deadline, work: _Work) -> Conflict:
    built = build_model(ruleset, domains, enforce=False)
    errors = [r for r in built.rules if r.severity is Severity.ERROR]
    broken = [r for r in errors if built.rule_lits[r.id] is False]
    if broken:  # fixed values alone break these rules: each is a conflict of one
        return Conflict(broken, "infeasible", True, each_alone=True)
    errors = [r for r in errors if built.rule_lits[r.id] is not True]
    status, core = _sufficient(built, errors, deadline.share(CORE_SHARE), work)
    if core is None and status != cp_model.UNKNOWN:
        return Conflict([], STATUS_TEXT.get(status, str(status)), False)  # the rules can hold together
    fallback = core is None
    if fallback:  # out of its share: every error rule, if they are proven not to hold together
        core = errors
        status = _solve_with(ruleset, domains, [r.id for r in core], deadline.share(CORE_SHARE), work, CORE_SHARE)
        if status != cp_model.INFEASIBLE:
            return Conflict([], STATUS_TEXT.get(status, str(status)), False)
    if not core:  # the domains alone are empty after propagation
        return Conflict([], "infeasible", True)
    keep = [r.id for r in core]
    minimal = True
    for i, rid in enumerate(list(keep)):
        if deadline.expired() or work.left() == 0.0:  # the rest stay in: a conflict still, perhaps not a minimal one
            minimal = False
            break
        trial = [k for k in keep if k != rid]
        st = _solve_with(ruleset, domains, trial, deadline.left() / (len(core) - i), work, 1 / (len(core) - i))
        if st == cp_model.INFEASIBLE:
            keep = trial
        elif st != cp_model.OPTIMAL and st != cp_model.FEASIBLE:
            minimal = False
    if fallback and not minimal:  # most of every error rule: no isolation to speak of (the caller says so)
        return Conflict([], "unknown", False)
    return Conflict([ruleset.rule(k) for k in keep], "infeasible", minimal)

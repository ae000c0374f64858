"""``fix``'s search for the nearest repair: every one- and two-key move evaluated directly, then CP-SAT for a
larger one, and the cost that orders them (``solver/costs.py``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Mapping, Sequence

from ..frameworks import Framework
from ..rules.base import Rule, RuleKind, Value
from ..rules.ids import is_memory_rule_id
from .fix_report import Attempt

if TYPE_CHECKING:
    from .headroom_values import RegularValues
    from ..costmodel.tables import CostSpec, CostTerms
    from ..deadline import Deadline
    from ..frameworks.repair_policies import RepairPolicy
    from ..rules.base import RuleSet
    from ..solver.nearest import NearestResult
    from ..solver.repair import RepairResult

# CP-SAT deterministic time for a search that only tries to beat a repair in hand (the descent's, or the direct
# search's when its waste costs a key or more): at the default --time-limit (10 s) that search had about half a
# second, 0.45 units (verl's GRPO example with a micro batch of 48 on H100, tests/test_fix_load.py), and needed 0.94
# units (three lazy rounds) to end; a padded answer's search had five times the share of seconds, so five times the work
BEAT_WORK = 1.0
BEAT_WORK_PADDED = 5.0


def repair_once(fw: Framework, policy: RepairPolicy, values: Mapping[str, Value], *, kept: set[str],
                spec: CostSpec | None, deadline: Deadline, free: Mapping[str, list] | None = None,
                excluded: Sequence[Rule] = (), regular: RegularValues | None = None, floor_rows: int | None = None,
                exact_work: float | None = None) -> Attempt:
    """One nearest repair (``Attempt``).

    First every one- and two-key move is evaluated directly (checker and memory model, no
    solver model to build: ``solver/nearest.py``); only when none is valid does CP-SAT look for
    a larger repair, told that fewer than three changes cannot work. ``deadline`` bounds both.
    ``excluded``: search rules added to the framework's (the host-RAM exclusions, ``host_repair``).
    ``regular``: the batch sizes' candidates cut to the values an engineer would pick (the headroom step,
    ``headroom_values.py``); the nearest repair is then the nearest among those.
    ``floor_rows``: the scan for a phase that fits nowhere prices at most this many memory rows (``tables.Rows``,
    the same at any load), with ``deadline`` as its safety net (None: a quarter of ``deadline``'s seconds, no row
    bound); ``exact_work``: the CP-SAT search for a larger repair with no greedy answer to beat is bounded by this
    much deterministic time (None: exhaustive, ``deadline`` alone). A search either bound stops is not "cut short":
    it stops at the same place on any machine; only the clock's cut is said (``RepairResult.cut_short``).
    """
    from ..deadline import Deadline
    from ..frameworks.repair_policies import direct_search_domains, references, repair_domains
    from ..solver.nearest import nearest_small_repair

    total, seq_len = fw.hardware(values)
    domains = repair_domains(fw.ruleset, policy, dict(values), keep=kept, memory=spec is not None, total_gpus=total,
                             seq_len=seq_len)
    domains.update(free or {})
    if regular is not None:
        domains = regular.filtered(domains, values)
    rules = fw.ruleset.extended(list(excluded), []) if excluded else fw.ruleset
    ruleset, capacity = rules, {}
    if spec is not None:
        from ..costmodel.tables import build_cost_terms

        # tables are filled lazily: only rows asked for
        terms = build_cost_terms(spec, domains, time=False, label=fw.value_words)
        ruleset = ruleset.extended(terms.rules, terms.derived)
        capacity = terms.phase_capacity_mib
    cut: list[str] = []  # the steps the clock stopped (RepairResult.cut_short)
    kept_batch = None  # the batch-holding descent's repair (``_batch_held_descent``)
    refs = references(policy, dict(values))
    if spec is not None and any(is_memory_rule_id(r) for r in ruleset.failing_errors(values)):
        # a phase that fits nowhere in the domains proves at once that there is no repair (a config that fits is
        # itself in the domains: nothing to scan for)
        from ..costmodel.tables import Rows, memory_floors
        from ..solver.repair import RepairResult

        started = time.monotonic()
        # each phase against its own line; where a searched switch moves it (CostTerms.arm_lines), each arm against
        # that arm's: the same floor recommend quotes (recommend.memory_floor)
        scan = Deadline(deadline.share(0.25)) if floor_rows is None else deadline
        floors = memory_floors(terms, domains, fw.ruleset.framework, deadline=scan, stop=True,
                               grows=policy.least_at_smallest(terms.phases),
                               rows=None if floor_rows is None else Rows(floor_rows))
        over = {rule: pair for rule, pair in floors.items() if pair[0] > pair[1]}
        if over:
            return Attempt(RepairResult(None, [], None, "infeasible", time.monotonic() - started, method="floor",
                                        memory_floor=over), ruleset, domains, capacity)
        if scan.expired():  # a phase the clock left unscanned may fit nowhere: the search below cannot prove that
            cut.append("the least memory of each phase")
        # the greedy descent with the algorithm's batch held, before the direct search: it is bounded by the
        # candidates it prices (the same at any load) and cheap, so no budget is too short for it. Run after the
        # direct and CP-SAT searches, a 1 s budget left it no time and a repair that fits by starving the batch (verl's
        # 384 prompts a step made 3, seven doublings: seven keys' cost) stood where three keys keep it
        kept_batch = _batch_held_descent(ruleset, domains, values, policy, refs, terms, deadline)
    # every integer of a wide range: with memory each candidate is screened by the rules first, so only the moves
    # that obey every rule price the phases; a repair of one or two keys is then the nearest over every integer,
    # a larger one (CP-SAT) the nearest among the grid's values (render.py says so)
    wide = direct_search_domains(policy, domains, ruleset)
    if regular is not None:
        wide = regular.filtered(wide, values)
    near = nearest_small_repair(ruleset, domains, values, ranks=policy.ranks, references=refs, deadline=deadline,
                                grows=policy.grows_memory, held=policy.algorithm_batch, wide_domains=wide,
                                rules_only=rules if spec is not None else None)
    from ..solver.repair import RepairResult, repair, repair_result

    if near.cut_short:
        cut.append("the search of one- and two-key moves")
    extra = dict(method="direct", evaluated=near.evaluated, cut_short=cut)
    if near.solution is not None:
        status = "optimal" if near.complete else "feasible"
        found = repair_result(ruleset, values, near.solution, near.cost, status, near.wall_time_s,
                              grid_only=near.grid_only, **extra)
        if near.beatable:  # its waste or its move of the algorithm's batch costs a key or more: a larger repair may
            # cost less: the batch-holding descent's where it costs less, and CP-SAT tries to beat the cheaper of the two
            found = _cheaper_of(found, kept_batch)
            found = _cheaper_with_more_keys(ruleset, domains, values, policy, refs, near, found, deadline)
        if found.cut_short and found.status == "optimal":  # the clock, not the work bound, ended a pass
            found.status = "feasible"
        return Attempt(found, ruleset, domains, capacity)
    if not near.complete or deadline.expired():
        if deadline.expired() and "the search of one- and two-key moves" not in cut:
            cut.append("the search of one- and two-key moves")
        return Attempt(RepairResult(None, [], None, "unknown", near.wall_time_s, partial=near.partial,
                                    partial_broken=near.partial_broken, **extra), ruleset, domains, capacity)
    greedy = descent = None
    if spec is not None and near.partial is not None:
        # memory that needs three keys or more: a greedy descent first (bounded by the candidates it prices, the
        # same at any load; the search's time its safety net), so that the exact search has a solution to beat
        # and the user an answer if it runs out of time
        from ..solver.nearest import descend

        # each candidate against its own arm's line (CostTerms.capacity_of)
        descent = descend(ruleset, domains, values, near.partial, capacity_of=terms.capacity_of,
                          ranks=policy.ranks, references=refs, deadline=deadline, grows=policy.grows_memory,
                          held=policy.algorithm_batch)
        greedy = descent.solution
        if descent.cut_short:
            cut.append("the greedy descent")
    # with the greedy answer in hand, the exact search only tries to beat it: a bounded amount of work, so that the
    # command answers in seconds ("feasible, not proven nearest") rather than spending its whole budget; five times
    # as much when that answer pads beyond the tolerance (its waste costs a key or more: a descent by memory and
    # rules never moves the mini batches that would end it). The work is counted in CP-SAT's deterministic time (the
    # same at any load: the answer printed does not depend on the machine's speed); the search's seconds are only
    # its safety net (a cut said: RepairResult.cut_short)
    padded = greedy is not None and _beyond_keys(ruleset, values, greedy, policy, refs)
    exact = deadline
    work = exact_work if greedy is None else (BEAT_WORK_PADDED if padded else BEAT_WORK)
    res = repair(ruleset, domains, values, ranks=policy.ranks, references=refs, deadline=exact, min_changes=3,
                 hint=greedy or near.partial, grows=policy.grows_memory, held=policy.algorithm_batch,
                 misfit_grows=policy.misfit_grows(ruleset_phases(ruleset)), work=work)
    res.evaluated, res.wall_time_s = near.evaluated, res.wall_time_s + near.wall_time_s
    if _clock_cut(res, exact, work):
        cut.append("the exact search (CP-SAT)")
    if not near.wide_complete:  # a two-key repair off the grid was not ruled out in time: nothing is proven
        res.status = {"optimal": "feasible", "infeasible": "unknown"}.get(res.status, res.status)
    if greedy is not None:
        greedy_cost = cost_of(ruleset, values, greedy, policy, refs)
        if res.solution is None or (res.status != "optimal" and greedy_cost < (res.objective or 0)):
            res = repair_result(ruleset, values, greedy, greedy_cost, "feasible", res.wall_time_s, method="greedy",
                                evaluated=near.evaluated)
    if res.solution is None:
        res.partial, res.partial_broken = near.partial, near.partial_broken
        if descent is not None and descent.here != dict(values):  # where the descent stopped: nearer a fit
            res.partial, res.partial_broken = descent.here, descent.broken
    if cut and res.status == "optimal":
        res.status = "feasible"
    elif cut and res.status == "infeasible":
        res.status = "unknown"
    res.cut_short = cut
    return Attempt(res, ruleset, domains, capacity)


def _batch_held_descent(ruleset: RuleSet, domains: Mapping[str, list[Value]], values: Mapping[str, Value],
                        policy: RepairPolicy, refs: Mapping[str, int], terms: CostTerms,
                        deadline: Deadline) -> RepairResult | None:
    """The greedy descent's repair with the algorithm's batch held (None: it found none). A one- or two-key repair
    that fits by starving the batch (verl's 384 prompts a step made 3, seven doublings: seven keys' cost) stood
    whenever the exact search for a cheaper repair of more keys ran out of time, though micro batches, token budgets
    and layouts alone fit in three keys; the descent (as the memory path below runs it) finds such a repair in a
    bounded number of priced candidates."""
    from ..solver.nearest import descend
    from ..solver.repair import repair_result

    held = {k: [values[k]] for k in policy.algorithm_batch if k in domains and values.get(k) is not None}
    started = time.monotonic()
    descent = descend(ruleset, {**domains, **held}, values, dict(values), capacity_of=terms.capacity_of,
                      ranks=policy.ranks, references=refs, deadline=deadline, grows=policy.grows_memory,
                      held=policy.algorithm_batch)
    if descent.solution is None:
        return None
    cost = cost_of(ruleset, values, descent.solution, policy, refs)
    kept = repair_result(ruleset, values, descent.solution, cost, "feasible", time.monotonic() - started,
                         method="greedy")
    kept.cut_short = ["the greedy descent"] if descent.cut_short else []
    return kept


def _cheaper_of(found: RepairResult, kept: RepairResult | None) -> RepairResult:
    """``found`` (the direct search's), or the batch-holding descent's repair (``_batch_held_descent``) where that
    one costs less: never proven nearest by itself (``_cheaper_with_more_keys`` may prove it)."""
    if kept is None or found.objective is None or kept.objective is None or kept.objective >= found.objective:
        return found
    from dataclasses import replace

    return replace(kept, wall_time_s=found.wall_time_s, evaluated=found.evaluated,
                   cut_short=found.cut_short + kept.cut_short)


def _clock_cut(res: RepairResult, deadline: Deadline, work: float | None) -> bool:
    """The clock, not the work bound, ended ``repair``'s search short of a proof."""
    return (res.status not in ("optimal", "infeasible") and deadline.expired()
            and (work is None or res.work_spent < work))


def ruleset_phases(ruleset: RuleSet) -> list[str]:
    """The phases whose memory rules ``ruleset`` holds."""
    return [r.stage for r in ruleset.rules if r.kind is RuleKind.MEMORY]


def cost_of(ruleset: RuleSet, values: Mapping[str, Value], candidate: Mapping[str, Value], policy: RepairPolicy,
            refs: Mapping[str, int]) -> int:
    from ..solver.costs import candidate_cost

    return candidate_cost(ruleset, values, candidate, policy.ranks, refs, policy.grows_memory, policy.algorithm_batch)


def _beyond_keys(ruleset: RuleSet, values: Mapping[str, Value], candidate: Mapping[str, Value], policy: RepairPolicy,
                 refs: Mapping[str, int]) -> bool:
    """``candidate`` costs a changed key or more beyond its own keys (waste beyond the tolerance, a far move of
    the algorithm's batch): a repair of more keys may be nearer."""
    from ..solver.costs import CHANGE_WEIGHT
    from ..solver.repair import changes_between

    keys = len(changes_between(values, candidate))
    return cost_of(ruleset, values, candidate, policy, refs) > CHANGE_WEIGHT * (keys + 1)


def _cheaper_with_more_keys(ruleset: RuleSet, domains: Mapping[str, list[Value]], values: Mapping[str, Value],
                            policy: RepairPolicy, refs: Mapping[str, int], near: NearestResult, found: RepairResult,
                            deadline: Deadline) -> RepairResult:
    """The repair in hand (``found``: the direct search's, or the batch-holding descent's where that costs less), or a
    repair of more keys that costs less (``solver/costs.py``: a one-key repair that pads most of the step loses to a
    clean one of three keys). CP-SAT looks for one, told how few keys cannot work and what it must beat; "proven
    nearest" only when the direct search was complete (no repair of its few keys costs less than its own, so none
    less than ``found``'s) and CP-SAT proves no larger one costs less than ``found``."""
    from ..deadline import Deadline
    from ..solver.repair import repair

    cost = found.objective if found.objective is not None else near.cost
    beat = Deadline(deadline.share(0.5))
    res = repair(ruleset, domains, values, ranks=policy.ranks, references=refs,
                 deadline=beat, min_changes=near.max_keys + 1, hint=found.solution or near.solution,
                 grows=policy.grows_memory, held=policy.algorithm_batch, below=cost,
                 misfit_grows=policy.misfit_grows(ruleset_phases(ruleset)), work=BEAT_WORK_PADDED)
    clock = _clock_cut(res, beat, BEAT_WORK_PADDED)
    cut = found.cut_short + (["the search for a cheaper repair of more keys (CP-SAT)"] if clock else [])
    if res.solution is not None:
        res.method, res.evaluated = "cp-sat", near.evaluated
        res.wall_time_s += found.wall_time_s
        res.status = res.status if near.complete else "feasible"
        res.cut_short = cut
        return res
    if res.status != "infeasible":  # not ruled out in time: the repair in hand, not proven nearest
        found.status = "feasible"
    elif near.complete and cost <= near.cost:  # every repair of few keys costs near.cost or more, of more keys cost or more
        found.status = "optimal"
    found.wall_time_s += res.wall_time_s
    found.cut_short = cut
    return found

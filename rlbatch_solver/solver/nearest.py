"""The nearest repair among one- and two-key moves, found by evaluating them directly.

Most broken configs people paste are one or two keys away from a valid one (a
micro batch that does not divide, a mini batch too large for the GPUs). Those
moves are few enough to evaluate with the checker itself (rules and memory, no
solver model to build), and the search is exhaustive, so what it returns is
proven:

* a valid config must change, for every rule the config breaks, at least one
  variable that rule reads (a rule reading none of the changed variables
  evaluates as before);
* so a one-key repair changes a variable read by every broken rule, and in a
  two-key repair ``{a, b}`` the second key is read by every rule still broken
  after the first move (``a`` is the key listed first in the domains);
* ``repair.total_cost`` puts the number of changed keys first (waste beyond the tolerance, and far moves of the
  algorithm's batch, counted as keys: ``solver/costs.py``), so once every one- and two-key move has been
  evaluated (or bounded by the cheapest found) the best is the nearest among them; a repair found costing less
  than two keys beats every two-key one, and one costing less than three is the nearest of all (``fix`` asks
  CP-SAT for a larger, cheaper one otherwise: ``NearestResult.beatable``).

Every repair of one or two keys is first searched on ``fix``'s candidate grid, then bettered over wide domains
(``repair_policies.direct_search_domains``: every integer from 1 to 8x each batch size), bounded by the grid's best:
moves are taken cheapest first, pairs in order of their summed cost, so the search stops at the first one that
cannot beat the best. "Proven nearest" for such a repair holds over those wide domains.

The same cost as the CP-SAT repair (``repair.candidate_cost``), so both paths
agree on what "nearest" means; ``tests/test_fix.py`` checks them against each
other and against brute force.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..deadline import Deadline
from ..rules.base import RuleKind, RuleSet, Value
from ..rules.ids import table_phase
from .costs import CHANGE_WEIGHT, MAX_RANK, candidate_cost, change_cost, same_value

# the least any changed key costs (solver/costs.py): a bound on the second key of a pair
CHANGE_FLOOR = CHANGE_WEIGHT

# The wide pass's bound, in work units counted by the search (the same on any machine and at any load, where seconds
# are not: what it finds, and whether it finished, is the same on a busy machine): one candidate checked against the
# rules is one unit, one priced for memory PRICED_WORK (the ratio of their times here: about 45 us and 0.65 ms, the
# renamed verl and Megatron GSM8K scripts of tests/test_fix_renames.py and tests/test_fix_published.py). WIDE_WORK
# bounds a pass that prices memory or has no repair in hand to beat: on a quiet machine a pass spends it in 0.25 to
# 0.7 s (16 to 45 us a unit), about what the pass had in seconds before (a share of the search's, cut at 0.3 to 1.8 s
# in the fix tests), and every fix test holds with it (a cap of 400 candidates broke three). The seconds, all the
# command's search has, stay as the safety net, and a pass they cut says so (``NearestResult.cut_short``). A pass by
# rules alone bounded by a repair in hand is short and has no bound but that safety net: it ends (at most 47,664
# checks, 2.6 s: verl-megatron's GSM8K example, tests/test_fix_frameworks.py)
PRICED_WORK = 15
WIDE_WORK = 15_000
# the greedy descent's bound: candidates priced (each one a memory evaluation); the deepest descent of the fix tests
# priced 1,317 in 0.6 s (Qwen3-235B-A22B's Megatron layout, tests/test_fix_published.py)
GREEDY_PRICED = 2_000


@dataclass
class NearestResult:
    solution: dict[str, Value] | None
    cost: int | None
    keys: int  # changed keys of the solution (0: already valid)
    # every move of at most ``max_keys`` keys was evaluated or bounded: no cheaper repair of that size exists
    complete: bool
    evaluated: int
    wall_time_s: float
    # the candidate breaking the fewest error rules (then the cheapest): what to show when none is valid
    partial: dict[str, Value] | None = None
    partial_broken: list[str] = field(default_factory=list)
    # the wide domains' one- and two-key moves were all evaluated or bounded (True without wide domains)
    wide_complete: bool = True
    max_keys: int = 2  # the most keys a move searched changes
    # proven nearest among the grid's values only (the wide pass did not finish; memory priced)
    grid_only: bool = False
    # the clock (the safety net) stopped a pass before its work bound did
    cut_short: bool = False
    work: int = 0  # work units both passes spent (``WIDE_WORK``: the grid's first, then the wide pass's)

    @property
    def beatable(self) -> bool:
        """A repair of more keys than were searched could cost less than the one found (its waste or its move of
        the algorithm's batch counts as a key or more): it is the nearest only if none does."""
        return self.cost is not None and self.keys >= 1 and self.cost > (self.max_keys + 1) * CHANGE_WEIGHT


class _Evaluator:
    """Failing error rules of a candidate, cached by the changed keys."""

    def __init__(self, ruleset: RuleSet, current: Mapping[str, Value]) -> None:
        self.ruleset = ruleset
        self.current = dict(current)
        self.count = 0
        self._reads: dict[str, frozenset[str]] = {}

    def failing(self, values: Mapping[str, Value]) -> frozenset[str]:
        self.count += 1
        return frozenset(self.ruleset.failing_errors(values))

    def reads(self, rule_id: str) -> frozenset[str]:
        if rule_id not in self._reads:
            from .repair import reads_through

            self._reads[rule_id] = frozenset(reads_through(self.ruleset, self.ruleset.rule(rule_id)))
        return self._reads[rule_id]

    def readers_of_all(self, rule_ids: frozenset[str], names: Sequence[str]) -> list[str]:
        """Variables of ``names`` that every rule of ``rule_ids`` reads."""
        out = list(names)
        for rid in rule_ids:
            reads = self.reads(rid)
            out = [n for n in out if n in reads]
            if not out:
                break
        return out


def _changes(domains: Mapping[str, Sequence[Value]], base: Mapping[str, Value], keys: Sequence[str]):
    """(key, value) for every value of ``keys``' domains that differs from ``base``'s."""
    for n in keys:
        for v in domains[n]:
            if not same_value(base.get(n), v):
                yield n, v


def nearest_small_repair(
    ruleset: RuleSet,
    domains: Mapping[str, Sequence[Value]],
    current: Mapping[str, Value],
    *,
    ranks: Mapping[str, int] | None = None,
    references: Mapping[str, int] | None = None,
    deadline: Deadline | None = None,
    max_keys: int = 2,
    grows: frozenset[str] = frozenset(),
    held: frozenset[str] = frozenset(),
    wide_domains: Mapping[str, Sequence[Value]] | None = None,
    rules_only: RuleSet | None = None,
    wide_work: int = WIDE_WORK,
) -> NearestResult:
    """The cheapest valid config of ``domains`` that differs from ``current`` in at most ``max_keys`` keys.

    With ``wide_domains`` (a superset of ``domains``: every integer a batch key accepts in a range), a repair found
    in ``domains`` is then bettered, if it can be, over the wide domains with its cost as the bound, so the answer
    is the nearest over the wide domains (``complete`` says both searches finished). With none on the grid, the wide
    domains are searched for one within ``wide_work`` units of work; ``complete`` then still says the grid
    holds no repair of at most two keys (what a larger search is told), and ``wide_complete`` whether the wide
    domains were searched to the end (a larger repair is proven nearest only then). ``rules_only`` (``ruleset`` without its memory rules) screens
    the wide domains' candidates: one it rejects is not priced (its memory rules are not evaluated), so bettering
    a repair off the grid prices only the cheaper moves that obey every rule (48 -> 40 for a mini batch of 160 per
    GPU, where the grid of 48 holds 32 and 50 but not 40).

    The wide pass is bounded by ``wide_work`` units of work (``WIDE_WORK``), the same at any load, unless it only
    betters a repair in hand by rules alone (short: bounded by that repair's cost); ``deadline`` is only the safety
    net: a pass it stops is reported (``cut_short``)."""
    start = time.monotonic()
    deadline = deadline or Deadline(10.0)
    search = _Search(ruleset, current, ranks or {}, references or {}, grows, deadline, held)
    if not search.broken0:
        return NearestResult(search.base, search.cost(search.base), 0, True, search.ev.count, time.monotonic() - start)
    best, keys, complete = search.run(domains, max_keys, None)
    wide_complete = complete
    if complete and wide_domains is not None:
        # bounded by the grid's best, the wide pass is short by rules alone; with none, or with memory priced (a
        # two-key repair on a wide range may price many pairs), it may search long: WIDE_WORK units of work
        short = best is not None and rules_only is None
        search.screen = rules_only
        search.limit = None if short else search.work + wide_work
        wide_best, wide_keys, wide_complete = search.run(wide_domains, max_keys, best)
        search.deadline, search.screen, search.limit = deadline, None, None
        on_grid = best is not None and (wide_best is None or wide_best[0] >= best[0])
        if not on_grid and wide_best is not None:
            best, keys = wide_best, wide_keys
        if best is not None:  # found: proven over the wide domains if that pass finished; a grid repair the
            # unfinished pass did not better, with memory priced, still is the nearest among the grid's values
            # (``grid_only`` says so)
            complete = wide_complete or (on_grid and rules_only is not None)
    result = _result(best, keys if best else 0, complete, search.ev, start, search.partial)
    result.wide_complete, result.max_keys = wide_complete, max_keys
    result.cut_short, result.work = search.cut_short, search.work
    result.grid_only = best is not None and complete and not wide_complete
    return result


class _Search:
    """One- and two-key moves from ``current``, cheapest first, each evaluated once and only while it can still
    beat the best repair found (its change cost alone is a lower bound of its full cost)."""

    def __init__(self, ruleset: RuleSet, current: Mapping[str, Value], ranks: Mapping[str, int],
                 references: Mapping[str, int], grows: frozenset[str], deadline: Deadline,
                 held: frozenset[str] = frozenset()) -> None:
        self.ruleset, self.current, self.ranks, self.references, self.grows = ruleset, current, ranks, references, grows
        self.held = held
        self.deadline = deadline
        self.ev = _Evaluator(ruleset, current)
        self.base = dict(current)
        self.broken0 = self.ev.failing(self.base)
        self.partial = (len(self.broken0), 0, self.base, self.broken0)
        self._failing: dict[tuple, frozenset[str]] = {}
        # rules without memory: a candidate they reject is not priced (its broken rules are then only theirs, a
        # subset of its broken rules: a pair's second key is then looked for among more keys, never fewer)
        self.screen: RuleSet | None = None
        # work units spent (``WIDE_WORK``), the bound on them (None: the pass is bounded by the clock alone), and
        # whether the clock stopped a pass
        self.work, self.limit, self.cut_short = 0, None, False
        self.priced = PRICED_WORK if any(r.kind is RuleKind.MEMORY for r in ruleset.rules) else 1

    def cost(self, values: Mapping[str, Value]) -> int:
        return candidate_cost(self.ruleset, self.current, values, self.ranks, self.references, self.grows, self.held)

    def move_cost(self, name: str, value: Value) -> int:
        return change_cost(self.current.get(name), value, self.ranks.get(name, MAX_RANK), self.references.get(name),
                           name in self.grows, name in self.held)

    def failing(self, changes: tuple) -> frozenset[str]:
        """Error rules ``changes`` leaves broken; the candidate breaking the fewest is kept (``partial``)."""
        if changes not in self._failing:
            values = {**self.base, **dict(changes)}
            if self.screen is not None:
                self.work += 1
                screened = frozenset(self.screen.failing_errors(values))
                if screened:
                    return screened  # not cached: a full evaluation later may find more broken rules
            self.work += self.priced
            broken = self._failing[changes] = self.ev.failing(values)
            if broken and len(broken) < self.partial[0]:
                self.partial = (len(broken), 0, values, broken)
        return self._failing[changes]

    def _better(self, changes: tuple, best, keys: int):
        """(best, its keys) after trying ``changes``: they replace the best when valid and cheaper."""
        if self.failing(changes):
            return best, keys
        values = {**self.base, **dict(changes)}
        cost = self.cost(values)
        return ((cost, values), len(changes)) if best is None or cost < best[0] else (best, keys)

    def stopped(self) -> bool:
        """The pass must stop: its work bound is spent, or (the safety net, noted in ``cut_short``) its time."""
        if self.limit is not None and self.work >= self.limit:
            return True
        if self.deadline.expired():
            self.cut_short = True
            return True
        return False

    def run(self, domains: Mapping[str, Sequence[Value]], max_keys: int, best):
        """(best (cost, values) or the ``best`` given, keys of the best, whether every move was evaluated or
        bounded)."""
        names = [n for n, vals in domains.items() if len(vals) > 1]
        by_name = {n: sorted(((self.move_cost(n, v), v) for _, v in _changes(domains, self.current, [n])),
                             key=lambda m: m[0]) for n in names}
        moves = sorted(((c, n, v) for n in names for c, v in by_name[n]), key=lambda m: m[0])
        keys = 1 if best is not None and len(_changed(self.current, best[1])) == 1 else 2
        # one key: only a variable read by every broken rule can repair them alone
        alone = set(self.ev.readers_of_all(self.broken0, names))
        for cost, n, v in moves:
            if best is not None and cost >= best[0]:
                break
            if self.stopped():
                return best, keys, False
            if n in alone:
                best, keys = self._better(((n, v),), best, keys)
        if max_keys < 2 or (best is not None and best[0] <= 2 * CHANGE_FLOOR):
            return best, keys, True  # no pair costs less than two keys
        return self._pairs(names, moves, by_name, best, keys)

    def _pairs(self, names: list[str], moves: list, by_name: dict, best, keys: int):
        """Two keys {a, b}, a before b in ``names``, in order of their summed change cost (a heap), so the search
        stops at the first pair that cannot beat the best. Every rule the config breaks must read a or b (a rule
        reading neither evaluates as before), so a is a key that some later key completes that way; b is read by
        every rule still broken after a's move (a's move may break a rule b mends, or mend one b breaks)."""
        order = {n: i for i, n in enumerate(names)}
        covers = {n: frozenset(r for r in self.broken0 if n in self.ev.reads(r)) for n in names}
        opens = {a for a in names if any(covers[a] | covers[b] == self.broken0 for b in names if order[b] > order[a])}
        helps = [m for m in moves if m[1] in opens]
        # entries: (lower bound, tie, a's index in ``helps``, b's name or "" for "open a", b's next value index)
        heap: list[tuple[int, int, int, str, int]] = []
        tie = 0
        if helps:
            heap.append((helps[0][0] + CHANGE_FLOOR, tie, 0, "", 0))
        while heap:
            bound, _, i, b, k = heapq.heappop(heap)
            if best is not None and bound >= best[0]:
                break  # every pair left costs more than the best
            if self.stopped():
                return best, keys, False
            cost_a, a, x = helps[i]
            tie += 1
            if not b:  # open a: its move's broken rules say which b can finish the repair; then the next a
                later = [n for n in names if order[n] > order[a]]
                for n in self.ev.readers_of_all(self.failing(((a, x),)), later):
                    heapq.heappush(heap, (cost_a + by_name[n][0][0], tie, i, n, 0))
                if i + 1 < len(helps):
                    heapq.heappush(heap, (helps[i + 1][0] + CHANGE_FLOOR, tie, i + 1, "", 0))
                continue
            best, keys = self._better(((a, x), (b, by_name[b][k][1])), best, keys)
            if k + 1 < len(by_name[b]):
                heapq.heappush(heap, (cost_a + by_name[b][k + 1][0], tie, i, b, k + 1))
        return best, keys, True


def _changed(current: Mapping[str, Value], values: Mapping[str, Value]) -> list[str]:
    return [n for n, v in values.items() if not same_value(current.get(n), v)]


def _result(best, keys: int, complete: bool, ev: _Evaluator, start: float, partial) -> NearestResult:
    return NearestResult(
        solution=best[1] if best else None,
        cost=best[0] if best else None,
        keys=keys,
        complete=complete,
        evaluated=ev.count,
        wall_time_s=time.monotonic() - start,
        partial=None if best else partial[2],
        partial_broken=[] if best else sorted(partial[3]),
    )


@dataclass
class Descent:
    """The greedy descent's outcome: the valid config it reached (None when it stopped short), where it stopped
    (``here``, the rules other than memory it still breaks), candidates priced, and why it stopped short: its work
    bound spent (``GREEDY_PRICED``, the same at any load) or the clock (the safety net, ``cut_short``)."""

    solution: dict[str, Value] | None
    here: dict[str, Value]
    broken: list[str]
    priced: int
    exhausted: bool = False
    cut_short: bool = False


def greedy_repair(*args, **kwargs) -> dict[str, Value] | None:
    """``descend``'s valid config, or None when it stopped short."""
    return descend(*args, **kwargs).solution


def descend(
    ruleset: RuleSet,
    domains: Mapping[str, Sequence[Value]],
    current: Mapping[str, Value],
    start: Mapping[str, Value],
    *,
    capacity_of: Callable[[str, Mapping[str, Value]], int],
    ranks: Mapping[str, int] | None = None,
    references: Mapping[str, int] | None = None,
    deadline: Deadline | None = None,
    grows: frozenset[str] = frozenset(),
    held: frozenset[str] = frozenset(),
    work: int = GREEDY_PRICED,
) -> Descent:
    """A valid config reached from ``start`` by moves of one key (or two, when the first breaks a rule the
    second mends: tied layouts such as verl's reference and actor Megatron sizes), each lowering (broken
    rules other than memory, MiB over the GPU summed over phases); ``None`` when the descent stops short.

    Not proven nearest: it gives the exact search a solution to beat (and the user an answer) when a fit
    needs three or more keys, as a large MoE model's layout and offload switches do, where one- and
    two-key repairs do not exist and the exact search can spend its budget on configs that obey every
    rule and do not fit. Among the moves that lower the score most, the cheapest by ``candidate_cost``.
    ``capacity_of``: the MiB a phase's peak must stay under for a candidate (``CostTerms.capacity_of``: its own
    arm's line where a searched switch moves it). ``work``: the most candidates it prices (each scored against
    memory), the same at any load; ``deadline`` is only the safety net (``Descent.cut_short`` says it stopped it).
    """
    ranks = ranks or {}
    references = references or {}
    deadline = deadline or Deadline(5.0)
    ev = _Evaluator(ruleset, current)
    names = [n for n, vals in domains.items() if len(vals) > 1]
    mem_names = [d.name for d in ruleset.derived if d.name.startswith("mem_")]
    memory_rules = {r.id for r in ruleset.rules if r.kind is RuleKind.MEMORY}

    def score(values: Mapping[str, Value]) -> tuple[tuple[int, int], frozenset[str]]:
        failing = ev.failing(values)
        if not failing:
            return (0, 0), failing
        other = failing - memory_rules
        env = ruleset.full_env(values) if failing & memory_rules else {}
        over = sum(max(0, int(env.get(m) or 0) - capacity_of(table_phase(m), values)) for m in mem_names)
        return (len(other), over), other

    def cost(values: Mapping[str, Value]) -> int:
        return candidate_cost(ruleset, current, values, ranks, references, grows, held)

    here = dict(start)
    best, broken_here = score(here)
    cut = [False, False]  # the work bound, the clock

    def stop() -> bool:
        if ev.count >= work:
            cut[0] = True
        elif deadline.expired():
            cut[1] = True
        return cut[0] or cut[1]

    def stopped_short() -> Descent:
        return Descent(None, here, sorted(ev.failing(here)), ev.count, *cut)

    while best != (0, 0):
        step: tuple[tuple[int, int], int, dict[str, Value]] | None = None
        to_mend: list[tuple[tuple[int, int], dict[str, Value], frozenset[str]]] = []

        def offer(values: dict[str, Value]) -> None:
            """Keep ``values`` as the step when it lowers the score most (then costs least)."""
            nonlocal step
            s, other = score(values)
            if s < best:
                c = cost(values)
                if step is None or (s, c) < (step[0], step[1]):
                    step = (s, c, values)
            elif other - broken_here and (s[1] < best[1] or broken_here - other):
                # lowers memory, or mends a broken rule, but breaks another: a second key may mend that one
                # (verl: the actor's expert TP mends the GPU count's divisibility and breaks the equal ref layout)
                to_mend.append((s, values, other - broken_here))

        for n, v in _changes(domains, here, names):
            if stop():
                return stopped_short()
            offer({**here, n: v})
        if step is None:  # a move that lowers memory or mends a rule but breaks another: mend that with a second key
            for _, values, new in sorted(to_mend, key=lambda x: (len(x[2]), x[0][1])):
                for b, v in _changes(domains, values, ev.readers_of_all(new, names)):
                    if stop():
                        return stopped_short()
                    offer({**values, b: v})
                if step is not None:
                    break
        if step is None:
            return Descent(None, here, sorted(ev.failing(here)), ev.count)
        here = step[2]
        best, broken_here = score(here)
    # the descent takes the steepest step (micro batch 8 -> 1 lowers memory most), often further than a fit needs:
    # each changed key is moved back toward the pasted value while the config stays valid and costs less
    while not stop():
        now = cost(here)
        back = [(cost(v), v) for n in names if not same_value(here.get(n), current.get(n))
                for v in ({**here, n: x} for _, x in _changes(domains, here, [n]))]
        back = sorted(((c, v) for c, v in back if c < now), key=lambda cv: cv[0])
        here_next = next((v for _, v in back if not ev.failing(v)), None)
        if here_next is None:
            break
        here = here_next
    # cut while moving back, ``here`` is valid but perhaps further than the descent would have ended: said so
    return Descent(here, here, [], ev.count, *cut)

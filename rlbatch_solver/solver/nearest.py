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
* ``repair.total_cost`` puts the number of changed keys first, so the cheapest
  one-key repair beats every two-key one, and once every one- and two-key move
  has been evaluated (or bounded by the cheapest found) the best is the
  nearest within the domains.

The same cost as the CP-SAT repair (``repair.candidate_cost``), so both paths
agree on what "nearest" means; ``tests/test_fix.py`` checks them against each
other and against brute force.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..deadline import Deadline
from ..rules.base import RuleKind, RuleSet, Value
from ..rules.ids import table_phase
from .costs import MAX_RANK, candidate_cost, change_cost, same_value


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
) -> NearestResult:
    """The cheapest valid config of ``domains`` that differs from ``current`` in at most ``max_keys`` keys."""
    start = time.monotonic()
    ranks = ranks or {}
    references = references or {}
    deadline = deadline or Deadline(10.0)
    ev = _Evaluator(ruleset, current)
    base = dict(current)
    broken0 = ev.failing(base)
    if not broken0:
        return NearestResult(base, candidate_cost(ruleset, current, base, ranks, references, grows), 0, True, ev.count,
                             time.monotonic() - start)
    names = [n for n, vals in domains.items() if len(vals) > 1]
    order = {n: i for i, n in enumerate(names)}
    # (change cost, name, value), cheapest first
    moves = sorted(((change_cost(current.get(n), v, ranks.get(n, MAX_RANK), references.get(n), n in grows), n, v)
                    for n, v in _changes(domains, current, names)), key=lambda m: m[0])
    cheapest_move = {n: min((c for c, m, _ in moves if m == n), default=0) for n in names}

    best: tuple[int, dict[str, Value]] | None = None
    partial = (len(broken0), 0, base, broken0)

    def consider(values: dict[str, Value], broken: frozenset[str]) -> None:
        nonlocal best, partial
        if broken:
            if len(broken) < partial[0]:
                partial = (len(broken), 0, values, broken)
            return
        cost = candidate_cost(ruleset, current, values, ranks, references, grows)
        if best is None or cost < best[0]:
            best = (cost, values)

    # one key: only variables read by every broken rule can repair it alone
    after_one: list[tuple[int, str, Value, frozenset[str]]] = []
    complete = True
    for cost, n, v in moves:
        if deadline.expired():
            complete = False
            break
        values = {**base, n: v}
        broken = ev.failing(values)
        consider(values, broken)
        after_one.append((cost, n, v, broken))
    if best is not None and complete:
        return _result(best, 1, True, ev, start, partial)
    if max_keys < 2 or not complete:
        return _result(best, 1 if best else 0, False if best is None else complete, ev, start, partial)

    # two keys {a, b}, a before b in ``names``: b is read by every rule still broken after a's move
    for cost_a, a, x, broken_a in after_one:
        if best is not None and cost_a + min((cheapest_move[b] for b in names if order[b] > order[a]), default=0) >= best[0]:
            continue  # waste only adds: no pair starting here can beat the best
        if deadline.expired():
            complete = False
            break
        later = [b for b in names if order[b] > order[a]]
        for b in ev.readers_of_all(broken_a, later):
            for _, v in _changes(domains, current, [b]):
                cost_b = change_cost(current.get(b), v, ranks.get(b, MAX_RANK), references.get(b), b in grows)
                if best is not None and cost_a + cost_b >= best[0]:
                    continue
                values = {**base, a: x, b: v}
                consider(values, ev.failing(values))
            if deadline.expired():
                complete = False
                break
        if not complete:
            break
    return _result(best, 2 if best else 0, complete, ev, start, partial)


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


def greedy_repair(
    ruleset: RuleSet,
    domains: Mapping[str, Sequence[Value]],
    current: Mapping[str, Value],
    start: Mapping[str, Value],
    *,
    capacity_mib: Mapping[str, int],
    ranks: Mapping[str, int] | None = None,
    references: Mapping[str, int] | None = None,
    deadline: Deadline | None = None,
    grows: frozenset[str] = frozenset(),
) -> dict[str, Value] | None:
    """A valid config reached from ``start`` by moves of one key (or two, when the first breaks a rule the
    second mends: tied layouts such as verl's reference and actor Megatron sizes), each lowering (broken
    rules other than memory, MiB over the GPU summed over phases); ``None`` when the descent stops short.

    Not proven nearest: it gives the exact search a solution to beat (and the user an answer) when a fit
    needs three or more keys, as a large MoE model's layout and offload switches do, where one- and
    two-key repairs do not exist and the exact search can spend its budget on configs that obey every
    rule and do not fit. Among the moves that lower the score most, the cheapest by ``candidate_cost``.
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
        over = sum(max(0, int(env.get(m) or 0) - capacity_mib[table_phase(m)]) for m in mem_names)
        return (len(other), over), other

    def cost(values: Mapping[str, Value]) -> int:
        return candidate_cost(ruleset, current, values, ranks, references, grows)

    here = dict(start)
    best, broken_here = score(here)
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
            if deadline.expired():
                return None
            offer({**here, n: v})
        if step is None:  # a move that lowers memory or mends a rule but breaks another: mend that with a second key
            for _, values, new in sorted(to_mend, key=lambda x: (len(x[2]), x[0][1])):
                for b, v in _changes(domains, values, ev.readers_of_all(new, names)):
                    if deadline.expired():
                        return None
                    offer({**values, b: v})
                if step is not None:
                    break
        if step is None:
            return None
        here = step[2]
        best, broken_here = score(here)
    return here

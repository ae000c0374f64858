"""What a repair costs: the one definition both repair searches use.

A repair's cost, in this order of importance:

1. how many variables change (``CHANGE_WEIGHT`` each);
2. the waste the repaired config makes the framework carry: samples it pads or
   drops, in permille of the step (``waste_permille``, a derived quantity of the
   framework's rules, e.g. verl's padding to whole mini batches). Any waste costs
   ``WASTE_BASE`` plus one doubling per percent, so between two repairs of the
   same size the one that makes the framework pad loses to one that moves a value
   further (the seed's FAQ config is mended by its micro batch, not by a mini batch
   that pads every step);
3. how far each variable moves, ``|log2(new / old)|`` in hundredths (64 -> 66 is
   cheaper than 64 -> 32); raising a value that memory grows with (a micro batch,
   a token budget: the policy's ``grows_memory``) costs half a doubling more than
   lowering it, as the seeds' out-of-memory advice lowers them first; switching a
   flag counts as two doublings, setting or unsetting a key as one;
4. the framework's order of what to try first (``rank``, smaller first), so
   that among equally small changes the seeds' advice wins.

No OR-Tools here: the direct search (``solver/nearest.py``) runs without it.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..rules.base import RuleSet, Value

CHANGE_WEIGHT = 1_000_000  # one more changed key always costs more than any distance and waste
DISTANCE_SCALE = 100  # hundredths of a doubling
MAX_DISTANCE = 2_000  # 20 doublings: caps the distance term below CHANGE_WEIGHT / (keys * 10)
RANK_WEIGHT = 1  # ranks are 0..9; distances are multiplied by 10 to leave room for them
MAX_RANK = 9
DOUBLING = 10 * DISTANCE_SCALE  # one doubling of one value, in cost units
WASTE_NAME = "waste_permille"  # the derived quantity a framework's rules may define
WASTE_BASE = 3 * DOUBLING  # any padding or dropped samples: three doublings ...
WASTE_PER_PERMILLE = DOUBLING // 10  # ... plus one doubling per percent of the step wasted
UPWARD_EXTRA = DISTANCE_SCALE // 2  # raising a memory-bearing value: half a doubling more than lowering it


def _distance(a: int, b: int) -> int:
    if a <= 0 or b <= 0:
        return DISTANCE_SCALE * 4
    return min(MAX_DISTANCE, round(DISTANCE_SCALE * abs(math.log2(b / a))))


def same_value(old: Value, new: Value) -> bool:
    """Equal values of the same kind (``True`` is not the integer 1 here)."""
    if old is None or new is None:
        return old is None and new is None
    return old == new and isinstance(old, bool) == isinstance(new, bool)


def change_cost(old: Value, new: Value, rank: int = 0, reference: int | None = None, grows: bool = False) -> int:
    """Cost of moving one variable from ``old`` to ``new`` (0 when unchanged).

    Setting a key that was unset costs one doubling plus the distance from
    ``reference`` (a related value the user did set, e.g. the actor's micro
    batch for the critic's), so the new value resembles the user's others.
    """
    if same_value(old, new):
        return 0
    rank = min(max(rank, 0), MAX_RANK)
    if isinstance(old, bool) or isinstance(new, bool):
        distance = 2 * DISTANCE_SCALE  # switching a feature changes behaviour: two doublings
    elif new is None:
        distance = DISTANCE_SCALE  # unsetting a key: one doubling
    elif old is None:
        distance = DISTANCE_SCALE + (_distance(int(reference), int(new)) if reference else 0)
    else:
        distance = _distance(int(old), int(new)) + (UPWARD_EXTRA if grows and int(new) > int(old) else 0)
    return CHANGE_WEIGHT + 10 * distance + RANK_WEIGHT * rank


def waste_cost(permille: int) -> int:
    """Cost of a repaired config that makes the framework pad or drop ``permille`` of its samples."""
    permille = max(0, int(permille))
    return 0 if permille == 0 else WASTE_BASE + WASTE_PER_PERMILLE * permille


def total_cost(current: Mapping[str, Value], candidate: Mapping[str, Value], ranks: Mapping[str, int],
               references: Mapping[str, int] | None = None, grows: frozenset[str] = frozenset()) -> int:
    """Change cost of ``candidate`` (no waste term): sum of ``change_cost`` over its variables."""
    references = references or {}
    return sum(change_cost(current.get(n), candidate[n], ranks.get(n, MAX_RANK), references.get(n), n in grows)
               for n in candidate)


def waste_of(ruleset: RuleSet, values: Mapping[str, Value]) -> int:
    """The framework's ``waste_permille`` for ``values`` (0 when its rules define none)."""
    if not any(d.name == WASTE_NAME for d in ruleset.derived):
        return 0
    return int(ruleset.full_env(values).get(WASTE_NAME, 0))


def candidate_cost(ruleset: RuleSet, current: Mapping[str, Value], candidate: Mapping[str, Value],
                   ranks: Mapping[str, int], references: Mapping[str, int] | None = None,
                   grows: frozenset[str] = frozenset()) -> int:
    """The full repair cost of ``candidate``: changes, distances, ranks and waste."""
    return total_cost(current, candidate, ranks, references, grows) + waste_cost(waste_of(ruleset, candidate))


def reads_through(ruleset: RuleSet, rule) -> set[str]:
    """Base variables a rule reads, through derived quantities."""
    from ..rules.expr import variables

    derived = {d.name: d for d in ruleset.derived}
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

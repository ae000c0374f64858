"""What a repair costs: the one definition both repair searches use.

A repair's cost, in this order of importance:

1. how many variables change (``CHANGE_WEIGHT`` each), counting as changes two things an expert weighs like them:
   the waste the repaired config makes the framework carry beyond ``WASTE_TOLERANCE_PERMILLE`` (samples it pads or
   drops, in permille of the step: ``waste_permille``, a derived quantity of the framework's rules, e.g. verl's
   padding to whole mini batches) costs one change per ``WASTE_PERMILLE_PER_KEY`` (each 10% of the step's samples
   beyond the first 10%), and a move of the algorithm's batch the user set (the policy's ``algorithm_batch``,
   verl's ``data.train_batch_size``) beyond one doubling costs one change per further doubling (1 -> 64: five more).
   So a repair of four keys that pads 76% of the step (its waste 6.7 changes more: 10.7 in all) loses to a clean
   one of six, and a repair that keeps the user's 60 prompts and mends the mini batch beats one that makes them 256. The tolerance is 10%: the
   padded samples go through the log-prob and update phases only (the rollout generates the real prompts alone:
   verl 0.9.1 trainer/ppo/v1/trainer_base.py _step_once pads in _balance_batch after "gen"), so 10% of them is
   less than 10% of the step, by generation's share (61% of the step in verl's ReTool run, docs/async.md); and it
   is above the least padding some layouts cannot avoid without another parallel layout (60 prompts x 5 on 8 GPUs:
   the mini batch is a multiple of 8, the step pads to 64 prompts, 6%). A move of the batch within a doubling
   (64 -> 60, 341 -> 352) is an ordinary change: halving or doubling the batch keeps the experiment;
2. waste within the tolerance costs ``WASTE_BASE`` plus one doubling per percent, so between two repairs of the
   same size the one that makes the framework pad loses to one that moves a value further (the seed's FAQ config
   is mended by its micro batch, not by a mini batch that pads every step);
3. how far each variable moves, ``|log2(new / old)|`` in hundredths (64 -> 66 is
   cheaper than 64 -> 32); raising a value that memory grows with (a micro batch,
   a token budget: the policy's ``grows_memory``) costs half a doubling more than
   lowering it, as the seeds' out-of-memory advice lowers them first; switching a
   flag counts as two doublings, setting or unsetting a key as one;
4. the framework's order of what to try first (``rank``, smaller first), so
   that among equally small changes the seeds' advice wins.

Beside them, each advice warning (a rule of severity WARNING) the repaired config breaks costs ``WARNING_COST``, one
doubling: among repairs of as many keys, one that moves a value a little further and leaves no warning beats one
that leaves, say, OpenRLHF's optimizer steps covering a rollout unevenly (train.batch_size 100 -> 128, a third of
a doubling further than 96, makes 128 x 8 = 1,024 samples a whole number of train batches; 96 does not).
It never outweighs a changed key.

"Proven nearest" is proven for this cost: the fewest changes so counted.
No OR-Tools here: the direct search (``solver/nearest.py``) runs without it.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..rules.base import RuleSet, Severity, Value

CHANGE_WEIGHT = 1_000_000  # one more changed key always costs more than any distance and waste within the tolerance
DISTANCE_SCALE = 100  # hundredths of a doubling
MAX_DISTANCE = 2_000  # 20 doublings: caps the distance term below CHANGE_WEIGHT / (keys * 10)
RANK_WEIGHT = 1  # ranks are 0..9; distances are multiplied by 10 to leave room for them
MAX_RANK = 9
DOUBLING = 10 * DISTANCE_SCALE  # one doubling of one value, in cost units
WASTE_NAME = "waste_permille"  # the derived quantity a framework's rules may define
WASTE_BASE = 3 * DOUBLING  # any padding or dropped samples: three doublings ...
WASTE_PER_PERMILLE = DOUBLING // 10  # ... plus one doubling per percent of the step wasted
UPWARD_EXTRA = DISTANCE_SCALE // 2  # raising a memory-bearing value: half a doubling more than lowering it
WASTE_TOLERANCE_PERMILLE = 100  # waste up to 10% of the step is priced as a distance (item 2 above) ...
WASTE_PERMILLE_PER_KEY = 100  # ... beyond it, each 10% of the step costs as one changed key
WASTE_EXCESS_PER_PERMILLE = CHANGE_WEIGHT // WASTE_PERMILLE_PER_KEY
WARNING_COST = DOUBLING  # each advice warning the repaired config breaks: one doubling of one value
FREE_BATCH_DOUBLINGS = 1  # the algorithm's batch moves this many doublings as an ordinary key; each further one
# costs one more changed key


def _distance(a: int, b: int) -> int:
    if a <= 0 or b <= 0:
        return DISTANCE_SCALE * 4
    return min(MAX_DISTANCE, round(DISTANCE_SCALE * abs(math.log2(b / a))))


def same_value(old: Value, new: Value) -> bool:
    """Equal values of the same kind (``True`` is not the integer 1 here)."""
    if old is None or new is None:
        return old is None and new is None
    return old == new and isinstance(old, bool) == isinstance(new, bool)


def change_cost(old: Value, new: Value, rank: int = 0, reference: int | None = None, grows: bool = False,
                held: bool = False) -> int:
    """Cost of moving one variable from ``old`` to ``new`` (0 when unchanged).

    Setting a key that was unset costs one doubling plus the distance from
    ``reference`` (a related value the user did set, e.g. the actor's micro
    batch for the critic's), so the new value resembles the user's others.
    ``held``: the variable is the algorithm's batch, whose every doubling beyond ``FREE_BATCH_DOUBLINGS`` costs
    one changed key more.
    """
    if same_value(old, new):
        return 0
    rank = min(max(rank, 0), MAX_RANK)
    beyond = 0
    if isinstance(old, bool) or isinstance(new, bool):
        distance = 2 * DISTANCE_SCALE  # switching a feature changes behaviour: two doublings
    elif new is None:
        distance = DISTANCE_SCALE  # unsetting a key: one doubling
    elif old is None:
        distance = DISTANCE_SCALE + (_distance(int(reference), int(new)) if reference else 0)
    else:
        moved = _distance(int(old), int(new))
        distance = moved + (UPWARD_EXTRA if grows and int(new) > int(old) else 0)
        if held:  # the algorithm's batch: each doubling beyond the free ones, a changed key more
            beyond = CHANGE_WEIGHT * max(0, moved - FREE_BATCH_DOUBLINGS * DISTANCE_SCALE) // DISTANCE_SCALE
    return CHANGE_WEIGHT + beyond + 10 * distance + RANK_WEIGHT * rank


def waste_cost(permille: int) -> int:
    """Cost of a repaired config that makes the framework pad or drop ``permille`` of its samples."""
    permille = max(0, int(permille))
    if permille == 0:
        return 0
    return (WASTE_BASE + WASTE_PER_PERMILLE * permille
            + WASTE_EXCESS_PER_PERMILLE * max(0, permille - WASTE_TOLERANCE_PERMILLE))


def total_cost(current: Mapping[str, Value], candidate: Mapping[str, Value], ranks: Mapping[str, int],
               references: Mapping[str, int] | None = None, grows: frozenset[str] = frozenset(),
               held: frozenset[str] = frozenset()) -> int:
    """Change cost of ``candidate`` (no waste term): sum of ``change_cost`` over its variables (``held``: the
    algorithm's batch, ``change_cost``)."""
    references = references or {}
    return sum(change_cost(current.get(n), candidate[n], ranks.get(n, MAX_RANK), references.get(n), n in grows,
                           n in held)
               for n in candidate)


def waste_of(ruleset: RuleSet, values: Mapping[str, Value]) -> int:
    """The framework's ``waste_permille`` for ``values`` (0 when its rules define none)."""
    if not any(d.name == WASTE_NAME for d in ruleset.derived):
        return 0
    return int(ruleset.full_env(values).get(WASTE_NAME, 0))


def candidate_cost(ruleset: RuleSet, current: Mapping[str, Value], candidate: Mapping[str, Value],
                   ranks: Mapping[str, int], references: Mapping[str, int] | None = None,
                   grows: frozenset[str] = frozenset(), held: frozenset[str] = frozenset()) -> int:
    """The full repair cost of ``candidate``: changes, distances, ranks, waste and the advice warnings it breaks."""
    return (total_cost(current, candidate, ranks, references, grows, held) + waste_cost(waste_of(ruleset, candidate))
            + WARNING_COST * len(ruleset.failing(candidate, Severity.WARNING)))


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

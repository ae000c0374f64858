"""The solver-independent reference: every config of a search space, checked and scored in Python.

Tests and benchmarks compare CP-SAT against it (same optimum, gap 0). Variables that a
``search.tie.*`` rule ties to another (verl's yaml interpolations, say) take their leader's value,
so the loop runs over the free variables only.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from ..rules.base import RuleKind, RuleSet, Value
from ..rules.expr import IntExpr, evaluate


def tie_leaders(space: Any) -> dict[str, str]:
    """follower -> leader, read from the space's tie rules (the leader is the other variable)."""
    out = {}
    for r in space.extra_rules:
        if r.kind is RuleKind.SEARCH_TIE:
            name = r.subject
            others = [v for v in r.reads() if v != name and not v.endswith("_set")]
            if len(others) == 1:
                out[name] = others[0]
    return out


def assignments(space: Any) -> Iterator[dict[str, Value]]:
    """Every assignment of the space's free variables, tied ones following their leaders."""
    leaders = tie_leaders(space)
    names = [n for n in space.domains if n not in leaders]
    for combo in itertools.product(*(space.domains[n] for n in names)):
        values = dict(zip(names, combo))
        for name, leader in leaders.items():
            values[name] = values[leader] if leader in values else values[leaders[leader]]
        yield values


def best_by_exhaustion(ruleset: RuleSet, space: Any, objective: IntExpr,
                       maximize: bool = False) -> tuple[int | None, int]:
    """(best objective over the valid configs or None, configs tried)."""
    best, count = None, 0
    for values in assignments(space):
        count += 1
        result = ruleset.check(values)
        if not result.strictly_valid:  # as the CP-SAT model: a tolerated break is still a break
            continue
        score = evaluate(objective, result.env)
        if best is None or (score > best if maximize else score < best):
            best = score
    return best, count

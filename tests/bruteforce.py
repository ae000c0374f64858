"""Shared helper: exhaustive checker-based enumeration of a small space."""

import itertools

from rlbatch_solver.rules.base import RuleSet


def brute_force(ruleset: RuleSet, domains: dict) -> set[tuple]:
    names = list(domains)
    out = set()
    for combo in itertools.product(*(domains[n] for n in names)):
        if ruleset.check(dict(zip(names, combo))).valid:
            out.add(combo)
    return out


def as_tuples(solutions: list[dict], names: list[str]) -> set[tuple]:
    return {tuple(s[n] for n in names) for s in solutions}

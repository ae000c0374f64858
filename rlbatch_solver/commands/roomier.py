"""Slower configs with more memory margin, for recommend's alternatives.

The runners-up of recommend's solve are the next fastest configs; most of them tie the best or need no less memory in
any phase (``alike.fold_alike`` leaves those out), so the table of alternatives is often empty. What a user weighs
against the best is a config a little slower that leaves more room in the phase closest to its limit: each one here
is the fastest config whose peak in that phase is at most ``STEP`` of the last one's (the best's, then the roomier
one's), one solve each, while fewer than ``WANTED`` alternatives are listed and the command's time allows. None of
them is dominated by the best (it needs less memory where the best is tightest)."""

from __future__ import annotations

from typing import Any, Callable

from ..rules.base import Rule, RuleKind, Stage
from ..rules.expr import IntVar

WANTED = 2  # alternatives recommend tries to list
STEP = 0.9  # a roomier config's peak in the tightest phase: at most this share of the last one's
LEAST_S = 0.2  # a solve is not started with less of the command's time left than this
SOLVE_S = 0.4  # the most one solve takes (its best found so far is listed): the alternatives stay cheap


def tightest_phase(choice: Any, capacity_of: Callable[[str], float]) -> str:
    """The phase whose peak comes nearest its usable memory (MiB)."""
    peaks = choice.peak_mib()
    return max(peaks, key=lambda p: peaks[p] / max(1.0, capacity_of(p)))


def cap_rule(phase: str, cap_mib: int) -> Rule:
    return Rule(f"search.roomier.{phase}", IntVar(f"mem_{phase}") <= cap_mib,
                f"{phase} needs {{mem_{phase}:gib}} GiB: more than {cap_mib / 1024:.1f} GiB, the roomier alternative's cap",
                Stage.SEARCH, "rlbatch-solver recommend: alternatives with more memory margin", kind=RuleKind.SEARCH)


def roomier_choices(choices: list[Any], capacity_of: Callable[[str], float], solve_capped: Callable[[Rule], Any],
                    make_choice: Callable[[Any], Any | None], time_left: Callable[[], float]) -> list[Any]:
    """Up to ``WANTED`` minus the alternatives listed, each roomier than the last in the last one's tightest phase.
    ``solve_capped``: the search with one more rule (its ``OptimizeResult``); ``make_choice``: a ranked answer as a
    ``Choice`` (None where it does not fit the node's RAM)."""
    out: list[Any] = []
    last = choices[0]
    while len(choices) - 1 + len(out) < WANTED and time_left() > LEAST_S:
        phase = tightest_phase(last, capacity_of)
        res = solve_capped(cap_rule(phase, int(last.peak_mib()[phase] * STEP)))
        choice = make_choice(res.ranked[0]) if res.ranked else None
        if choice is None:
            break
        out.append(choice)
        last = choice
    return out

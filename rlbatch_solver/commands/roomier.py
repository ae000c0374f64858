"""Slower configs with more memory margin, for recommend's alternatives.

The runners-up of recommend's solve are the next fastest configs; most of them tie the best or need no less memory in
any phase (``alike.fold_alike`` leaves those out), so the table of alternatives is often empty. What a user weighs
against the best is a config a little slower that leaves more room in the phase closest to its limit: each one here
is the fastest config whose peak in that phase is at most ``STEP`` of the last one's (the best's, then the roomier
one's), one solve each, while fewer than ``WANTED`` alternatives are listed and the command's time allows. None of
them is dominated by the best (it needs less memory where the best is tightest).

A capped solve whose answer is faster than the best lists nothing (the headroom preference passed it over): where a
config the command already holds, or one a single change away from it, meets the cap and is faster than the best, that
is what the solve would answer, and it is not run (``passed_over``: benchmarks/bench_recommend.py's 64-GPU Megatron MoE,
whose capped solve took a second of CPU, more than its limit)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

from ..rules.base import Rule, RuleKind, RuleSet, Stage, Value
from ..rules.expr import IntExpr, IntVar, compile_python, evaluate

WANTED = 2  # alternatives recommend tries to list
STEP = 0.9  # a roomier config's peak in the tightest phase: at most this share of the last one's
LEAST_S = 0.2  # a solve is not started with less of the command's time left than this
# the most work one solve takes, in CP-SAT's deterministic time (its best found so far is listed, not proven): the
# alternatives stay cheap, and the same at any load (a limit in seconds, 0.4 s, listed an alternative on a quiet
# machine and none on a busy one: OpenRLHF, Qwen2.5-7B, 8x A100-80GB). Its capped solve took 0.017 (its tie 0.016).
SOLVE_WORK = 0.1


def tightest_phase(choice: Any, capacity_of: Callable[[str, Mapping[str, Value]], float]) -> str:
    """The phase whose peak comes nearest its usable memory (MiB): the choice's own line (``CostTerms.capacity_of``,
    where a searched switch moves it)."""
    peaks = choice.peak_mib()
    return max(peaks, key=lambda p: peaks[p] / max(1.0, capacity_of(p, choice.values)))


def cap_rule(phase: str, cap_mib: int) -> Rule:
    return Rule(f"search.roomier.{phase}", IntVar(f"mem_{phase}") <= cap_mib,
                f"{phase} needs {{mem_{phase}:gib}} GiB: more than {cap_mib / 1024:.1f} GiB, the roomier alternative's cap",
                Stage.SEARCH, "rlbatch-solver recommend: alternatives with more memory margin", kind=RuleKind.SEARCH)


def roomier_choices(choices: list[Any], capacity_of: Callable[[str, Mapping[str, Value]], float],
                    solve_capped: Callable[[Rule], Any],
                    make_choice: Callable[[Any], Any | None], time_left: Callable[[], float],
                    passed_over: Callable[[Rule], bool] = lambda rule: False) -> list[Any]:
    """Up to ``WANTED`` minus the alternatives listed, each roomier than the last in the last one's tightest phase.
    ``solve_capped``: the search with one more rule (its ``OptimizeResult``); ``make_choice``: a ranked answer as a
    ``Choice`` (None where it does not fit the node's RAM or is faster than the best); ``passed_over``: whether a
    config known to meet that rule is faster than the best (the solve's answer would be too: none is listed)."""
    out: list[Any] = []
    last = choices[0]
    while len(choices) - 1 + len(out) < WANTED and time_left() > LEAST_S:
        phase = tightest_phase(last, capacity_of)
        rule = cap_rule(phase, int(last.peak_mib()[phase] * STEP))
        if passed_over(rule):
            break
        res = solve_capped(rule)
        choice = make_choice(res.ranked[0]) if res.ranked else None
        if choice is None:
            break
        out.append(choice)
        last = choice
    return out


def faster_under_cap(rule: Rule, known: Iterable[Mapping[str, Value]], ruleset: RuleSet,
                     domains: Mapping[str, list[Value]], objective: IntExpr, best: int) -> bool:
    """Whether a config meets every rule of ``ruleset`` and ``rule`` with an objective below ``best``, among the
    ``known`` configs and those one value away from one of them (a search tie's follower moved with its leader, as
    the search keeps them): a witness that the capped search's optimum is faster than the best."""
    holds = compile_python(rule.expr)
    ties = [(r.subject, r.reads()) for r in ruleset.rules if r.subject]
    for config in _neighbours(known, domains, ties):
        checked = ruleset.check(config)
        try:
            if checked.strictly_valid and holds(checked.env) and evaluate(objective, checked.env) < best:
                return True
        except KeyError:  # a cost term this config does not reach: not a witness
            continue
    return False


def _neighbours(known: Iterable[Mapping[str, Value]], domains: Mapping[str, list[Value]],
                ties: list[tuple[str, set[str]]]) -> Iterator[dict[str, Value]]:
    """Each known config, then each one value away from it (a tie's follower taking its leader's new value)."""
    for base in known:
        yield dict(base)
        for name, domain in domains.items():
            for value in domain if len(domain) > 1 else ():
                if value == base.get(name):
                    continue
                config = {**base, name: value}
                for follower, reads in ties:
                    if follower != name and name in reads and value in domains.get(follower, ()):
                        config[follower] = value
                yield config

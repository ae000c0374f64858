"""Shared helper: exhaustive checker-based enumeration of a small space."""

import itertools
import math

from rlbatch_solver.rules.base import RuleSet
from rlbatch_solver.solver.model import enumerate_solutions


def brute_force(ruleset: RuleSet, domains: dict) -> set[tuple]:
    names = list(domains)
    out = set()
    for combo in itertools.product(*(domains[n] for n in names)):
        if ruleset.check(dict(zip(names, combo))).valid:
            out.add(combo)
    return out


def as_tuples(solutions: list[dict], names: list[str]) -> set[tuple]:
    return {tuple(s[n] for n in names) for s in solutions}


def assert_enumerate_equals_checker(ruleset: RuleSet, domains: dict, time_limit_s: float = 60) -> None:
    """The solver enumerates exactly the configs the checker accepts over ``domains``: nothing missing,
    nothing extra, nothing twice; and the space exercises both sides (some valid configs, some invalid)."""
    names = list(domains)
    want = brute_force(ruleset, domains)
    res = enumerate_solutions(ruleset, domains, time_limit_s=time_limit_s)
    assert res.complete
    got = as_tuples(res.solutions, names)
    assert len(got) == len(res.solutions), "a config was returned twice"
    assert got == want, (len(got - want), len(want - got))
    raw = math.prod(len(v) for v in domains.values())
    assert 0 < len(want) < raw


def assert_optimum_is_exhaustive(ruleset: RuleSet, space, objective, top: int = 2, time_limit_s: float = 60) -> None:
    """CP-SAT's proven optimum of ``objective`` over the space is the best that exhaustive evaluation finds among
    the configs the checker accepts (gap 0), the space has one that fits, and every config it ranks is valid."""
    from rlbatch_solver.solver.exhaustive import best_by_exhaustion
    from rlbatch_solver.solver.optimize import optimize

    best, _ = best_by_exhaustion(ruleset, space, objective)
    res = optimize(ruleset, space.domains, objective, top=top, time_limit_s=time_limit_s)
    assert best is not None, "the small space has a config that fits"
    assert res.proven and res.ranked[0].objective == best  # gap 0
    for r in res.ranked:
        assert ruleset.check(r.solution).valid


def assert_tables_match_cost_model(space, spec, ruleset, configs: int, seed: int, label: str = "",
                                   terms=None) -> None:
    """On random configs of the space, the solver's per-phase MiB and microseconds per sample are
    those of the full cost model (a table that missed an input would differ); with ``terms``, the solver's
    step objective is the step the reports combine (concurrent phases at their slowest), to the rounding of
    one microsecond per phase."""
    import random

    from rlbatch_solver.costmodel.tables import MIB, full_reports, step_seconds
    from rlbatch_solver.rules.expr import evaluate

    rnd = random.Random(seed)
    names = list(space.domains)
    for _ in range(configs):
        values = {n: rnd.choice(space.domains[n]) for n in names}
        env = ruleset.full_env(values)
        memory, seconds = full_reports(spec, values)
        for phase, report in memory.items():
            assert env[f"mem_{phase}"] == -(-report.peak(phase) // MIB), (label, phase)
        samples = max(1, spec.samples(values))
        for phase, s in seconds.items():
            assert env[f"us_{phase}"] == round(s * 1e6 / samples), (label, phase)
        if terms is not None and terms.time_us_per_sample is not None:
            step = step_seconds(spec, values, seconds) * 1e6 / samples
            assert abs(evaluate(terms.time_us_per_sample, env) - step) <= len(seconds), (label, values)

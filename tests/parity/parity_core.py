"""Differential ("parity") testing: our checker against each framework's own validation code.

A *case* is one config in the framework's native keys. Each framework module
(``parity_verl``, ``parity_swift``, ``parity_openrlhf``) gives

* a seeded generator of cases that sits on the rules' boundaries (divisibility
  edges, sizes of 1, equal sizes, large worlds), not only random noise;
* one or more *oracles*: a stage name, the framework's real validation code run
  on the case (imported from the pinned package at test time, never copied
  here), and the ids of our rules that the same code checks at that stage;
* an allow-list: our rules at that stage that the oracle does not run, each
  with the reason (ours on purpose, or the framework checks it later, in GPU
  code that cannot run here).

A case *agrees* at a stage when the oracle fails exactly when one of the
compared rules fires, and, when it fails, the rule its error message names
(``Oracle.classify``) is among those that fired. Everything else is a
disagreement, printed as a reproducible case (framework, seed, index, the
config, both verdicts).
"""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import rlbatch_solver as rb
from rlbatch_solver.errors import InputError


@dataclass
class Verdict:
    """What the framework's own code said: ``ok`` or the first error it raised."""

    ok: bool
    message: str = ""

    @classmethod
    def run(cls, fn: Callable[[], Any]) -> "Verdict":
        try:
            fn()
        except Exception as exc:  # the framework's own exception types vary (ValueError, AssertionError, ...)
            return cls(False, f"{type(exc).__name__}: {exc}".strip())
        return cls(True)


@dataclass
class Oracle:
    """One piece of the framework's validation code and the rules of ours it corresponds to."""

    stage: str  # e.g. "driver: validate_config"
    run: Callable[[Mapping[str, Any]], Verdict | None]  # None: the code does not run for this case
    rules: frozenset[str]  # our rule ids this code checks
    patterns: Sequence[tuple[str, str | tuple[str, ...]]] = ()  # (regex on the error, rule id(s) it names)

    def classify(self, message: str) -> tuple[str, ...] | None:
        for pattern, rules in self.patterns:
            if re.search(pattern, message, re.S):
                return (rules,) if isinstance(rules, str) else tuple(rules)
        return None


@dataclass
class Allowed:
    """A rule of ours at a compared stage that the oracle does not check, and why."""

    rule: str
    reason: str


@dataclass
class Disagreement:
    framework: str
    stage: str
    seed: int
    index: int
    config: dict[str, Any]
    ours: list[str]
    theirs: str
    why: str

    def __str__(self) -> str:
        return (f"[{self.framework} | {self.stage}] seed={self.seed} case={self.index}: {self.why}\n"
                f"  config: {json.dumps(self.config, sort_keys=True)}\n"
                f"  ours (compared rules fired): {self.ours or 'none'}\n"
                f"  theirs: {self.theirs or 'pass'}")


@dataclass
class StageCount:
    tried: int = 0
    agreed: int = 0
    both_fail: int = 0  # agreements where both reject (the interesting ones)

    @property
    def disagreed(self) -> int:
        return self.tried - self.agreed


@dataclass
class Report:
    framework: str
    seed: int
    configs: int = 0
    input_errors: int = 0
    seconds: float = 0.0
    stages: dict[str, StageCount] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    fired: dict[str, int] = field(default_factory=dict)  # compared rule -> cases where it fired

    def table(self) -> str:
        lines = [f"parity {self.framework}: {self.configs} configs, seed {self.seed}, {self.seconds:.1f} s"]
        for stage, c in self.stages.items():
            lines.append(f"  {stage}: tried {c.tried}, agree {c.agreed} (both reject {c.both_fail}), "
                         f"disagree {c.disagreed}")
        never = [r for r, k in sorted(self.fired.items()) if k == 0]
        if never:
            lines.append(f"  compared rules never fired: {', '.join(never)}")
        return "\n".join(lines)


def flag_argv(case: Mapping[str, Any]) -> list[str]:
    """A case's flags as a command line (argparse's form): a switch bare when on, left out when off."""
    out: list[str] = []
    for key, value in case.items():
        if value is True:
            out.append(f"--{key}")
        elif value is not False and value is not None:
            out += [f"--{key}", str(value)]
    return out


def near(rng: random.Random, x: int, lo: int = 1) -> int:
    """``x`` or one of its neighbours (a divisibility edge), at least ``lo``."""
    return max(lo, x + rng.choice((-1, 0, 0, 0, 1)))


def divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0] if x > 0 else [1]


def divisor_near(rng: random.Random, x: int) -> int:
    """A divisor of ``x``, sometimes off by one (so it no longer divides)."""
    return near(rng, rng.choice(divisors(x)))


def multiple_near(rng: random.Random, unit: int, kmax: int = 8) -> int:
    """A multiple of ``unit``, sometimes off by one."""
    return near(rng, unit * rng.randint(1, kmax))


def run_parity(framework: str, cases: Iterable[tuple[dict[str, Any], dict[str, Any]]], oracles: Sequence[Oracle],
               *, seed: int, check_kwargs: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
               ours_input: Callable[[dict[str, Any]], Any] | None = None) -> Report:
    """Feed every case to ``rb.check`` and to each oracle; count agreements per stage.

    ``cases`` yields ``(config, extra)``: ``config`` is the native config both sides read, ``extra`` what
    only the oracle needs (nothing of ours reads it).
    """
    report = Report(framework, seed)
    for o in oracles:
        report.stages.setdefault(o.stage, StageCount())
        for r in o.rules:
            report.fired.setdefault(r, 0)
    t0 = time.perf_counter()
    for index, (config, extra) in enumerate(cases):
        report.configs += 1
        try:
            arg = ours_input(config) if ours_input else config
            ours = rb.check(arg, framework=framework, **(check_kwargs(config) if check_kwargs else {}))
            fired_all = {v.rule for v in ours.violations if v.severity.value == "error"}
        except InputError as exc:
            report.input_errors += 1
            fired_all = None
            ours_err = str(exc)
        for o in oracles:
            theirs = o.run({**config, **extra})
            if theirs is None:
                continue
            count = report.stages[o.stage]
            count.tried += 1
            if fired_all is None:
                report.disagreements.append(Disagreement(framework, o.stage, seed, index, config, [],
                                                         theirs.message, f"we reject the input: {ours_err}"))
                continue
            fired = sorted(fired_all & o.rules)
            for r in fired:
                report.fired[r] += 1
            why = ""
            if theirs.ok and fired:
                why = "the framework accepts, we reject"
            elif not theirs.ok and not fired:
                why = "the framework rejects, we accept"
            elif not theirs.ok:
                named = o.classify(theirs.message)
                if named is None:
                    why = "the framework's error names no rule we know"
                elif not set(named) & set(fired):
                    why = f"both reject, but the framework's error is {list(named)}"
            if why:
                report.disagreements.append(Disagreement(framework, o.stage, seed, index, config, fired,
                                                         theirs.message, why))
            else:
                count.agreed += 1
                count.both_fail += int(not theirs.ok)
    report.seconds = time.perf_counter() - t0
    return report


def assert_parity(report: Report, min_configs: int, max_shown: int = 10) -> None:
    print(report.table())
    shown = "\n".join(str(d) for d in report.disagreements[:max_shown])
    assert not report.disagreements, (
        f"{len(report.disagreements)} disagreement(s) (first {min(max_shown, len(report.disagreements))}):\n{shown}")
    assert report.configs >= min_configs
    for stage, c in report.stages.items():
        assert c.tried > 0, f"no case reached {stage}"
        assert 0 < c.both_fail < c.tried, f"{stage}: the generator never (or always) breaks a rule"

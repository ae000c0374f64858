"""What the release-dating measures (tests/trl_releases.py, tests/openrlhf_releases.py) ask of one real config: its
error rules with its release's pack named and with no release named, and the release ``check`` dated it to."""

from __future__ import annotations

from typing import Sequence


def error_rules(report) -> tuple[str, ...]:
    """The verdict: the error rules a report names, the memory rules left out (memory is the memory corpus's
    question)."""
    return tuple(sorted({v.rule for v in report.errors if ".memory." not in v.rule}))


def verdicts(args: Sequence[str], named: str, family: str, gpus: int | None,
             model: str | None) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(errors with ``named`` (framework==pack), errors with ``family`` alone, the release checked with then)."""
    import rlbatch_solver as rb

    with_release = rb.check(list(args), framework=named, gpus=gpus, model=model)
    unnamed = rb.check(list(args), framework=family, gpus=gpus, model=model)
    return error_rules(with_release), error_rules(unnamed), unnamed.version


def tally(res) -> tuple[int, int]:
    """(configs whose verdict with no release named is their release's, configs checked with their release's pack)
    of a measure's rows: (case, errors named, errors unnamed, release dated)."""
    return sum(named == unnamed for _, named, unnamed, _ in res), sum(dated == c.pack for c, _, _, dated in res)

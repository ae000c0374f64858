"""Which release a config was written for, from the keys it sets that only some releases have: one policy for the
frameworks that follow several releases by their keys (TRL, OpenRLHF, ms-swift; docs/architecture.md, "Which release
wrote a config", says why and what it measured, and why verl keeps the newest release that accepts everything).

When the newest release we follow has every such key, nothing says the config is old: the newest. Otherwise one of
its keys was removed later, and the config is dated to the *oldest* release that has them all: a key is in a config
because the release it was written for had it, and a config with a key that a later release removed was written while
that key was new, not in the last release before it went (open-r1's recipes with max_prompt_length and vllm_mode ran
TRL 0.18; OpenRLHF's configs with a known release are dated to its series 14 of 22 times this way, 2 of 22 by the
newest release that has them all: tests/openrlhf_releases.py)."""

from __future__ import annotations

from typing import Iterable, Sequence

from ..release_numbers import release_numbers


def listed(keys: Sequence[str], most: int = 6) -> str:
    """A config's dating keys as a report's why names them: the first ``most``, then " ..." where there are more."""
    return ", ".join(keys[:most]) + (" ..." if len(keys) > most else "")


def pick(have: Iterable[str], newest: str) -> str | None:
    """The release a config is dated to, of the releases ``have`` whose keys include all of the config's dating
    keys: ``newest`` when it is one of them, else the oldest; None when there are none."""
    have = sorted(set(have), key=release_numbers)
    if not have:
        return None
    return newest if newest in have else have[0]


def span(have: Iterable[str], name: str) -> str:
    """"TRL 0.18.2 to 0.19.1" / "TRL 0.19.1 only": the releases that have a config's keys, for a report's why."""
    have = sorted(set(have), key=release_numbers)
    return f"{name} {have[0]} to {have[-1]}" if len(have) > 1 else f"{name} {have[0]} only"


def dated(have: Iterable[str], newest: str, name: str, shown: str, what: str = "flags") -> tuple[str | None, str]:
    """(``pick``'s release, why): "its flags (--a, --b) are those of TRL 0.18.2 to 0.19.1, the oldest of them
    0.18.2"; ``shown`` names the dating keys, ``what`` what they are (flags, fields)."""
    have = list(have)
    release = pick(have, newest)
    if release is None:
        return None, f"its {what} ({shown}) belong to no single {name} release"
    why = f"its {what} ({shown}) are those of {span(have, name)}"
    if release == newest:
        return release, f"{why}: nothing dates it before {newest}"
    return release, why + (f", the oldest of them {release}" if len(set(have)) > 1 else "")

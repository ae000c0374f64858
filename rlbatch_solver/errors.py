"""Errors the user can act on.

``InputError`` is bad input (exit code 2): it always names the field that is
wrong and says how to fix it. The CLI prints it as one paragraph, never a
traceback.
"""

from __future__ import annotations

import difflib
from typing import Any, Iterable

# The largest size any key may take: more than any batch, length, token budget or GPU count in use
# (a billion), and far inside the 64-bit integers the solver holds.
MAX_SIZE = 10**9
MAX_GPUS = 65_536  # GPUs in one job: the largest clusters in use are a few tens of thousands


class InputError(ValueError):
    """Bad input: unknown name, negative size, malformed YAML or argument."""

    def __init__(self, field: str, problem: str, fix: str = "") -> None:
        self.field = field
        self.problem = problem
        self.fix = fix
        text = f"{field}: {problem}"
        if fix:
            text += f" Fix: {fix}"
        super().__init__(text)


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """Return ' Did you mean: a, b?' for close matches of ``word``, or ''."""
    choices = list(choices)
    close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=n, cutoff=0.5)
    if not close:
        # substring matches help for "4090" -> "rtx4090"
        close = [c for c in choices if word.lower() in c.lower()][:n]
    return f" Did you mean: {', '.join(close)}?" if close else ""


def shown(value: Any, width: int = 24) -> str:
    """``value`` as the user wrote it, cut to ``width`` characters (a 5,000-digit number stays readable)."""
    text = str(value)
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def check_size(field: str, value: Any, fix: str, limit: int = MAX_SIZE) -> None:
    """An ``InputError`` naming ``field`` when an integer ``value`` is beyond ``limit`` (or below -limit)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > limit:
        raise InputError(field, f"{shown(value)} is out of range (at most {limit:,}).", fix)


def check_gpu_count(gpus: Any, option: str = "--gpus") -> None:
    """An ``InputError`` naming ``gpus`` for a GPU count given (``option``) that no job has: below 1 or beyond
    ``MAX_GPUS``. Every command judges it first, whether or not it goes on to use the count (explain of a message
    alone does not)."""
    if gpus is None:
        return
    check_size("gpus", gpus, f"pass {option} with at most {MAX_GPUS:,} GPUs.", MAX_GPUS)
    if gpus < 1:
        raise InputError("gpus", f"{gpus} must be at least 1.", f"pass {option} N with N >= 1.")

"""Errors the user can act on.

``InputError`` is bad input (exit code 2): it always names the field that is
wrong and says how to fix it. The CLI prints it as one paragraph, never a
traceback.
"""

from __future__ import annotations

import difflib
from typing import Iterable


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

"""The frameworks' own error messages, mapped to our rules.

Users paste the line their job died on. Each entry is a regular expression
over that text (written from the message in the framework's source, cited),
the framework, and the rule ids it corresponds to. Named groups pick the
numbers out of the message so the explanation can repeat them.

``tests/test_explain.py`` checks that every rule id here exists in its rule
set, and that each pattern matches the message the framework really prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from .base import divisors


@dataclass(frozen=True)
class ErrorPattern:
    framework: str
    pattern: str
    rules: tuple[str, ...]
    source: str
    example: str  # the framework's message with sample numbers (tested to match)
    # the message in plain words, from the numbers (and names, such as "actor") it picks out: what it means and the
    # one setting to change, in the framework's own key syntax (tests/test_explain_hints.py: every pattern has one)
    hint: Optional[Callable[[dict[str, int | str]], str]] = None
    numbers: tuple[str, ...] = ()  # the named numbers the example must yield (tested)
    # the framework versions whose code prints this message, where only some do (verl's version packs): explain
    # checks with the newest of them unless the user named a version
    versions: tuple[str, ...] = ()

    def match(self, text: str) -> re.Match | None:
        return re.search(self.pattern, text, re.IGNORECASE | re.DOTALL)

    def rules_for(self, numbers: Mapping[str, str]) -> tuple[str, ...]:
        """The rules a matched message is about: where it names its config section ('who': actor, critic,
        actor_rollout_ref.rollout, ...) and some of the rules are that section's (the id's second part), those
        alone; otherwise all of them."""
        who = str(numbers.get("who", "")).rsplit(".", 1)[-1].lower()
        own = tuple(rid for rid in self.rules if who and rid.split(".")[1:2] == [who])
        return own or self.rules

    def explain(self, numbers: Mapping[str, str]) -> str:
        """The hint, given the numbers and names picked out of a message ('' without a hint, or without a number
        it needs)."""
        if self.hint is None:
            return ""
        try:
            return self.hint({k: int(v) if re.fullmatch(r"-?\d+", str(v)) else str(v) for k, v in numbers.items()})
        except (KeyError, ZeroDivisionError, ValueError, TypeError):
            return ""



N = r"(?P<{}>-?\d+)"


def _n(name: str) -> str:
    return N.format(name)


def some_divisors(total: int) -> str:
    """The first ten divisors of ``total``, listed ("1, 2, 3, 4, 6, 8, 12, 16, 24, 32"): the sizes a hint offers."""
    return ", ".join(map(str, divisors(total)[:10]))


def group_sizes(total: int) -> str:
    """The group sizes (num_generations, 2 and up) that split ``total`` completions into whole groups, the first
    ten ("2, 3, 4, 6, 8, 12, 16, 24, 32, 48")."""
    return ", ".join([str(d) for d in divisors(total) if d > 1][:10])


def _near(value: int, step: int) -> str:
    """The multiples of ``step`` either side of ``value`` ("512 or 528")."""
    lo, hi = (value // step) * step, -(-value // step) * step
    if lo == hi:
        return str(lo)
    return f"{hi}" if lo <= 0 else f"{lo} or {hi}"


_MCORE = "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)"
_MCORE_TC = "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)"
_P = r"\((?P<{}>\d+)\)".format  # a number in parentheses, named


def all_patterns() -> list[ErrorPattern]:
    """Every framework's messages, in registry order (each framework folder's ``errors.py``)."""
    from .registry import FRAMEWORKS, get_framework

    out: list[ErrorPattern] = []
    seen: set[int] = set()
    for name in FRAMEWORKS:
        for p in get_framework(name).error_patterns():
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def match_error(text: str, framework: str | None = None) -> list[tuple[ErrorPattern, dict[str, str]]]:
    """Every known message the pasted text contains, with the numbers it names.

    With a framework, only its own messages and those of the frameworks it runs on
    (``Framework.error_families``: verl's Megatron backend prints verl's messages too).
    """
    allowed = None
    if framework:
        from .registry import get_framework

        allowed = get_framework(framework).error_families
    out = []
    for p in all_patterns():
        if allowed and p.framework not in allowed:
            continue
        m = p.match(text)
        if m:
            out.append((p, {k: v for k, v in m.groupdict().items() if v is not None}))
    return out

"""The values ``fix``'s headroom step may give a batch size: those an engineer would pick.

When the nearest repair is tight and fix moves one more size to keep a margin (``fix_headroom.with_headroom``), the move is
for memory, not for a rule, so any value that fits would do; the nearest one by distance alone is often a value
nobody sets (``--micro_rollout_batch_size 16 -> 15``, which splits OpenRLHF's 1024 samples per rollout unevenly).
The step is searched among *regular* values instead:

- a key the rules divide a batch by (``divides(k * other, batch)`` in any rule, error or advice, that applies to
  the config): the divisors of that batch over ``other``, so every division the framework makes stays exact;
- any other batch size: powers of two (the sizes GPU kernels and every framework's examples use), and the divisors
  of the user's own value (80 -> 40: halved, as one halves a micro batch that does not fit).

The key's value in the config the step starts from is always kept, and so is an unset value. Parallel sizes, token
budgets, memory shares and closed choices keep their own candidates (those are already regular).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..rules.base import RuleSet, Value
from ..rules.expr import BoolOp, Divides, IntVar, evaluate, variables


@dataclass(frozen=True)
class Batch:
    """One batch a key divides at the config: its size over the divisor's other factors, what it is, the rule."""

    size: int
    what: str
    rule: str


@dataclass
class RegularValues:
    """Per batch-size key: the batches it divides (none: powers of two are its regular values)."""

    keys: frozenset[str]
    batches: dict[str, list[Batch]] = field(default_factory=dict)
    own: dict[str, int] = field(default_factory=dict)  # the user's own value of each key (its divisors are regular)

    def allows(self, name: str, value: Value) -> bool:
        if name not in self.keys or not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return True
        if self.batches.get(name):
            return all(b.size % value == 0 for b in self.batches[name])
        return value & (value - 1) == 0 or self._divides_own(name, value)

    def _divides_own(self, name: str, value: int) -> bool:
        return name in self.own and self.own[name] % value == 0

    def why(self, name: str, value: Value) -> str:
        """Why ``value`` is a value an engineer would pick, in words ("" for a key this does not cover)."""
        if name not in self.keys or not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return ""
        if self.batches.get(name):
            return "; ".join(f"{value} divides the {b.size} {b.what} ({b.rule})" for b in self.batches[name])
        if value & (value - 1) == 0:
            return f"{value} is a power of two"
        return f"{value} divides your {self.own[name]}" if self._divides_own(name, value) else ""

    def filtered(self, domains: Mapping[str, list[Value]], start: Mapping[str, Value]) -> dict[str, list[Value]]:
        """``domains`` with each covered key's candidates cut to its regular values (its ``start`` value kept)."""
        return {n: [v for v in vals if v is None or v == start.get(n) or self.allows(n, v)] if n in self.keys
                else list(vals) for n, vals in domains.items()}


def _conjuncts(expr):
    if isinstance(expr, BoolOp) and expr.op == "and":
        for a in expr.args:
            yield from _conjuncts(a)
    else:
        yield expr


def _what(ruleset: RuleSet, expr) -> str:
    """A batch expression in words: a derived quantity's description (before its formula), else its key."""
    if isinstance(expr, IntVar):
        for d in ruleset.derived:
            if d.name == expr.name:
                return d.description.split(" = ")[0].split(",")[0].strip()
        spec = ruleset.variables.get(expr.name)
        if spec is not None:
            return spec.key
    return "batch"


def regular_values(ruleset: RuleSet, values: Mapping[str, Value], keys: set[str],
                   own: Mapping[str, Value] | None = None) -> RegularValues:
    """The batches each of ``keys`` divides at ``values``: every ``divides(divisor, batch)`` conjunct of a rule that
    applies there (its ``when`` holds) whose divisor is the key times factors that do not read it and whose batch
    does not read it (so ``batch / other`` is what the key must divide). ``own``: the config the user pasted."""
    out = RegularValues(frozenset(keys), own={n: v for n, v in (own or {}).items() if n in keys and isinstance(v, int)
                                              and not isinstance(v, bool) and v > 0})
    env = ruleset.full_env(values)
    reads: dict[str, set[str]] = {}
    for d in ruleset.derived:  # each derived name's variables, through other derived names (defined in order)
        direct = variables(d.expr)
        reads[d.name] = set().union(*(reads.get(n, {n}) for n in direct)) if direct else set()

    def through(expr) -> set[str]:
        return set().union(*(reads.get(n, {n}) for n in variables(expr))) if variables(expr) else set()

    for rule in ruleset.rules:
        try:
            if not evaluate(rule.when, env):
                continue
        except (KeyError, ZeroDivisionError):
            continue
        for node in _conjuncts(rule.holds):
            if not isinstance(node, Divides):
                continue
            for name in keys & through(node.divisor):
                current = values.get(name)
                if not isinstance(current, int) or isinstance(current, bool) or current < 1 \
                        or name in through(node.value):
                    continue
                try:
                    once = ruleset.full_env({**values, name: 1})
                    other, batch = evaluate(node.divisor, once), evaluate(node.value, env)
                    proportional = evaluate(node.divisor, env) == other * current
                except (KeyError, ZeroDivisionError):
                    continue
                if other >= 1 and proportional and batch >= 1 and batch % other == 0:
                    size = batch // other
                    known = out.batches.setdefault(name, [])
                    if not any(b.size == size for b in known):
                        known.append(Batch(size, _what(ruleset, node.value), rule.id))
    return out


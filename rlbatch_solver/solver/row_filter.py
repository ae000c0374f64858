"""Rows a cost table never needs: those that break a rule the model enforces anyway.

A cost table (``rules.expr.Table``) is priced over the product of its inputs' domains, one cost-model call per row.
Where the inputs are tied by a rule the solve enforces (ms-swift's training ranks and rollout server covering every
GPU, OpenRLHF's engines and actor groups filling the cluster), most of that product can never be chosen. Such a row
can be left out of the table without changing any answer: every solution satisfies the enforced rule, so it never
selects the row, and the rows kept carry the same numbers. Only error rules the model enforces are used, only those
whose every input (through derived quantities) is a table input or a fixed value, never one read through another
cost table, and never optional values (their unset placeholder is not a value the rule sees as such).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Mapping

from ..identity_cache import by_identity
from ..rules.base import RuleSet
from ..rules.expr import Table, variables


def _has_table(expr: object) -> bool:
    """Whether ``expr`` prices a cost table anywhere inside it."""
    if isinstance(expr, Table):
        return True
    if dataclasses.is_dataclass(expr):
        for f in dataclasses.fields(expr):
            value = getattr(expr, f.name)
            items = value if isinstance(value, tuple) else (value,)
            if any(_has_table(v) for v in items if dataclasses.is_dataclass(v)):
                return True
    return False


class _Analysis:
    """What a rule set offers any filter, worked out once per rule set: the derived quantities and rules that no cost
    table and no optional value feeds, with the leaf variables each reads (through derived quantities)."""

    def __init__(self, ruleset: RuleSet) -> None:
        optional = {n for n, s in ruleset.variables.items() if s.optional}
        self.optional = optional | {ruleset.variables[n].set_flag for n in optional}
        fns = {name: fn for name, _, fn in ruleset._derived_fns}  # compiled once by the rule set
        self.derived: dict[str, tuple[set[str], Callable]] = {}
        leaves: dict[str, set[str] | None] = {}  # None: read through a cost table (or an optional value)
        for d in ruleset.derived:
            reads = variables(d.expr)
            if _has_table(d.expr) or reads & self.optional or any(leaves.get(r, set()) is None for r in reads):
                leaves[d.name] = None
                continue
            leaves[d.name] = set().union(*[leaves.get(r) or {r} for r in reads]) if reads else set()
            self.derived[d.name] = (reads, fns[d.name])
        self.rules: dict[str, tuple[set[str], set[str], Callable]] = {}  # id -> (leaf inputs, derived read, test)
        for r in ruleset.rules:
            reads = r.reads()
            if _has_table(r.expr) or reads & self.optional or any(leaves.get(n, set()) is None for n in reads):
                continue
            leaf = set().union(*[leaves.get(n) or {n} for n in reads]) if reads else set()
            self.rules[r.id] = (leaf, self._closure(reads), ruleset._rule_fns[r.id])
        self.order = [d.name for d in ruleset.derived]

    def _closure(self, names: Iterable[str]) -> set[str]:
        """The derived quantities ``names`` read, directly or through others."""
        out: set[str] = set()
        todo = [n for n in names if n in self.derived]
        while todo:
            n = todo.pop()
            if n not in out:
                out.add(n)
                todo += [m for m in self.derived[n][0] if m in self.derived]
        return out


_ANALYSES: dict = {}


def _analysis(ruleset: RuleSet) -> _Analysis:
    # one per rule set; rule sets are built per command (a sweep builds many): a few dozen kept
    return by_identity(_ANALYSES, ruleset, lambda: _Analysis(ruleset), limit=64)


class RowFilter:
    """``predicate(names)``: a test of a row (a dict of the table inputs' values) against the enforced rules that
    read only those names and fixed values; None when no such rule exists."""

    def __init__(self, ruleset: RuleSet, domains: Mapping[str, list], enforced: Iterable[str]) -> None:
        self._a = _analysis(ruleset)
        self._fixed = {n: v[0] for n, v in domains.items() if len(v) == 1 and n not in self._a.optional}
        self._rules = [self._a.rules[i] for i in enforced if i in self._a.rules]
        self._cache: dict[frozenset, Callable[[dict], bool] | None] = {}

    def predicate(self, names: Iterable[str]) -> Callable[[dict], bool] | None:
        key = frozenset(names)
        if key not in self._cache:
            self._cache[key] = self._build(key)
        return self._cache[key]

    def _build(self, names: frozenset) -> Callable[[dict], bool] | None:
        known = names | self._fixed.keys()
        tests = [(derived, test) for leaf, derived, test in self._rules if leaf <= known and leaf & names]
        if not tests:
            return None
        needed = set().union(*[d for d, _ in tests])
        steps = [(n, self._a.derived[n][1]) for n in self._a.order if n in needed]
        fixed = dict(self._fixed)
        checks = [t for _, t in tests]
        try:  # the same tests of the same values: the predicate an earlier filter built (_SAME)
            same = (names, frozenset((n, type(v), v) for n, v in fixed.items()), tuple(steps), tuple(checks))
        except TypeError:  # a fixed value that is not hashable: this filter's own
            same = None
        if same is not None and same in _SAME:
            return _SAME[same]

        def keep(row: dict) -> bool:
            env = {**fixed, **row}
            try:
                for name, fn in steps:
                    env[name] = fn(env)
                return all(check(env) for check in checks)
            except (ArithmeticError, KeyError, TypeError, ValueError):
                return True  # a value the rules cannot judge here: kept, the solve decides

        if same is not None:
            if len(_SAME) >= _SAME_KEPT:
                _SAME.clear()
            _SAME[same] = keep
        return keep


# predicates by what they test: the table inputs' names, the fixed values, the derived quantities and rule checks they
# run (the compiled functions, which a rule set extended from another shares with it: RuleSet's compiled_like). A
# command's models (the optimum, then the headroom and roomier solves, whose rule sets add rules on cost tables that no
# predicate reads) get the same predicate object, by which solver/compile.py knows a table's rows from an earlier model
_SAME: dict[tuple, Callable[[dict], bool]] = {}
_SAME_KEPT = 256

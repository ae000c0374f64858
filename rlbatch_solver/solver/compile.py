"""Compile rule expressions (``rules.expr``) into CP-SAT constraints.

Every boolean expression becomes a literal that is *equivalent* to it (fully
reified), so a rule can be enforced, assumed, relaxed or counted by the repair
objective. Integer expressions become linear expressions, with an auxiliary
variable per product, division, modulo, min/max and if-then-else. Bounds are
tracked by interval arithmetic to size the auxiliaries.

Integer semantics match ``rules.expr.evaluate``: values are non-negative where
they are divided, and divisors are at least 1 (checked here on the domains), so
CP-SAT's truncating division equals Python's floor division.
"""

from __future__ import annotations

import math
from typing import Callable, Union

from ortools.sat.python import cp_model

from ..errors import InputError
from ..identity_cache import by_identity
from ..rules.expr import (
    variables,
    BinOp,
    BoolConst,
    BoolExpr,
    BoolOp,
    BoolVar,
    Cmp,
    Const,
    Divides,
    IfThenElse,
    IntExpr,
    IntVar,
    Not,
    Table,
)

Linear = Union[cp_model.LinearExpr, cp_model.IntVar, int]
Lit = Union[cp_model.IntVar, "cp_model._NotBooleanVariable"]  # noqa: F821


# Rows of one rule's table (the product of its inputs' domains): the frameworks' default spaces stay under 10,000;
# beyond this a search would spend minutes and gigabytes tabling it.
MAX_TABLE_ROWS = 100_000
# how often pricing a table's rows looks at the clock (a row is one cost-model call, tens of microseconds)
TABLE_DEADLINE_ROWS = 64
MAX_SOLVER_INT = 2**62  # CP-SAT's integers are 64-bit: a product of sizes must stay inside them
# a cost table's rows, by the table, its inputs' domains and the row filter's predicate (the same predicate object for
# the same enforced rules: row_filter.py): a command's models (the optimum, then the headroom and roomier solves) ask
# for the same tables, whose rows were walked and filtered again each time (a tenth of a second of an 8-GPU Megatron
# MoE recommend); kept for a command's tables (a dozen per model), as tables are built per command: a sweep's or a
# server's process holds no more than these after its command
_TABLE_ROWS: dict = {}
_TABLE_ROWS_KEPT = 32


class CompileError(ValueError):
    pass


class Compiler:
    """Turns expressions into CP-SAT objects inside one ``CpModel``."""

    def __init__(self, model: cp_model.CpModel) -> None:
        self.model = model
        self.ints: dict[str, tuple[Linear, int, int]] = {}
        self.bools: dict[str, Lit] = {}
        self._int_cache: dict[int, tuple[Linear, int, int]] = {}
        self._lit_cache: dict[int, Lit] = {}
        self._keep: list[object] = []  # keep cached expressions alive (ids stay unique)
        self.aux_count = 0
        self.domains: dict[str, list] = {}  # variable name -> its values (for tables)
        # derived quantities compiled the first time an expression reads them: a quantity no rule
        # and no objective reads adds no constraint (each one, a Table most, slows the search)
        self._deferred: dict[str, IntExpr | BoolExpr] = {}
        # rows of a cost table that break an enforced rule are left out (solver/row_filter.py); set by build_model
        self.row_filter = None
        # pricing a cost table's rows stops (deadline.OutOfTime) once this Deadline has passed; set by build_model
        self.deadline = None

    # -- registration ----------------------------------------------------------
    def add_int(self, name: str, values: list[int]) -> Linear:
        """A variable over ``values``; a single value becomes a constant (folded away)."""
        vals = sorted(set(values))
        self.domains[name] = vals
        if len(vals) == 1:
            self.ints[name] = (vals[0], vals[0], vals[0])
            return vals[0]
        var = self.model.NewIntVarFromDomain(cp_model.Domain.FromValues(vals), name)
        self.ints[name] = (var, vals[0], vals[-1])
        return var

    def add_bool(self, name: str, values: list[bool]) -> Lit | bool:
        vals = set(values)
        self.domains[name] = sorted(vals)
        if len(vals) == 1:
            self.bools[name] = vals.pop()
            return self.bools[name]
        var = self.model.NewBoolVar(name)
        self.bools[name] = var
        return var

    def define_int(self, name: str, expr: IntExpr) -> None:
        self.ints[name] = self.int(expr)

    def defer(self, name: str, expr: IntExpr | BoolExpr) -> None:
        """Define ``name`` as ``expr`` when something first reads it."""
        self._deferred[name] = expr

    def knows(self, name: str) -> bool:
        return name in self.ints or name in self.bools or name in self._deferred

    def resolve(self, name: str) -> bool:
        """Compile a deferred quantity now; False when ``name`` is unknown."""
        if name in self._deferred:
            expr = self._deferred.pop(name)
            if isinstance(expr, BoolExpr):
                self.define_bool(name, expr)
            else:
                self.define_int(name, expr)
        return name in self.ints or name in self.bools

    def define_bool(self, name: str, expr: BoolExpr) -> None:
        self.bools[name] = self.lit(expr)

    # -- helpers ---------------------------------------------------------------
    def const_lit(self, value: bool) -> bool:
        """Constant truth values stay Python bools and are folded by every user."""
        return bool(value)

    def enforce(self, lit: "Lit | bool") -> None:
        """Require ``lit`` (a constant False makes the model infeasible)."""
        if lit is True:
            return
        if lit is False:
            self.model.AddBoolOr([])
            return
        self.model.AddBoolAnd([lit])

    def _aux(self, lo: int, hi: int, tag: str) -> cp_model.IntVar:
        self.aux_count += 1
        return self.model.NewIntVar(lo, hi, f"{tag}_{self.aux_count}")

    def _as_var(self, item: tuple[Linear, int, int]) -> cp_model.IntVar:
        expr, lo, hi = item
        if isinstance(expr, cp_model.IntVar):
            return expr
        v = self._aux(lo, hi, "lin")
        self.model.Add(v == expr)
        return v

    def _cached(self, cache: dict, expr: object, build: Callable[[], object]):
        key = id(expr)
        if key not in cache:
            cache[key] = build()
            self._keep.append(expr)
        return cache[key]

    # -- integers --------------------------------------------------------------
    def int(self, e: IntExpr) -> tuple[Linear, int, int]:
        """(linear expression, lower bound, upper bound) of ``e``."""
        return self._cached(self._int_cache, e, lambda: self._int(e))

    def _int(self, e: IntExpr) -> tuple[Linear, int, int]:
        if isinstance(e, Const):
            return e.value, e.value, e.value
        if isinstance(e, IntVar):
            if not self.resolve(e.name) or e.name not in self.ints:
                raise CompileError(f"unknown integer variable {e.name}")
            return self.ints[e.name]
        if isinstance(e, IfThenElse):
            c = self.lit(e.cond)
            if isinstance(c, bool):
                return self.int(e.then if c else e.other)
            t, tlo, thi = self.int(e.then)
            o, olo, ohi = self.int(e.other)
            v = self._aux(min(tlo, olo), max(thi, ohi), "ite")
            self.model.Add(v == t).OnlyEnforceIf(c)
            self.model.Add(v == o).OnlyEnforceIf(c.Not())
            return v, min(tlo, olo), max(thi, ohi)
        if isinstance(e, Table):
            return self._table(e)
        if not isinstance(e, BinOp):
            raise CompileError(f"not an integer expression: {e!r}")
        a, alo, ahi = self.int(e.a)
        b, blo, bhi = self.int(e.b)
        op = e.op
        if op == "+":
            return a + b, alo + blo, ahi + bhi
        if op == "-":
            return a - b, alo - bhi, ahi - blo
        if op == "*":
            corners = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
            lo, hi = min(corners), max(corners)
            if max(-lo, hi) > MAX_SOLVER_INT:
                raise InputError(" * ".join(sorted(variables(e))), f"the sizes given make this product reach {max(-lo, hi):,}, beyond the "
                                 "64-bit integers the solver holds.",
                                 "give sizes a run uses (a batch, a count of responses: at most a few million).")
            if isinstance(b, int):
                return a * b, lo, hi
            if isinstance(a, int):
                return b * a, lo, hi
            v = self._aux(lo, hi, "mul")
            self.model.AddMultiplicationEquality(v, [self._as_var((a, alo, ahi)), self._as_var((b, blo, bhi))])
            return v, lo, hi
        if op in ("//", "%"):
            if blo < 1:
                raise CompileError(f"divisor {e.b!r} may be {blo}; divisors must be >= 1")
            if alo < 0:
                raise CompileError(f"dividend {e.a!r} may be negative ({alo})")
            if isinstance(a, int) and isinstance(b, int):
                val = a // b if op == "//" else a % b
                return val, val, val
            if op == "//":
                lo, hi = alo // bhi, ahi // blo
                v = self._aux(lo, hi, "div")
                self.model.AddDivisionEquality(v, self._as_var((a, alo, ahi)), self._as_var((b, blo, bhi)))
                return v, lo, hi
            hi = min(ahi, bhi - 1)
            v = self._aux(0, hi, "mod")
            divisor = b if isinstance(b, int) else self._as_var((b, blo, bhi))
            self.model.AddModuloEquality(v, self._as_var((a, alo, ahi)), divisor)
            return v, 0, hi
        if op in ("min", "max"):
            lo = min(alo, blo) if op == "min" else max(alo, blo)
            hi = min(ahi, bhi) if op == "min" else max(ahi, bhi)
            v = self._aux(lo, hi, op)
            args = [self._as_var((a, alo, ahi)), self._as_var((b, blo, bhi))]
            if isinstance(a, int) and isinstance(b, int):
                val = min(a, b) if op == "min" else max(a, b)
                return val, val, val
            if op == "min":
                self.model.AddMinEquality(v, args)
            else:
                self.model.AddMaxEquality(v, args)
            return v, lo, hi
        raise CompileError(f"unknown operator {op}")

    def _table(self, e: Table) -> tuple[Linear, int, int]:
        """``fn`` over the product of the inputs' domains, as an allowed-assignments table."""
        doms = []
        for i in e.inputs:
            if i.name not in self.domains:
                raise CompileError(f"table {e.name}: input {i.name} is not a decision variable")
            doms.append(self.domains[i.name])
        combinations = math.prod(len(d) for d in doms)
        if combinations > MAX_TABLE_ROWS:  # long searched lists or huge sizes get here: the defaults table < 10,000
            raise InputError(", ".join(i.name for i in e.inputs),
                             f"their candidate values make {combinations:,} combinations, more than the "
                             f"{MAX_TABLE_ROWS:,} one rule may weigh.",
                             "search a handful of values per key, and give sizes a run uses (at most a few million).")
        free = [k for k, d in enumerate(doms) if len(d) > 1]
        names = [i.name for i in e.inputs]
        keep = self.row_filter.predicate([names[k] for k in free]) if self.row_filter is not None and free else None
        rows = by_identity(_TABLE_ROWS, e, lambda: self._rows(e, doms, names, free, keep),
                           key=(tuple(map(tuple, doms)), keep), limit=_TABLE_ROWS_KEPT)
        if not rows:  # every row breaks an enforced rule: no config exists
            self.model.AddBoolOr([])
            return 0, 0, 0
        values = sorted(set(rows.values()))
        if not free:
            return values[0], values[0], values[0]
        target = self._aux(values[0], values[-1], f"table_{e.name}")
        cp_vars = []
        for k in free:
            i = e.inputs[k]
            cp_vars.append(self.bools[i.name] if i.name in self.bools else self.ints[i.name][0])
        self.model.AddAllowedAssignments(cp_vars + [target], [tuple(int(v) for v in key) + (val,) for key, val in rows.items()])
        return target, values[0], values[-1]

    def _rows(self, e: Table, doms: list, names: list[str], free: list[int], keep) -> dict[tuple, int]:
        """The rows of table ``e`` over ``doms`` that ``keep`` keeps: the values of its free inputs -> its value."""
        import itertools

        rows = {}
        for count, combo in enumerate(itertools.product(*doms)):
            if self.deadline is not None and count % TABLE_DEADLINE_ROWS == 0 and self.deadline.expired():
                from ..deadline import OutOfTime

                raise OutOfTime(f"table {e.name}")
            if keep is not None and not keep(dict(zip(names, combo))):
                continue  # breaks a rule the model enforces: no solution selects it
            rows[tuple(combo[k] for k in free)] = int(e.fn(*combo))
        return rows

    # -- booleans --------------------------------------------------------------
    def lit(self, e: BoolExpr) -> Lit:
        """A literal equivalent to ``e``."""
        return self._cached(self._lit_cache, e, lambda: self._lit(e))

    def _lit(self, e: BoolExpr) -> Lit:
        if isinstance(e, BoolConst):
            return self.const_lit(e.value)
        if isinstance(e, BoolVar):
            if not self.resolve(e.name) or e.name not in self.bools:
                raise CompileError(f"unknown boolean variable {e.name}")
            return self.bools[e.name]
        if isinstance(e, Not):
            inner = self.lit(e.arg)
            return (not inner) if isinstance(inner, bool) else inner.Not()
        if isinstance(e, BoolOp):
            raw = [self.lit(a) for a in e.args]
            absorbing = e.op == "or"  # True absorbs an or, False absorbs an and
            if any(isinstance(a, bool) and a == absorbing for a in raw):
                return absorbing
            args = [a for a in raw if not isinstance(a, bool)]
            if not args:
                return not absorbing
            if len(args) == 1:
                return args[0]
            v = self.model.NewBoolVar(e.op)
            if e.op == "and":
                self.model.AddBoolAnd(args).OnlyEnforceIf(v)
                self.model.AddBoolOr([a.Not() for a in args]).OnlyEnforceIf(v.Not())
            else:
                self.model.AddBoolOr(args).OnlyEnforceIf(v)
                self.model.AddBoolAnd([a.Not() for a in args]).OnlyEnforceIf(v.Not())
            return v
        if isinstance(e, Cmp):
            a, alo, ahi = self.int(e.a)
            b, blo, bhi = self.int(e.b)
            decided = _decide(e.op, alo, ahi, blo, bhi)
            if decided is not None:
                return self.const_lit(decided)
            v = self.model.NewBoolVar(f"cmp{e.op}")
            yes, no = _CMP_PAIRS[e.op](a, b)
            self.model.Add(yes).OnlyEnforceIf(v)
            self.model.Add(no).OnlyEnforceIf(v.Not())
            return v
        if isinstance(e, Divides):
            rem = BinOp("%", e.value, e.divisor)
            self._keep.append(rem)
            r, lo, hi = self.int(rem)
            if hi == 0:
                return self.const_lit(True)
            if isinstance(r, int):
                return self.const_lit(r == 0)
            v = self.model.NewBoolVar("divides")
            self.model.Add(r == 0).OnlyEnforceIf(v)
            self.model.Add(r != 0).OnlyEnforceIf(v.Not())
            return v
        raise CompileError(f"not a boolean expression: {e!r}")


_CMP_PAIRS = {
    "<=": lambda a, b: (a <= b, a > b),
    "<": lambda a, b: (a < b, a >= b),
    ">=": lambda a, b: (a >= b, a < b),
    ">": lambda a, b: (a > b, a <= b),
    "==": lambda a, b: (a == b, a != b),
    "!=": lambda a, b: (a != b, a == b),
}


def _decide(op: str, alo: int, ahi: int, blo: int, bhi: int) -> bool | None:
    """The comparison's value when the bounds alone settle it, else None."""
    if op in ("<=", ">="):
        x_lo, x_hi, y_lo, y_hi = (alo, ahi, blo, bhi) if op == "<=" else (blo, bhi, alo, ahi)
        if x_hi <= y_lo:
            return True
        if x_lo > y_hi:
            return False
        return None
    if op in ("<", ">"):
        x_lo, x_hi, y_lo, y_hi = (alo, ahi, blo, bhi) if op == "<" else (blo, bhi, alo, ahi)
        if x_hi < y_lo:
            return True
        if x_lo >= y_hi:
            return False
        return None
    if alo == ahi == blo == bhi:
        return op == "=="
    if ahi < blo or bhi < alo:
        return op == "!="
    return None

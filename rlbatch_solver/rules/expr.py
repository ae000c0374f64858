"""A tiny expression language for batch-size rules.

One rule is written once, as an expression over named integer and boolean
variables, and used two ways:

* ``evaluate(expr, env)`` computes it on concrete numbers (the checker);
* ``solver.compile.Compiler`` turns it into CP-SAT constraints (enumerate,
  optimise, repair, explain).

Only what the frameworks' rules need is here: ``+ - *``, floor division and
modulo by a positive divisor, ``min``/``max``, if-then-else, comparisons,
divisibility and boolean logic. Integer values are non-negative in every rule
we model; division and modulo require a divisor of at least 1 on both sides
(the compiler checks the divisor's domain, the evaluator raises).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Union

Number = Union[int, bool]
IntLike = Union["IntExpr", int]
BoolLike = Union["BoolExpr", bool]


def as_int(x: IntLike) -> "IntExpr":
    if isinstance(x, IntExpr):
        return x
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"expected an integer expression, got {x!r}")
    return Const(x)


def as_bool(x: BoolLike) -> "BoolExpr":
    if isinstance(x, BoolExpr):
        return x
    if isinstance(x, bool):
        return BoolConst(x)
    raise TypeError(f"expected a boolean expression, got {x!r}")


class IntExpr:
    """Base of integer expressions; operators build new expressions."""

    def __add__(self, o: IntLike) -> "IntExpr":
        return BinOp("+", self, as_int(o))

    def __radd__(self, o: IntLike) -> "IntExpr":
        return BinOp("+", as_int(o), self)

    def __sub__(self, o: IntLike) -> "IntExpr":
        return BinOp("-", self, as_int(o))

    def __rsub__(self, o: IntLike) -> "IntExpr":
        return BinOp("-", as_int(o), self)

    def __mul__(self, o: IntLike) -> "IntExpr":
        return BinOp("*", self, as_int(o))

    def __rmul__(self, o: IntLike) -> "IntExpr":
        return BinOp("*", as_int(o), self)

    def __floordiv__(self, o: IntLike) -> "IntExpr":
        return BinOp("//", self, as_int(o))

    def __rfloordiv__(self, o: IntLike) -> "IntExpr":
        return BinOp("//", as_int(o), self)

    def __mod__(self, o: IntLike) -> "IntExpr":
        return BinOp("%", self, as_int(o))

    def __le__(self, o: IntLike) -> "BoolExpr":
        return Cmp("<=", self, as_int(o))

    def __lt__(self, o: IntLike) -> "BoolExpr":
        return Cmp("<", self, as_int(o))

    def __ge__(self, o: IntLike) -> "BoolExpr":
        return Cmp(">=", self, as_int(o))

    def __gt__(self, o: IntLike) -> "BoolExpr":
        return Cmp(">", self, as_int(o))

    def eq(self, o: IntLike) -> "BoolExpr":
        return Cmp("==", self, as_int(o))

    def ne(self, o: IntLike) -> "BoolExpr":
        return Cmp("!=", self, as_int(o))

    # Expressions are compared structurally by the compiler's cache, so keep
    # the default identity hash and equality.
    __hash__ = object.__hash__


class BoolExpr:
    """Base of boolean expressions."""

    def __and__(self, o: BoolLike) -> "BoolExpr":
        return BoolOp("and", (self, as_bool(o)))

    def __rand__(self, o: BoolLike) -> "BoolExpr":
        return BoolOp("and", (as_bool(o), self))

    def __or__(self, o: BoolLike) -> "BoolExpr":
        return BoolOp("or", (self, as_bool(o)))

    def __ror__(self, o: BoolLike) -> "BoolExpr":
        return BoolOp("or", (as_bool(o), self))

    def __invert__(self) -> "BoolExpr":
        return Not(self)

    def implies(self, o: BoolLike) -> "BoolExpr":
        return BoolOp("or", (Not(self), as_bool(o)))

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class IntVar(IntExpr):
    """A named integer variable: a config value the user sets or we search."""

    name: str


@dataclass(frozen=True, eq=False)
class Const(IntExpr):
    value: int


@dataclass(frozen=True, eq=False)
class BinOp(IntExpr):
    op: str  # + - * // % min max
    a: IntExpr
    b: IntExpr


@dataclass(frozen=True, eq=False)
class IfThenElse(IntExpr):
    cond: BoolExpr
    then: IntExpr
    other: IntExpr


@dataclass(frozen=True, eq=False)
class Table(IntExpr):
    """``fn(*inputs)`` for a function we only know by its values (costs).

    The checker calls ``fn``; CP-SAT gets the table of ``fn`` over the product
    of the inputs' domains (``AddAllowedAssignments``), so both see the same
    numbers. Inputs must be variables with small domains.
    """

    name: str
    inputs: tuple[Union["IntVar", "BoolVar"], ...]
    fn: Callable[..., int]


@dataclass(frozen=True, eq=False)
class BoolVar(BoolExpr):
    """A named boolean variable: a switch like use_dynamic_bsz."""

    name: str


@dataclass(frozen=True, eq=False)
class BoolConst(BoolExpr):
    value: bool


@dataclass(frozen=True, eq=False)
class Cmp(BoolExpr):
    op: str  # <= < >= > == !=
    a: IntExpr
    b: IntExpr


@dataclass(frozen=True, eq=False)
class Divides(BoolExpr):
    """``divisor`` divides ``value`` exactly (value % divisor == 0)."""

    divisor: IntExpr
    value: IntExpr


@dataclass(frozen=True, eq=False)
class BoolOp(BoolExpr):
    op: str  # and | or
    args: tuple[BoolExpr, ...]


@dataclass(frozen=True, eq=False)
class Not(BoolExpr):
    arg: BoolExpr


def divides(divisor: IntLike, value: IntLike) -> BoolExpr:
    return Divides(as_int(divisor), as_int(value))


def minimum(a: IntLike, b: IntLike) -> IntExpr:
    return BinOp("min", as_int(a), as_int(b))


def maximum(a: IntLike, b: IntLike) -> IntExpr:
    return BinOp("max", as_int(a), as_int(b))


def if_then_else(cond: BoolLike, then: IntLike, other: IntLike) -> IntExpr:
    return IfThenElse(as_bool(cond), as_int(then), as_int(other))


def all_of(*args: BoolLike) -> BoolExpr:
    return BoolOp("and", tuple(as_bool(a) for a in args)) if args else BoolConst(True)


def any_of(*args: BoolLike) -> BoolExpr:
    return BoolOp("or", tuple(as_bool(a) for a in args)) if args else BoolConst(False)


def exactly_one(*args: BoolLike) -> BoolExpr:
    """Exactly one of the arguments holds."""
    bs = [as_bool(a) for a in args]
    pairs = [~(bs[i] & bs[j]) for i in range(len(bs)) for j in range(i + 1, len(bs))]
    return all_of(any_of(*bs), *pairs)


# --------------------------------------------------------------------------
# Concrete evaluation
# --------------------------------------------------------------------------

_CMP = {
    "<=": lambda x, y: x <= y,
    "<": lambda x, y: x < y,
    ">=": lambda x, y: x >= y,
    ">": lambda x, y: x > y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
}


def _positive_divisor(value: int, expr: IntExpr) -> int:
    if value < 1:
        raise ZeroDivisionError(f"divisor {expr!r} evaluated to {value}; rules must keep divisors >= 1")
    return value


def evaluate(expr: IntExpr | BoolExpr, env: Mapping[str, Number]) -> Number:
    """Value of ``expr`` with variables taken from ``env`` (a KeyError names a missing one)."""
    if isinstance(expr, (IntVar, BoolVar)):
        return env[expr.name]
    if isinstance(expr, (Const, BoolConst)):
        return expr.value
    if isinstance(expr, BinOp):
        a = evaluate(expr.a, env)
        b = evaluate(expr.b, env)
        if expr.op == "+":
            return a + b
        if expr.op == "-":
            return a - b
        if expr.op == "*":
            return a * b
        if expr.op == "//":
            return a // _positive_divisor(b, expr.b)
        if expr.op == "%":
            return a % _positive_divisor(b, expr.b)
        if expr.op == "min":
            return min(a, b)
        if expr.op == "max":
            return max(a, b)
        raise ValueError(f"unknown operator {expr.op}")
    if isinstance(expr, IfThenElse):
        return evaluate(expr.then, env) if evaluate(expr.cond, env) else evaluate(expr.other, env)
    if isinstance(expr, Table):
        return int(expr.fn(*(env[i.name] for i in expr.inputs)))
    if isinstance(expr, Cmp):
        return _CMP[expr.op](evaluate(expr.a, env), evaluate(expr.b, env))
    if isinstance(expr, Divides):
        d = _positive_divisor(evaluate(expr.divisor, env), expr.divisor)
        return evaluate(expr.value, env) % d == 0
    if isinstance(expr, BoolOp):
        vals = [evaluate(a, env) for a in expr.args]
        return all(vals) if expr.op == "and" else any(vals)
    if isinstance(expr, Not):
        return not evaluate(expr.arg, env)
    raise TypeError(f"not an expression: {expr!r}")


def variables(expr: IntExpr | BoolExpr) -> set[str]:
    """Names of every variable ``expr`` reads."""
    if isinstance(expr, (IntVar, BoolVar)):
        return {expr.name}
    if isinstance(expr, (Const, BoolConst)):
        return set()
    if isinstance(expr, (BinOp, Cmp)):
        return variables(expr.a) | variables(expr.b)
    if isinstance(expr, Divides):
        return variables(expr.divisor) | variables(expr.value)
    if isinstance(expr, Table):
        return {i.name for i in expr.inputs}
    if isinstance(expr, IfThenElse):
        return variables(expr.cond) | variables(expr.then) | variables(expr.other)
    if isinstance(expr, BoolOp):
        out: set[str] = set()
        for a in expr.args:
            out |= variables(a)
        return out
    if isinstance(expr, Not):
        return variables(expr.arg)
    raise TypeError(f"not an expression: {expr!r}")


# --------------------------------------------------------------------------
# Compiled evaluation: the same semantics as ``evaluate``, as one Python
# function per expression (about ten times faster; used by the checker and the
# brute-force baselines).
# --------------------------------------------------------------------------

def _checked_div(a: int, b: int) -> int:
    if b < 1:
        raise ZeroDivisionError(f"divisor evaluated to {b}; rules must keep divisors >= 1")
    return a // b


def _checked_mod(a: int, b: int) -> int:
    if b < 1:
        raise ZeroDivisionError(f"divisor evaluated to {b}; rules must keep divisors >= 1")
    return a % b


def _source(e: IntExpr | BoolExpr) -> str:
    if isinstance(e, (IntVar, BoolVar)):
        return f"env[{e.name!r}]"
    if isinstance(e, (Const, BoolConst)):
        return repr(e.value)
    if isinstance(e, BinOp):
        a, b = _source(e.a), _source(e.b)
        if e.op in ("+", "-", "*"):
            return f"({a} {e.op} {b})"
        if e.op == "//":
            return f"_div({a}, {b})"
        if e.op == "%":
            return f"_mod({a}, {b})"
        return f"{e.op}({a}, {b})"
    if isinstance(e, IfThenElse):
        return f"({_source(e.then)} if {_source(e.cond)} else {_source(e.other)})"
    if isinstance(e, Table):
        _TABLE_FNS[id(e)] = e
        args = ", ".join(f"env[{i.name!r}]" for i in e.inputs)
        return f"int(_tables[{id(e)}].fn({args}))"
    if isinstance(e, Cmp):
        return f"({_source(e.a)} {e.op} {_source(e.b)})"
    if isinstance(e, Divides):
        return f"(_mod({_source(e.value)}, {_source(e.divisor)}) == 0)"
    if isinstance(e, BoolOp):
        joiner = " and " if e.op == "and" else " or "
        return "(" + joiner.join(f"bool({_source(a)})" for a in e.args) + ")"
    if isinstance(e, Not):
        return f"(not {_source(e.arg)})"
    raise TypeError(f"not an expression: {e!r}")


_TABLE_FNS: dict[int, Table] = {}


def compile_python(expr: IntExpr | BoolExpr):
    """A function ``env -> value`` equal to ``evaluate(expr, env)``."""
    code = f"lambda env: {_source(expr)}"
    scope = {"_div": _checked_div, "_mod": _checked_mod, "min": min, "max": max, "bool": bool, "int": int,
             "_tables": _TABLE_FNS}
    return eval(code, scope)  # noqa: S307

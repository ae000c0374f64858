"""The expression layer: evaluate, compiled Python and CP-SAT agree on random expressions."""

import itertools

from hypothesis import given, settings, strategies as st
from ortools.sat.python import cp_model

from rlbatch_solver.rules.expr import (
    BoolVar, IntVar, compile_python, divides, evaluate, exactly_one, if_then_else, maximum, minimum, variables,
)
from rlbatch_solver.solver.compile import Compiler

X, Y, Z = IntVar("x"), IntVar("y"), IntVar("z")
F = BoolVar("f")
DOMAINS = {"x": [0, 1, 2, 3, 5, 6], "y": [1, 2, 3, 4], "z": [1, 2, 6, 8], "f": [False, True]}


def int_exprs():
    leaves = st.sampled_from([X, Y, Z]) | st.integers(0, 4).map(lambda c: X * 0 + c)
    return st.recursive(
        leaves,
        lambda sub: st.one_of(
            st.tuples(sub, sub).map(lambda t: t[0] + t[1]),
            st.tuples(sub, sub).map(lambda t: t[0] * t[1]),
            st.tuples(sub, st.sampled_from([Y, Z])).map(lambda t: t[0] // t[1]),
            st.tuples(sub, st.sampled_from([Y, Z])).map(lambda t: t[0] % t[1]),
            st.tuples(sub, sub).map(lambda t: minimum(t[0], t[1])),
            st.tuples(sub, sub).map(lambda t: maximum(t[0], t[1])),
            st.tuples(sub, sub).map(lambda t: if_then_else(F, t[0], t[1])),
        ),
        max_leaves=5,
    )


def bool_exprs():
    atoms = st.one_of(
        st.tuples(int_exprs(), int_exprs(), st.sampled_from(["<=", "<", ">=", ">", "eq", "ne"])).map(
            lambda t: getattr(t[0], {"<=": "__le__", "<": "__lt__", ">=": "__ge__", ">": "__gt__"}.get(t[2], t[2]))(t[1])
        ),
        st.tuples(st.sampled_from([Y, Z]), int_exprs()).map(lambda t: divides(t[0], t[1])),
        st.just(F),
    )
    return st.recursive(
        atoms,
        lambda sub: st.one_of(
            st.tuples(sub, sub).map(lambda t: t[0] & t[1]),
            st.tuples(sub, sub).map(lambda t: t[0] | t[1]),
            sub.map(lambda a: ~a),
            st.tuples(sub, sub).map(lambda t: t[0].implies(t[1])),
            st.tuples(sub, sub, sub).map(lambda t: exactly_one(*t)),
        ),
        max_leaves=4,
    )


def _sat_set(expr):
    """Assignments of DOMAINS under which CP-SAT says ``expr`` holds."""
    model = cp_model.CpModel()
    comp = Compiler(model)
    names = sorted(DOMAINS)
    for n in names:
        if n == "f":
            comp.add_bool(n, DOMAINS[n])
        else:
            comp.add_int(n, DOMAINS[n])
    comp.enforce(comp.lit(expr))
    out = set()
    for combo in itertools.product(*(DOMAINS[n] for n in names)):
        m2 = model.Clone()
        for n, v in zip(names, combo):
            var = comp.bools.get(n) if n == "f" else comp.ints[n][0]
            m2.Add(var == int(v))
        s = cp_model.CpSolver()
        s.parameters.num_workers = 1
        if s.Solve(m2) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            out.add(combo)
    return out


@settings(max_examples=40, deadline=None)
@given(bool_exprs())
def test_cpsat_matches_evaluate(expr):
    names = sorted(DOMAINS)
    want = set()
    fn = compile_python(expr)
    for combo in itertools.product(*(DOMAINS[n] for n in names)):
        env = dict(zip(names, combo))
        value = evaluate(expr, env)
        assert fn(env) == value
        if value:
            want.add(combo)
    assert _sat_set(expr) == want


@settings(max_examples=100, deadline=None)
@given(int_exprs(), st.sampled_from(DOMAINS["x"]), st.sampled_from(DOMAINS["y"]), st.sampled_from(DOMAINS["z"]),
       st.booleans())
def test_compiled_python_matches_evaluate(expr, x, y, z, f):
    env = {"x": x, "y": y, "z": z, "f": f}
    assert compile_python(expr)(env) == evaluate(expr, env)


def test_variables_and_divides():
    e = divides(Y, X * Z) & (X <= 3)
    assert variables(e) == {"x", "y", "z"}
    assert evaluate(e, {"x": 2, "y": 4, "z": 2}) is True
    assert evaluate(e, {"x": 3, "y": 4, "z": 2}) is False


def test_division_by_zero_is_refused():
    import pytest

    with pytest.raises(ZeroDivisionError):
        evaluate(X // Y, {"x": 1, "y": 0})


def test_table_expression_matches_function():
    from rlbatch_solver.rules.expr import Table

    t = Table("cost", (X, Y, F), lambda x, y, f: x * 7 + y * y + (100 if f else 0))
    e = (t <= 40) & divides(Y, X)
    names = sorted(DOMAINS)
    want = set()
    for combo in itertools.product(*(DOMAINS[n] for n in names)):
        env = dict(zip(names, combo))
        assert compile_python(t)(env) == evaluate(t, env)
        if evaluate(e, env):
            want.add(combo)
    assert want and _sat_set(e) == want

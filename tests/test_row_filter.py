"""Cost-table rows that break an enforced rule are left out (rlbatch_solver/solver/row_filter.py): the answer must not
change, and the tables must shrink where the rules tie their inputs (the split layouts of ms-swift and OpenRLHF, whose
tables were priced over GPU and engine counts the rules then refused: 1.2-2x fewer cost-model calls)."""

from __future__ import annotations

import pytest

from rlbatch_solver.commands.recommend import recommend
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.rules.base import Derived, Rule, RuleSet, Stage, VarSpec
from rlbatch_solver.rules.expr import IntVar, Table
from rlbatch_solver.scenario import Scenario
from rlbatch_solver.solver import compile as compile_module
from rlbatch_solver.solver.row_filter import RowFilter


def _split_layout(framework: str, gpus: int):
    sc = Scenario(framework=framework, gpu="h100", gpus=gpus, model="qwen2.5-7b", placement="split")
    return next(lay for lay in get_framework(framework).placements(sc, []) if lay.placement == "split")


def _count_rows(monkeypatch, enabled: bool) -> list[int]:
    """Rows priced per table while the solves run (with or without the filter)."""
    counts: list[int] = []
    original = compile_module.Compiler._table

    def counting(self, e):
        if not enabled:
            self.row_filter = None
        calls = [0]
        fn = e.fn

        def priced(*args):
            calls[0] += 1
            return fn(*args)

        result = original(self, Table(e.name, e.inputs, priced))
        counts.append(calls[0])
        return result

    monkeypatch.setattr(compile_module.Compiler, "_table", counting)
    return counts


@pytest.mark.parametrize("framework,gpus", [("swift", 32), ("openrlhf", 32), ("verl-megatron", 16), ("verl", 16)])
def test_same_answer_from_fewer_rows(framework, gpus, monkeypatch):
    layout = _split_layout(framework, gpus)
    rows_without = _count_rows(monkeypatch, enabled=False)
    without = recommend(layout.scenario, top=1, time_limit_s=60)
    monkeypatch.undo()
    rows_with = _count_rows(monkeypatch, enabled=True)
    with_filter = recommend(layout.scenario, top=1, time_limit_s=60)
    assert without.status == with_filter.status == "optimal"
    assert with_filter.best.objective == without.best.objective
    assert with_filter.best.step_time_s == pytest.approx(without.best.step_time_s)
    assert sum(rows_with) < 0.9 * sum(rows_without), (sum(rows_with), sum(rows_without))


def test_only_enforced_rules_on_table_inputs_and_fixed_values_filter():
    a, b, c = IntVar("a"), IntVar("b"), IntVar("c")
    priced = Table("cost", (a, b), lambda x, y: x * y)
    specs = [VarSpec("a", "a"), VarSpec("b", "b"), VarSpec("c", "c"), VarSpec("o", "o", optional=True)]
    rs = RuleSet("test", "0", {v.name: v for v in specs}, [Derived("cost", priced)],
                 [Rule("sum", (a + b).eq(8), "a + b = 8", Stage.SEARCH, "test"),
                  Rule("c_big", c >= a, "c >= a", Stage.SEARCH, "test"),
                  Rule("priced", IntVar("cost") <= 12, "cost <= 12", Stage.SEARCH, "test"),
                  Rule("optional", IntVar("o") >= a, "o >= a", Stage.SEARCH, "test")])
    domains = {"a": [1, 2, 4, 6], "b": [2, 4, 6, 7], "c": [1, 2, 3, 4, 5, 6], "o": [None, 3]}
    keep = RowFilter(rs, domains, ["sum", "c_big", "priced", "optional"]).predicate(["a", "b"])
    rows = [(x, y) for x in domains["a"] for y in domains["b"] if keep({"a": x, "b": y})]
    assert rows == [(1, 7), (2, 6), (4, 4), (6, 2)]  # only a + b = 8 judges: c is searched, cost is a table
    assert RowFilter(rs, domains, ["c_big"]).predicate(["a", "b"]) is None  # not enforced here: no filter
    fixed = RowFilter(rs, {**domains, "c": [3]}, ["c_big"]).predicate(["a", "b"])
    assert [x for x in domains["a"] if fixed({"a": x, "b": 2})] == [1, 2]  # c fixed at 3: c >= a judges the row

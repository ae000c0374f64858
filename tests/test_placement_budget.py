"""``recommend --placement`` under the command's one time limit (commands/placement.py): every layout's solves end by
the command's deadline, however little is left when a layout starts; a layout that runs past its share (building its
tables, pricing its answers: not bounded by its solves' limits) is held back from the next ones' shares; the answer
names the layouts the time left unsolved or unproven. Checked on a clock of the test's own (test_recommend_budget.py),
which only the solves move, so nothing here depends on the machine's speed or load."""

from types import SimpleNamespace

import pytest

import rlbatch_solver.deadline as deadline_module
from rlbatch_solver.commands.placement import PlacementOption, PlacementSummary, recommend_placement
from rlbatch_solver.commands.recommend import keep_algorithm_batch, recommend
from rlbatch_solver.deadline import Deadline

from test_recommend import small_scenario
from test_recommend_budget import assert_within, worst_case_clock  # noqa: F401 - a fixture

PLACED = small_scenario(gpus=8, placement="auto")  # colocated, and five splits of 8 GPUs


@pytest.mark.parametrize("limit_s", [0.8, 4.0])
def test_every_layouts_solves_end_by_the_commands_deadline(worst_case_clock, limit_s):  # noqa: F811
    """Before, each layout was given at least a second of its own (0.8 s left: a second anyway) and counted it from its
    own start, past the command's deadline."""
    clock, solves = worst_case_clock
    report = recommend(PLACED, top=3, time_limit_s=limit_s)
    assert_within(limit_s, clock, solves)
    assert report.placement is not None and report.placement.options


def test_a_layout_that_ran_past_its_share_is_held_back_from_the_next(worst_case_clock):  # noqa: F811
    """Each layout spends 0.4 s past its solves (the clock moved after them): the next layouts' shares leave that
    much, so the last one still ends by the deadline (before, it ended 0.4 s past it)."""
    clock, solves = worst_case_clock
    limit_s, extra = 8.0, 0.4
    ends = []

    def slow_layout(scenario, **kwargs):
        report = recommend(scenario, **kwargs)
        clock[0] += extra
        ends.append(clock[0])
        return report

    scenario, _, _ = keep_algorithm_batch(PLACED)
    recommend_placement(scenario, top=3, deadline=Deadline(limit_s), extra_gpus=None, solver_workers=2,
                        recommend_one=slow_layout)
    assert len(ends) >= 2 and all(end <= limit_s + 1e-9 for end in ends), ends
    assert_within(limit_s, clock, solves)


def _option(label: str, proven: bool | None) -> PlacementOption:
    best = None if proven is None else SimpleNamespace(proven=proven, objective=1.0)
    return PlacementOption("split", label, SimpleNamespace(best=best, status="infeasible" if best is None else "x",
                                                           conflict=None, space=None))


def test_the_answer_names_the_layouts_not_proven_or_not_solved(monkeypatch):
    """Before, only counts ("1 layout not solved"): now which ones, in the text and the JSON."""
    monkeypatch.setattr(deadline_module, "now", lambda: 0.0)
    summary = PlacementSummary("auto", [_option("colocated on 8 GPUs", True), _option("2 trainer + 6 rollout", False)],
                               starved=["4 trainer + 4 rollout", "6 trainer + 2 rollout"])
    scope = summary.scope()
    assert "(1 proven; not proven: 2 trainer + 6 rollout)" in scope
    assert "2 layouts not solved, the time ran out (raise --time-limit): 4 trainer + 4 rollout, 6 trainer + 2 rollout" \
        in scope
    assert not summary.proven
    unsolved = PlacementSummary("auto", [], starved=["4 trainer + 4 rollout"])
    assert unsolved.to_dict()["layouts_out_of_time"] == ["4 trainer + 4 rollout"]


def test_pricing_the_cost_tables_stops_at_the_deadline(monkeypatch):
    """A layout's model is built inside its share: pricing a cost table's rows (one cost-model call each, not bounded
    by a solve's limit) looks at the deadline every few rows, and a solve whose time went there answers "unknown"
    without solving (before, the tables were priced to the end and the solve ran after the deadline). The deadline
    passes at every point of the pricing in turn: in the rules' tables, in the objective's (``recommend --time-limit
    0.5`` once ended in a traceback there)."""
    from ortools.sat.python import cp_model

    from rlbatch_solver.api import prepare
    from rlbatch_solver.solver.optimize import optimize

    fw, card, gpu, space, spec, terms, ruleset = prepare(small_scenario(gpus=8))
    clock = [0.0]

    def ticking():  # each look at the clock moves it 10 ms: the deadline passes while the tables are priced
        clock[0] += 0.01
        return clock[0]

    monkeypatch.setattr(deadline_module, "now", ticking)
    solved, real = [], cp_model.CpSolver.Solve
    monkeypatch.setattr(cp_model.CpSolver, "Solve", lambda self, *a, **k: solved.append(1) or real(self, *a, **k))
    runs_that_solved = 0
    for limit_s in [k / 100 for k in range(5, 300)]:  # one more look at the clock each: every table's rows in turn
        solved.clear()
        res = optimize(ruleset, space.domains, terms.time_us_per_sample, time_limit_s=limit_s)  # never a raise
        if not solved:  # stopped while pricing
            assert res.status == "unknown" and not res.ranked
        runs_that_solved += bool(solved)
        if runs_that_solved == 3:  # past the pricing
            break
    assert runs_that_solved == 3

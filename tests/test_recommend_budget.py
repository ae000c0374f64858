"""recommend's --time-limit is one budget for the whole command (deadline.py): every CP-SAT solve it runs (the first,
its tie, the runners-up, the host-RAM re-solves, the headroom solve, the conflict explained when none fits) has a time
limit, and that limit is what is left of the command's budget. Checked without timing anything: the deadline reads
a clock of the test's own, which only the solves move, each by the whole of its limit (the worst case: every solve
runs out its time) or by a part of it (so that the later steps run too). Wall-clock times of the real command: benchmarks/bench_time_limit.py."""

import math

import pytest
from ortools.sat.python import cp_model

import rlbatch_solver.deadline as deadline_module
from rlbatch_solver.commands.recommend import recommend
from rlbatch_solver.scenario import Scenario
from rlbatch_solver.solver.optimize import optimize

from test_recommend import small_scenario


@pytest.fixture(params=[1.0, 0.3], ids=["whole-limit", "part-limit"])
def worst_case_clock(monkeypatch, request):
    """(clock, solves): ``clock[0]`` the test's time; ``solves`` the (time it started, its limit) of every solve;
    each solve moves the clock by the fixture's share of its limit."""
    clock, solves = [0.0], []
    monkeypatch.setattr(deadline_module, "now", lambda: clock[0])
    real = cp_model.CpSolver.Solve

    def solve(self, *args, **kwargs):
        limit = self.parameters.max_time_in_seconds
        solves.append((clock[0], limit))
        status = real(self, *args, **kwargs)
        clock[0] += limit * request.param
        return status

    monkeypatch.setattr(cp_model.CpSolver, "Solve", solve)
    clock.append(request.param)
    return clock, solves


def assert_within(limit_s, clock, solves):
    assert solves, "no solve ran"
    for started, limit in solves:
        assert math.isfinite(limit), "a solve without a time limit"
        assert started + limit <= limit_s + 1e-9, (started, limit, solves)
    assert clock[0] <= limit_s + 1e-9


@pytest.mark.parametrize("case", [
    dict(scenario=small_scenario(), top=5),  # first solve, ties, the band or the runners-up, headroom
    # the node's RAM as a constraint: each config that does not fit is excluded and the search solved again
    dict(scenario=Scenario(framework="swift", gpu="a100-80gb", gpus=8, model="qwen2.5-7b", response_length=8192,
                           host_mem_gib=64), top=3),
    # nothing fits: the conflict explained, then the least memory of each phase
    dict(scenario=small_scenario(model="qwen2.5-3b", gpus=2), top=5),
])
def test_every_solve_of_a_recommend_gets_what_is_left_of_its_time_limit(worst_case_clock, case):
    clock, solves = worst_case_clock
    report = recommend(case["scenario"], top=case["top"], time_limit_s=6.0)
    assert_within(6.0, clock, solves)
    if not report.choices:
        assert report.conflict is not None or report.status == "unknown"
    if clock[1] < 1 and report.choices:
        assert len(solves) >= 2  # the budget was shared, not spent on one solve


def test_a_deadline_started_before_the_call_counts_the_time_already_spent(worst_case_clock):
    from rlbatch_solver.deadline import Deadline

    clock, solves = worst_case_clock
    deadline = Deadline(6.0)
    clock[0] = 2.5  # reading the input, building the scenario
    recommend(small_scenario(), top=3, time_limit_s=6.0, deadline=deadline)
    assert solves[0][1] <= 3.5 + 1e-9
    assert_within(6.0, clock, solves)


def test_an_answer_after_an_unproven_one_is_not_called_proven(monkeypatch):
    """The runners-up are bounded by the last answer's objective only when it was proven: after a first answer the
    time limit cut short, a later OPTIMAL status proves nothing about the order."""
    real = cp_model.CpSolver.Solve
    calls = []

    def first_unproven(self, *args, **kwargs):
        status = real(self, *args, **kwargs)
        calls.append(status)
        return cp_model.FEASIBLE if len(calls) == 1 and status == cp_model.OPTIMAL else status

    from rlbatch_solver.api import prepare

    fw, card, gpu, space, spec, terms, ruleset = prepare(small_scenario())
    monkeypatch.setattr(cp_model.CpSolver, "Solve", first_unproven)
    res = optimize(ruleset, space.domains, terms.time_us_per_sample, top=3, time_limit_s=30)
    assert len(res.ranked) == 3 and calls[1] == cp_model.OPTIMAL  # the second solve proved its own optimum
    assert [r.status for r in res.ranked] == ["feasible"] * 3 and not res.proven
    objectives = [r.objective for r in res.ranked]
    assert objectives == sorted(objectives)


def test_the_budget_counts_from_the_process_start_only_under_the_entry_point(monkeypatch):
    """``rlbatch recommend`` (cli.main) counts the interpreter's start and the imports; a command run in-process (the
    tests' CliRunner, a server, long after the process began) counts from its own start."""
    from rlbatch_solver.commands import entry

    monkeypatch.setattr(entry, "_PROCESS_START", [])
    monkeypatch.setattr(entry, "started", lambda: 123.0)
    monkeypatch.setattr(entry, "process_started", lambda: 7.0)
    assert entry.command_started() == 123.0
    entry.mark_process_start()
    assert entry.command_started() == 7.0


def test_a_process_a_shell_execs_after_other_work_counts_from_its_own_start():
    """``bash -c 'pip install . && rlbatch recommend'`` execs rlbatch in the shell's process, whose start /proc gives:
    the install's minutes were counted against --time-limit, and the README's first command answered "none found
    within the time limit" (rc 1). The age is bounded by the CPU time the process has used."""
    import shutil
    import subprocess
    import sys

    if shutil.which("bash") is None or not __import__("os").path.exists("/proc/self/stat"):
        pytest.skip("needs bash and Linux's /proc")
    probe = ("import time; from rlbatch_solver.commands.entry import process_started; "
             "print(time.monotonic() - process_started())")
    # the shell spends 2 s before it execs the interpreter (its last command)
    out = subprocess.run(["bash", "-c", f"sleep 2 && {sys.executable} -c '{probe}'"], capture_output=True, text=True,
                         check=True)
    assert 0.0 <= float(out.stdout) < 1.5, out.stdout

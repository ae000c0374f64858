"""The conflicting rules printed when no config fits (solver/explain.py ``conflicting_rules``): the same minimal set
as the method it replaced, found with a fraction of CP-SAT's work, and still found when the first step runs out of
time. Work is CP-SAT's deterministic time (the solver's own count of its work: the same on a loaded machine as on
an idle one, with one worker), not a wall clock; wall times: benchmarks/bench_conflict.py."""

import pytest
from ortools.sat.python import cp_model

import rlbatch_solver.deadline as deadline_module
from rlbatch_solver.commands.recommend import keep_algorithm_batch, prepare
from rlbatch_solver.scenario import Scenario
from rlbatch_solver.solver.explain import conflicting_rules
from rlbatch_solver.solver.model import build_model

MOE_L40S = ["verl.megatron.gpus_divisible_by_expert_parallel", "verl-megatron.memory.rollout"]


@pytest.fixture(scope="module")
def moe_on_l40s():
    """A MoE on 8x L40S on verl-megatron, as recommend searches it: its expert parallelism cannot divide the GPUs
    where the rollout fits."""
    scenario, _, _ = keep_algorithm_batch(Scenario(framework="verl-megatron", model="qwen3-30b-a3b", gpu="l40s",
                                                   gpus=8))
    *_, space, _, _, ruleset = prepare(scenario)
    return ruleset, space.domains


@pytest.fixture
def solves(monkeypatch):
    """Every solve's (assumptions, status, CP-SAT's deterministic time)."""
    seen = []
    real = cp_model.CpSolver.Solve

    def solve(self, model, *args, **kwargs):
        status = real(self, model, *args, **kwargs)
        seen.append((len(model.Proto().assumptions), status, self.ResponseProto().deterministic_time))
        return status

    monkeypatch.setattr(cp_model.CpSolver, "Solve", solve)
    return seen


def holds(ruleset, domains, ids):
    """Whether some config of ``domains`` keeps the error rules ``ids`` (a solve of its own, to the end)."""
    solver = cp_model.CpSolver()
    return solver.Solve(build_model(ruleset, domains, rule_filter=ids).model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def test_the_moe_conflict_is_the_same_minimal_set_for_a_fifth_of_the_work(moe_on_l40s, solves):
    """Before, the assumption solve ran CP-SAT's presolve, whose probing over the cost tables was 7.5 of the 7.6
    deterministic seconds in all (5 s and more of wall time, past a loaded machine's share of --time-limit: "not
    isolated"); without it the same set costs 1.5."""
    ruleset, domains = moe_on_l40s
    conflict = conflicting_rules(ruleset, domains, time_limit_s=60)
    assert conflict.ids == MOE_L40S and conflict.proven_minimal and conflict.status == "infeasible"
    assert sum(work for *_, work in solves) < 3.0, solves
    assert not holds(ruleset, domains, conflict.ids)
    assert all(holds(ruleset, domains, [i for i in conflict.ids if i != rid]) for rid in conflict.ids)


def test_a_sufficient_set_out_of_time_leaves_deletion_over_every_rule(moe_on_l40s, monkeypatch):
    """The assumption solve ends without an answer (a loaded machine, its share spent): every error rule is the
    sufficient set, proven infeasible by one ordinary solve, and the deletion pass still finds a minimal conflict
    (before, "unknown" and no rule named)."""
    ruleset, domains = moe_on_l40s
    real = cp_model.CpSolver.Solve

    def assumptions_time_out(self, model, *args, **kwargs):
        return cp_model.UNKNOWN if model.Proto().assumptions else real(self, model, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "Solve", assumptions_time_out)
    conflict = conflicting_rules(ruleset, domains, time_limit_s=60)
    assert conflict.proven_minimal and conflict.status == "infeasible" and len(conflict.ids) == 2
    monkeypatch.setattr(cp_model.CpSolver, "Solve", real)
    assert not holds(ruleset, domains, conflict.ids)
    assert all(holds(ruleset, domains, [i for i in conflict.ids if i != rid]) for rid in conflict.ids)


@pytest.mark.parametrize("share", [1.0, 0.2])
def test_every_solve_of_the_isolation_ends_within_its_budget(moe_on_l40s, monkeypatch, share):
    """A clock of the test's own that only the solves move (each by ``share`` of its limit): every solve's limit
    ends within the budget, whatever the first step's outcome."""
    ruleset, domains = moe_on_l40s
    clock, limits = [0.0], []
    monkeypatch.setattr(deadline_module, "now", lambda: clock[0])
    real = cp_model.CpSolver.Solve

    def solve(self, model, *args, **kwargs):
        limit = self.parameters.max_time_in_seconds
        limits.append((clock[0], limit))
        # the real search gets ample seconds, so the machine's load decides nothing (a busy machine cut a 0.2 share's
        # solves UNKNOWN): the test's clock alone says how much of the budget each solve took
        self.parameters.max_time_in_seconds = max(limit, 60.0)
        status = real(self, model, *args, **kwargs)
        clock[0] += limit * share
        return status

    monkeypatch.setattr(cp_model.CpSolver, "Solve", solve)
    conflict = conflicting_rules(ruleset, domains, time_limit_s=2.0)
    assert limits and all(start + limit <= 2.0 + 1e-9 for start, limit in limits), limits
    assert conflict.ids  # a conflict named, proven minimal or not


def test_a_set_not_narrowed_in_time_is_not_called_minimal(moe_on_l40s):
    """A conflict whose deletion pass the time limit cut short may hold rules that do not matter: before, it was
    printed as "a set; drop any one and the rest can hold", which only a minimal set earns."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from rlbatch_solver.render import print_conflict
    from rlbatch_solver.solver.explain import Conflict

    ruleset, domains = moe_on_l40s
    rules = [ruleset.rule(i) for i in MOE_L40S]
    for minimal, said in ((True, "a minimal set; drop any one and the rest can hold"),
                          (False, "the time limit ran out before they were narrowed to a minimal set")):
        out = io.StringIO()
        print_conflict(Console(file=out, width=200), Conflict(rules, "infeasible", minimal),
                       SimpleNamespace(domains=domains), None, headed=True)
        assert said in out.getvalue() and ("drop any one" in out.getvalue()) == minimal, out.getvalue()


def test_a_solve_its_share_of_the_seconds_stopped_with_work_left_is_said_cut_short(moe_on_l40s, monkeypatch):
    """Bounded by work (fix.CONFLICT_WORK), the set is the same at any load unless the seconds, the safety net, stop a
    solve first: the assumption solve ending without an answer on its share of the seconds, with its work unspent,
    leaves what another way finds (deletion over every rule, within the work left), so it is said cut short though
    the whole deadline did not run out (before, only the whole deadline running out was). A search its work bound
    ends is not cut."""
    ruleset, domains = moe_on_l40s
    real = cp_model.CpSolver.Solve

    def assumptions_time_out(self, model, *args, **kwargs):  # its seconds spent at once: a real solve, stopped
        if model.Proto().assumptions:
            self.parameters.max_time_in_seconds = 0.0
        return real(self, model, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "Solve", assumptions_time_out)
    conflict = conflicting_rules(ruleset, domains, time_limit_s=60, work=5.0)
    assert conflict.cut_short and conflict.ids != MOE_L40S, conflict  # what the fallback got to, said to be so
    monkeypatch.setattr(cp_model.CpSolver, "Solve", real)
    quiet = conflicting_rules(ruleset, domains, time_limit_s=60, work=5.0)
    assert quiet.ids == MOE_L40S and not quiet.cut_short
    starved = conflicting_rules(ruleset, domains, time_limit_s=60, work=1e-4)  # the work bound ends it: no cut
    assert not starved.cut_short, (starved.status, starved.ids)

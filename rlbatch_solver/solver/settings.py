"""Solver settings shared by every solve (kept free of imports: ortools loads only when a solve runs)."""

DEFAULT_TIME_LIMIT_S = 10.0  # seconds per CP-SAT solve; every answer reports whether it is proven
# CP-SAT threads of recommend's optimizing solves (``solver_workers``; its tie settling and band enumerations run one
# anyway). One: presolve, most of a solve here, runs on one thread whatever the count, and a second worker's search
# only adds CPU (the 64-GPU Megatron MoE of benchmarks/bench_recommend.py: 0.98 to 0.69 CPU s for its first solve;
# ten recommend scenarios, --time-limit 600: the same answers with 1 and 2, 33.1 to 25.9 CPU s, --objective gpus on 16
# H100 12.2 to 7.8). Each solve keeps its time limit and says whether it proved its answer; where a space is hard
# enough for the portfolio to matter, pass more (the answer does not depend on them: recommend.tie_break).
SOLVER_WORKERS = 1


def new_solver(time_limit_s: float, work: float | None = None):
    """A CP-SAT solver with its time limit (every solve has one: a command's solves share its ``--time-limit``,
    deadline.py, so each is given what is left of it) that leaves Ctrl-C to Python. By default CP-SAT catches SIGINT during a solve (it stops the
    search early, and the answer looks like a time-out) and resets SIGINT to the default action when the solve ends
    (ortools/util/sigint.cc: SigintHandler's destructor), so any later Ctrl-C killed the process with no word: a
    sweep lost its summary and a point interrupted mid-solve was recorded as if it had finished.

    ``work``: a limit in CP-SAT's deterministic time (``max_deterministic_time``: work units counted by the search,
    the same on any machine and at any load, where seconds are not): a step whose answer may stop short of proven by
    design (a band of runners-up, a capped alternative) is bounded by it, so the same input prints the same answer
    on a busy machine; the seconds stay as the safety net, and an answer they cut short says it is not proven."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False
    solver.parameters.max_time_in_seconds = max(0.0, float(time_limit_s))
    if work is not None:
        solver.parameters.max_deterministic_time = max(0.0, float(work))
    return solver


def tune_for_optimization(parameters) -> None:
    """Lighter presolve for the cost-model objectives. Their tables give CP-SAT a tight bound from
    the domains alone, so most of a solve went to presolve probing: without it (and with one
    presolve pass) the solves of benchmarks/bench_recommend.py take about half the time (64-GPU
    Megatron MoE: 3.8 s to 1.8 s; OpenRLHF 8 GPUs: 1.0 s to 0.4 s). Only how hard presolve works
    changes; what is proven does not."""
    parameters.cp_model_probing_level = 0
    parameters.max_presolve_iterations = 1

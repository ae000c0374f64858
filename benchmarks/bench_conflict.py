"""Conflict isolation (solver/explain.py): the minimal set of rules printed when no config fits, against the method
it replaced, in this process, on the same spaces.

    python benchmarks/bench_conflict.py [--repeat 3] [--limit 30]

For each scenario whose space has no valid config it prints the wall time of the previous method (the baseline:
one assumption solve with CP-SAT's presolve on, then a deletion pass whose every trial was a model with all rules
relaxed and the kept ones assumed), the current ``conflicting_rules``, their ratio (baseline / current; the best of
``--repeat`` runs of each, run alternately, so both see the same load), and whether both name the same rules and
prove the set minimal. Both get ``--limit`` seconds (far more than either needs: the time each takes to finish).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortools.sat.python import cp_model  # noqa: E402

from rlbatch_solver.commands.recommend import keep_algorithm_batch, prepare, search_gpu_counts  # noqa: E402
from rlbatch_solver.deadline import Deadline  # noqa: E402
from rlbatch_solver.rules.base import Severity  # noqa: E402
from rlbatch_solver.scenario import Scenario  # noqa: E402
from rlbatch_solver.solver.explain import conflicting_rules  # noqa: E402
from rlbatch_solver.solver.model import build_model  # noqa: E402
from rlbatch_solver.solver.settings import new_solver  # noqa: E402

TRIVIAL_S = 0.05
MOE = dict(framework="verl-megatron", model="qwen3-30b-a3b", gpu="l40s", gpus=8)
SCENARIOS = [
    ("verl-megatron MoE 30B-A3B, 8x L40S", Scenario(**MOE)),
    ("  the same, 4K responses", Scenario(**MOE, response_length=4096)),
    ("verl 72B on one RTX 4090", Scenario(framework="verl", model="qwen2.5-72b", gpu="rtx4090", gpus=1)),
    ("verl 3B on 2x RTX 4090, 512+1024", Scenario(framework="verl", model="qwen2.5-3b", gpu="rtx4090", gpus=2, n=4,
                                                 prompt_length=512)),
    ("OpenRLHF 72B on 8x L40S", Scenario(framework="openrlhf", model="qwen2.5-72b", gpu="l40s", gpus=8)),
    ("ms-swift 72B on 4x L40S", Scenario(framework="swift", model="qwen2.5-72b", gpu="l40s", gpus=4)),
    ("TRL 32B on 2x L40S", Scenario(framework="trl", model="qwen2.5-32b", gpu="l40s", gpus=2)),
]


def previous(ruleset, domains, time_limit_s: float):
    """The method before: (rule ids, proven minimal)."""
    deadline = Deadline(time_limit_s)
    built = build_model(ruleset, domains, enforce=False)
    errors = [r for r in built.rules if r.severity is Severity.ERROR]
    broken = [r.id for r in errors if built.rule_lits[r.id] is False]
    if broken:
        return broken, True
    errors = [r for r in errors if built.rule_lits[r.id] is not True]
    built.model.AddAssumptions([built.rule_lits[r.id] for r in errors])
    solver = new_solver(deadline.left())
    solver.parameters.num_workers = 1
    if solver.Solve(built.model) != cp_model.INFEASIBLE:
        return [], False
    core_idx = set(solver.SufficientAssumptionsForInfeasibility())
    keep = [r.id for r in errors if built.rule_lits[r.id].Index() in core_idx]
    minimal, n = True, len(keep)
    for i, rid in enumerate(list(keep)):
        trial = [k for k in keep if k != rid]
        b = build_model(ruleset, domains, enforce=False, rule_filter=trial)
        for k in trial:
            b.compiler.enforce(b.rule_lits[k])
        s = new_solver(deadline.left() / (n - i))
        s.parameters.num_workers = 1
        st = s.Solve(b.model)
        if st == cp_model.INFEASIBLE:
            keep = trial
        elif st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            minimal = False
    return keep, minimal


def current(ruleset, domains, time_limit_s: float):
    c = conflicting_rules(ruleset, domains, time_limit_s=time_limit_s)
    return c.ids, c.proven_minimal


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=30.0)
    a = ap.parse_args()
    print(f"{'scenario':38} {'before':>7} {'after':>7} {'ratio':>6}  same rules, minimal  rules")
    ratios = []
    for label, scenario in SCENARIOS:
        scenario, _, _ = keep_algorithm_batch(scenario)
        scenario = search_gpu_counts(scenario)
        fw, card, gpu, space, spec, terms, ruleset = prepare(scenario)
        timed(build_model, ruleset, space.domains)  # the cost tables priced once, outside both timings
        before, after = [], []
        for _ in range(a.repeat):
            before.append(timed(previous, ruleset, space.domains, a.limit))
            after.append(timed(current, ruleset, space.domains, a.limit))
        (tb, (ids_b, min_b)), (ta, (ids_a, min_a)) = min(before), min(after)
        # under TRIVIAL_S both answer from the fixed values alone (each rule broken on its own): no ratio
        ratio = f"{tb / ta:6.1f}" if tb >= TRIVIAL_S else f"{'-':>6}"
        if tb >= TRIVIAL_S:
            ratios.append(tb / ta)
        same = "yes" if ids_a == ids_b else "NO"
        print(f"{label:38} {tb:7.2f} {ta:7.2f} {ratio}  {same:4} {min_b!s:5}/{min_a!s:5}  {', '.join(ids_a)}"
              + ("" if ids_a == ids_b else f"  (before: {', '.join(ids_b)})"))
    print(f"ratio (before / after) over the scenarios that take a solve: worst {min(ratios):.1f}, best {max(ratios):.1f}")


if __name__ == "__main__":
    main()

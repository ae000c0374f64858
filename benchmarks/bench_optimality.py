"""Optimality: on random small scenarios the CP-SAT optimum equals exhaustive evaluation.

    python benchmarks/bench_optimality.py [--scenarios 50] [--seed 0]

Each scenario draws a GPU type and count, a model, an algorithm, n, lengths and
an objective (time per sample, or memory headroom), over a search space small
enough to evaluate completely (a few thousand configs). Exhaustive evaluation
checks every config with the same rules (memory rules included) and scores it
with the same cost tables; CP-SAT must return the same optimum (gap 0) and
prove it. Prints per scenario: the space, both optima, CP-SAT's time to prove,
the exhaustive time, and the ratio; then the totals.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlbatch_solver.api import prepare  # noqa: E402
from rlbatch_solver.scenario import Scenario  # noqa: E402
from rlbatch_solver.solver.exhaustive import best_by_exhaustion  # noqa: E402
from rlbatch_solver.solver.optimize import optimize  # noqa: E402

AR = "actor_rollout_ref"
GPUS = ["rtx4090", "l40s", "a100-40gb", "a100-80gb", "h100", "h200"]
MODELS = ["qwen2.5-0.5b", "qwen2.5-1.5b", "qwen3-1.7b", "llama3.2-1b", "qwen2.5-3b", "qwen2.5-7b"]
ALGOS = ["grpo", "dapo", "ppo", "rloo", "adpo"]


def random_scenario(rnd: random.Random) -> Scenario:
    search = {
        "data.train_batch_size": rnd.sample([16, 32, 64, 128], 2),
        f"{AR}.actor.ppo_mini_batch_size": rnd.sample([8, 16, 32], 2),
        f"{AR}.actor.ppo_micro_batch_size_per_gpu": [1, 2, 4, 8],
        f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": rnd.sample([2, 4, 8, 16], 2),
        f"{AR}.rollout.tensor_model_parallel_size": [1, 2],
        f"{AR}.rollout.gpu_memory_utilization": rnd.sample([0.3, 0.4, 0.5, 0.6, 0.7], 2),
        f"{AR}.model.enable_gradient_checkpointing": [True, False],
        f"{AR}.actor.fsdp_config.param_offload": [False, True],
        f"{AR}.actor.ulysses_sequence_parallel_size": [1, 2],
    }
    algo = rnd.choice(ALGOS)
    return Scenario(
        framework="verl", gpu=rnd.choice(GPUS), gpus=rnd.choice([1, 2, 4, 8]), model=rnd.choice(MODELS),
        algorithm=algo, n=1 if algo == "ppo" else rnd.choice([4, 8]),
        prompt_length=rnd.choice([256, 512, 1024]), response_length=rnd.choice([512, 1024, 2048]),
        search=search, objective=rnd.choice(["time", "time", "memory-headroom"]),
    )



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(f"{'#':>3} {'scenario':44} {'configs':>7} {'optimum':>9} {'cp-sat':>9} {'proven':>6} "
          f"{'cp-sat s':>8} {'exh. s':>7} {'ratio':>6}")
    gaps, unproven, cp_total, ex_total = 0, 0, 0.0, 0.0
    for i in range(args.scenarios):
        sc = random_scenario(rnd)
        fw, card, gpu, space, spec, terms, ruleset = prepare(sc)
        maximize = sc.objective == "memory-headroom"
        objective = terms.headroom_mib if maximize else terms.time_us_per_sample
        start = time.perf_counter()
        res = optimize(ruleset, space.domains, objective, maximize=maximize, top=1, time_limit_s=60)
        cp_s = time.perf_counter() - start
        start = time.perf_counter()
        best, count = best_by_exhaustion(ruleset, space, objective, maximize)
        ex_s = time.perf_counter() - start
        got = res.ranked[0].objective if res.ranked else None
        if got != best:
            gaps += 1
        if res.ranked and not res.proven:
            unproven += 1
        cp_total += cp_s
        ex_total += ex_s
        label = f"{sc.algorithm} {sc.model} {sc.gpus}x{sc.gpu} {sc.objective}"
        print(f"{i + 1:3d} {label:44} {count:7d} {str(best):>9} {str(got):>9} {str(res.proven if got else '-'):>6} "
              f"{cp_s:8.3f} {ex_s:7.2f} {ex_s / cp_s:5.0f}x", flush=True)
    print(f"\n{args.scenarios} scenarios: {gaps} with a gap (target 0), {unproven} unproven; "
          f"CP-SAT {cp_total:.1f} s in all, exhaustive {ex_total:.1f} s ({ex_total / cp_total:.0f}x)")
    if gaps:
        sys.exit(1)


if __name__ == "__main__":
    main()

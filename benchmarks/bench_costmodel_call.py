"""One cost-model estimate: the solver's tables call it thousands of times, so its cost per call matters.

    python benchmarks/bench_costmodel_call.py [--calls 300] [--repeat 5]

Scenario: the seed's 4x RTX 4090 GRPO plan (Qwen2.5-1.5B, prompt 880, response 1280, 512 samples, a critic) as the
tests build it. Times ``estimate_memory(plan).peak("actor_update")`` plus ``estimate_time(plan).total`` (every phase)
per call, and, in the same process as the baseline, building the plan itself (``Plan.of``): the ratio is what one
estimate costs in plan builds, which does not move with the machine's load as seconds do. Target: about 50 us a call
on a laptop (the tables' budget); prints the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlbatch_solver.catalog.gpus import load_gpu  # noqa: E402
from rlbatch_solver.catalog.models import load_model  # noqa: E402
from rlbatch_solver.costmodel.memory import estimate_memory  # noqa: E402
from rlbatch_solver.costmodel.plan import Plan  # noqa: E402
from rlbatch_solver.costmodel.time import estimate_time  # noqa: E402


def seed_values() -> dict:
    return dict(
        model=load_model("qwen2.5-1.5b"), gpu=load_gpu("rtx4090"), n_gpus=4, gpus_per_node=4, prompt_len=880,
        response_len=1280, samples_per_step=512, mini_batches=2, train_micro=4, train_token_budget=None,
        logprob_micro=4, logprob_token_budget=None, sp=1, shard_degree=4, zero_stage=3, grad_ckpt=True,
        param_offload=False, optimizer_offload=False, remove_padding=True, entropy_chunking=False,
        entropy_checkpointing=False, need_ref=True, need_critic=True, critic_micro=4, engine="vllm", rollout_tp=1,
        gpu_memory_utilization=0.4, free_cache_engine=True, enforce_eager=False, max_num_seqs=1024,
        max_num_batched_tokens=8192)


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    values = seed_values()
    plan = Plan.of(**values)
    estimate_memory(plan), estimate_time(plan)  # warm caches

    def estimate() -> None:
        estimate_memory(plan).peak("actor_update")
        estimate_time(plan).total

    runs = [(per_call(lambda: Plan.of(**values), args.calls), per_call(estimate, args.calls))
            for _ in range(args.repeat)]
    base = statistics.median(b for b, _ in runs)
    cost = statistics.median(c for _, c in runs)
    print(f"plan build (baseline): {base * 1e6:.1f} us; one estimate (memory peak + every phase's time): "
          f"{cost * 1e6:.1f} us = {cost / base:.1f}x the baseline; target about 50 us on a laptop")


if __name__ == "__main__":
    main()

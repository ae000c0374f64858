"""``enumerate`` with memory (a GPU and a model) against the rules-only enumeration of the same space, in one process.

    python benchmarks/bench_enumerate_memory.py [--repeat 3]

The README's seed scenario (verl GRPO, Qwen2.5-1.5B, 4x RTX 4090, prompt 880, response 1280, n 8): the rules-only
listing, then the listing of the configs whose every phase fits. Prints each one's count and wall time (the command
as a user runs it: the search space, the cost tables, the solve, the per-config headroom), the best of ``--repeat``
runs, and their ratio; the target is under 5 s with memory (docs/benchmarks.md section 8).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rlbatch_solver as rb  # noqa: E402
from rlbatch_solver.scenario import Scenario  # noqa: E402

SEED = dict(framework="verl", gpus_per_node=4, model="qwen2.5-1.5b", algorithm="grpo", n=8, prompt_length=880,
            response_length=1280)
TARGET_S = 5.0


def timed(gpu: str | None) -> tuple[float, object]:
    sc = Scenario(**SEED, gpu=gpu)
    sc.validate()
    t0 = time.perf_counter()
    report = rb.enumerate(sc, time_limit_s=60)
    return time.perf_counter() - t0, report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rules = min((timed(None) for _ in range(args.repeat)), key=lambda t: t[0])
    memory = min((timed("rtx4090") for _ in range(args.repeat)), key=lambda t: t[0])
    print(f"{'listing':<28} {'configs':>8} {'complete':>9} {'wall s':>8}")
    print(f"{'rules only':<28} {rules[1].count:>8} {str(rules[1].complete):>9} {rules[0]:>8.2f}")
    print(f"{'fits 4x RTX 4090 (memory)':<28} {memory[1].count:>8} {str(memory[1].complete):>9} {memory[0]:>8.2f}")
    print(f"memory / rules-only time: {memory[0] / rules[0]:.2f}x; target under {TARGET_S:.0f} s with memory: "
          f"{'met' if memory[0] < TARGET_S else 'MISSED'}")


if __name__ == "__main__":
    main()

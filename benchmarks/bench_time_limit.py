"""recommend's --time-limit bounds the whole command: process start to printed answer, each a fresh process.

    python benchmarks/bench_time_limit.py [--limits 3,10] [--repeat 1]

For each scenario and limit it prints the wall time of the real command line (``python -m rlbatch_solver.cli
recommend ... --time-limit T``), its ratio to the limit (target: under 1, the margin the command keeps for
printing and exiting: commands/entry.py EXIT_RESERVE_S) and how the answer stands (proven or not). The scenarios
are the ones whose solves add up: a MoE on GPUs where nothing fits (the conflict explained after the search), the
64-GPU Megatron MoE (runners-up, ties, headroom), the layouts of --placement auto (one solve each, in turn) and the
node's RAM as a constraint (host re-solves).
The unit test of the same budget, without timing: tests/test_recommend_budget.py.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MOE = ["--framework", "verl-megatron", "--model", "qwen3-30b-a3b"]
SCENARIOS = [
    ("MoE on 8x L40S: nothing fits, the conflict explained", [*MOE, "--gpu", "l40s", "--gpus", "8"]),
    ("MoE on 64x H100", [*MOE, "--gpu", "h100", "--gpus", "64"]),
    ("MoE on 16x A100 80GB, 128 GiB of host RAM", [*MOE, "--gpu", "a100-80gb", "--gpus", "16", "--host-mem", "128"]),
    ("verl-megatron 7B on 16x H100, --placement auto", ["--framework", "verl-megatron", "--model", "qwen2.5-7b",
                                                         "--gpu", "h100", "--gpus", "16", "--n", "8",
                                                         "--response-len", "4096", "--placement", "auto"]),
    ("swift 7B on 8x A100 80GB, 64 GiB of host RAM", ["--framework", "swift", "--model", "qwen2.5-7b", "--gpu",
                                                      "a100-80gb", "--gpus", "8", "--response-len", "8192",
                                                      "--host-mem", "64"]),
]


def run(args: list[str], limit: float) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", "recommend", *args, "--time-limit", str(limit)],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    line = next((x for x in proc.stdout.splitlines() if x.startswith("objective:")), f"exit {proc.returncode}")
    return wall, line.split(" · ")[1] if " · " in line else line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limits", default="3,10", help="--time-limit values, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    limits = [float(x) for x in a.limits.split(",")]
    worst = 0.0
    print(f"{'scenario':58} {'limit':>6} {'wall':>7} {'ratio':>6}  answer")
    for label, args in SCENARIOS:
        for limit in limits:
            for _ in range(a.repeat):
                wall, answer = run(args, limit)
                worst = max(worst, wall / limit)
                print(f"{label:58} {limit:6.1f} {wall:7.2f} {wall / limit:6.2f}  {answer}")
    print(f"worst wall / limit: {worst:.2f} (target < 1)")


if __name__ == "__main__":
    main()

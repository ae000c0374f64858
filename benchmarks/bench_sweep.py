"""Sweep throughput: points per second with 1 and 2 local processes.

    python benchmarks/bench_sweep.py [--grid docs/examples/grid-qwen2.5-7b-grpo.yaml] [--limit 12]

Runs the same grid (its first ``--limit`` points) twice into fresh result files,
with one worker process and with two, and prints points/s for each and the
speed-up of two over one. Both runs must give the same status and tokens/s per
point (asserted; among configs of equal time the solver may pick either). On a 2-core machine the ideal speed-up is 2x; the CP-SAT solves of
each point use up to 2 threads, so part of the second core is already busy in
the one-process run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlbatch_solver.sweep.grid import Grid, load_grid  # noqa: E402
from rlbatch_solver.sweep.runner import read_results, run_sweep  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default=str(ROOT / "docs" / "examples" / "grid-qwen2.5-7b-grpo.yaml"))
    ap.add_argument("--limit", type=int, default=12, help="points of the grid to run")
    args = ap.parse_args()
    grid = load_grid(args.grid)
    grid = Grid(grid.points[: args.limit])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
          f"{platform.python_version()}")
    shown = Path(args.grid).resolve()
    shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown
    print(f"grid: {shown}, {len(grid.points)} points")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            out = Path(tmp) / f"w{workers}.jsonl"
            start = time.perf_counter()
            summary = run_sweep(grid, out, workers=workers, progress=False)
            wall = time.perf_counter() - start
            rows = read_results(out)
            results[workers] = (wall, {r["id"]: (r["status"], r.get("tokens_per_s")) for r in rows})
            print(f"  {workers} process{'es' if workers > 1 else '  '}: {wall:6.1f} s, "
                  f"{len(rows) / wall:5.2f} points/s ({summary.ok} ok, {summary.infeasible} infeasible, "
                  f"{summary.errors} errors)", flush=True)
    # equal-time configs may differ between runs (ties), so the answers are compared by their numbers
    assert results[1][1] == results[2][1], "1 and 2 processes gave different answers"
    print(f"  speed-up of 2 processes over 1: {results[1][0] / results[2][0]:.2f}x (same status and tokens/s per "
          "point: asserted)")


if __name__ == "__main__":
    main()

"""explain on an out-of-memory message with a config no repair fits: seconds to the answer, and the floor scan.

    python benchmarks/bench_explain_oom.py [--repeat 3]

The case: verl GRPO, Qwen2.5-1.5B on one RTX 4090, params and optimizer offloaded (verl loads both back onto the GPU
for the update, so the actor update needs ~24 GiB whatever fix changes) and the CUDA message of its first update
(tests/test_explain_floor.py holds the same config and checks the answer). Two runs in this process, each timed as
wall and CPU seconds (the machine may be shared: CPU seconds are the steadier measure):

* now: fix's first step scans each memory table at the smallest values of the keys memory grows with
  (``RepairPolicy.grows_memory`` and ``batch_grows_memory``) and proves at once that the actor update fits nowhere;
* before: the same scan over every value (``grows`` emptied), which does not finish within its share of the time, so
  the search runs to the time limit and answers "no repair found within the time limit".

Prints each run's seconds, its status, and the ratios before / now.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rlbatch_solver import api  # noqa: E402
from rlbatch_solver.costmodel import tables  # noqa: E402
from test_explain_floor import OOM, SCRIPT  # noqa: E402


def run_once() -> tuple[float, float, str]:
    wall, cpu = time.perf_counter(), time.process_time()
    report = api.explain(OOM, framework="verl", config=SCRIPT, model="qwen2.5-1.5b", gpu="rtx4090", time_limit_s=10)
    return time.perf_counter() - wall, time.process_time() - cpu, report.oom.fix.status


def series(repeat: int) -> tuple[float, float, str]:
    runs = [run_once() for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    run_once()  # warm: imports, model cards, rule-set analyses
    now = series(args.repeat)
    scan = tables.least_memory

    def full_scan(*a, **k):  # before: every value of every input
        k.pop("grows", None)
        return scan(*a, **k)

    tables.least_memory = full_scan
    try:
        before = series(args.repeat)
    finally:
        tables.least_memory = scan
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"median of {args.repeat} runs")
    print(f"{'':8} {'wall s':>8} {'CPU s':>8}  status")
    for name, (wall, cpu, status) in (("before", before), ("now", now)):
        print(f"{name:8} {wall:8.2f} {cpu:8.2f}  {status}")
    print(f"ratio before/now: wall {before[0] / now[0]:.1f}x, CPU {before[1] / now[1]:.1f}x")


if __name__ == "__main__":
    main()

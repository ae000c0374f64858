"""recommend --placement auto: the command at its default time limit against every layout solved to the end.

    python benchmarks/bench_placement.py [--baseline-limit 60]

For each scenario it runs the real command line (``python -m rlbatch_solver.cli recommend --placement auto --json``)
as a fresh process and reads its verdict: the winning layout's throughput, how many layouts it answered, its wall
time against the target (10 s, the default --time-limit).

The baseline is the question answered by hand: every layout the framework lists (``placement_layouts``: the
framework's ``placements`` of the job with the algorithm's batch settled, as the command settles it) solved in this
process, one after the other, each with ``--baseline-limit`` seconds, and the best throughput of all of them.
The command must pick a layout within 1% of that best (printed "same verdict"); the ratio is the baseline's time over
the command's.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_S = 10.0
SCENARIOS = [
    # (framework, GPU, GPUs): Qwen2.5-7B GRPO, n 8, 1K prompts, 4K responses (the recommend defaults otherwise)
    ("verl", "h100", 16),
    ("verl-megatron", "h100", 16),
    ("openrlhf", "h100", 32),
    ("swift", "h100", 32),
]
COMMON = ["--model", "qwen2.5-7b", "--algo", "grpo", "--n", "8", "--prompt-len", "1024", "--response-len", "4096"]


def command(framework: str, gpu: str, gpus: int) -> tuple[float, dict]:
    args = ["recommend", "--framework", framework, "--gpu", gpu, "--gpus", str(gpus), *COMMON,
            "--placement", "auto", "--json"]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", *args], cwd=ROOT, capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    out = proc.stdout
    return wall, json.loads(out[out.index("{"):out.rindex("}") + 1])


def baseline(framework: str, gpu: str, gpus: int, limit: float) -> tuple[float, float, int]:
    """(seconds, best tokens/s over every layout, layouts with an answer)."""
    from rlbatch_solver.commands.placement import placement_layouts
    from rlbatch_solver.commands.recommend import recommend
    from rlbatch_solver.scenario import scenario_from_dict

    sc = scenario_from_dict({"framework": framework, "gpu": gpu, "gpus": gpus, "model": "qwen2.5-7b",
                             "algorithm": "grpo", "n": 8, "prompt_length": 1024, "response_length": 4096,
                             "placement": "auto"})
    start = time.perf_counter()
    best, answered = 0.0, 0
    for layout in placement_layouts(sc, []):  # the command's layouts: the algorithm's batch settled on the whole job
        report = recommend(layout.scenario, top=1, time_limit_s=limit)
        if report.best is not None:
            answered += 1
            best = max(best, report.best.tokens_per_s)
    return time.perf_counter() - start, best, answered


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-limit", type=float, default=60.0)
    opts = ap.parse_args()
    print(f"machine: {platform.machine()}, CPython {platform.python_version()}")
    print(f"{'scenario':32s} {'command s':>9s} {'target':>7s} {'layouts':>8s} {'baseline s':>10s} {'ratio':>6s}  verdict")
    for framework, gpu, gpus in SCENARIOS:
        wall, data = command(framework, gpu, gpus)
        options = data.get("placement", {}).get("options", [])
        answered = sum(1 for o in options if o.get("tokens_per_s"))
        ours = max((o.get("tokens_per_s") or 0.0) for o in options) if options else 0.0
        b_wall, b_best, b_answered = baseline(framework, gpu, gpus, opts.baseline_limit)
        same = ours >= 0.99 * b_best
        print(f"{framework + ' ' + str(gpus) + 'x ' + gpu:32s} {wall:9.2f} {'met' if wall <= TARGET_S else 'NOT met':>7s} "
              f"{answered:>3d}/{b_answered:<4d} {b_wall:10.1f} {b_wall / wall:5.1f}x  "
              f"{'same' if same else 'DIFFERENT'} ({ours:,.0f} vs best {b_best:,.0f} tokens/s)")


if __name__ == "__main__":
    main()

"""Cold start of the commands that answer without a search: process start to printed answer.

    python benchmarks/bench_cold_start.py [--repeat 7]

Each command runs ``--repeat`` times as a fresh process (``python -m rlbatch_solver.cli ...``), interleaved with the
baseline, ``python -c pass`` (the interpreter's own start, the floor no command can go under), so both see the same
load. It prints each command's median and best wall time, its ratio to the baseline's median, and the target
(``check`` on a pasted launch script: 1.5 s). One more run of each, in-process after the interpreter starts, says
which heavy libraries it imported: ``check`` needs no solver, so OR-Tools (and pandas, numpy, which OR-Tools
imports) must not load. The children run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` dropped from
their environment), as an installed package runs: without it every start compiles the package again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "tests/data/scripts/verl/run_qwen2-7b.sh"  # verl's examples/grpo_trainer/run_qwen2-7b.sh

COMMANDS = [
    # (label, target seconds or None, CLI arguments)
    ("check a pasted launch script", 1.5, ["check", SCRIPT]),
    ("check it with memory (--model --gpu)", 1.5, ["check", SCRIPT, "--model", "qwen2.5-7b", "--gpu", "h100"]),
    ("check pasted overrides", 1.5, ["check", "--", "data.train_batch_size=1024", "actor_rollout_ref.rollout.n=5",
                                     "actor_rollout_ref.actor.ppo_mini_batch_size=256",
                                     "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16"]),
    ("explain an error line", None, ["explain", "AssertionError: normalized ppo_mini_batch_size should be "
                                                "divisible by ppo_micro_batch_size_per_gpu"]),
    ("catalog models", None, ["catalog", "models"]),
]
HEAVY = ("ortools", "pandas", "numpy")
# run one command in this interpreter, then name the heavy modules it loaded (stderr's last line)
PROBE = ("import sys, json\nfrom rlbatch_solver.cli import main\nsys.argv = ['rlbatch'] + json.loads(sys.argv[1])\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         f"print('loaded:', json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n")


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def loaded(args: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=ROOT, env=ENV, capture_output=True,
                          text=True)
    line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    return json.loads(line.removeprefix("loaded:")) if line.startswith("loaded:") else ["(probe failed)"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, CPython {platform.python_version()}\n")
    base_cmd = [sys.executable, "-c", "pass"]
    base: list[float] = []
    times: dict[str, list[float]] = {label: [] for label, _, _ in COMMANDS}
    for label, _, cli in COMMANDS:  # once each first: the bytecode cache written, the files read once
        run([sys.executable, "-m", "rlbatch_solver.cli", *cli])
    for _ in range(args.repeat):
        base.append(run(base_cmd))
        for label, _, cli in COMMANDS:
            times[label].append(run([sys.executable, "-m", "rlbatch_solver.cli", *cli]))
    floor = statistics.median(base)
    print(f"{'command':40} {'median s':>9} {'best s':>7} {'x python':>9}  target  heavy libraries loaded")
    print(f"{'python -c pass (baseline)':40} {floor:9.2f} {min(base):7.2f} {1.0:9.1f}")
    for label, target, cli in COMMANDS:
        med = statistics.median(times[label])
        verdict = "" if target is None else f"{target:.1f} s {'met' if med < target else 'NOT met'}"
        heavy = loaded(cli)
        print(f"{label:40} {med:9.2f} {min(times[label]):7.2f} {med / floor:9.1f}  {verdict:12} "
              f"{', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()

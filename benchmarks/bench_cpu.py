"""CPU seconds of the commands, against the interpreter's own start: what a command costs, whatever the machine's load.

    python benchmarks/bench_cpu.py [--repeat 5] [--only default]

Wall time on a shared machine moves with the load (a 2-core machine shared by other jobs: the same recommend from
1.1 to 2.8 s); the CPU time a command's process uses (user + system, of the child and what it waits for) moves far
less. Each command runs ``--repeat`` times as a fresh process (``python -m rlbatch_solver.cli ...``), interleaved with
the baseline, ``python -c pass`` (the interpreter's start, which no command can go under), and prints its median and
best CPU seconds, the median less the baseline's (the command's own work) against its target, and its ratio to the
baseline. The children run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` dropped from their
environment), as an installed package runs: without it every start compiles the package again (half a second).

The targets: recommend on the built-in default scenario within 1 CPU s of our own work; a Megatron MoE (Qwen3-30B-A3B
on 8 H100, and benchmarks/bench_recommend.py's 64 H100 with verl's MoE example batch) within 3 s; ``check`` of a
pasted launch script within 1.5 s; ms-swift's recommend, which searches both engines in one solve where the user
leaves use_vllm alone, within 1.5 s. ``--split`` (default scenario) prints where the time goes instead: OR-Tools'
import (numpy and pandas with it: ortools/sat/python/cp_model.py imports both at its top), typer's parsing of the
options, the rest.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "tests/data/scripts/verl/run_qwen2-7b.sh"  # verl's examples/grpo_trainer/run_qwen2-7b.sh

COMMANDS = [
    # (label, target CPU seconds of own work, CLI arguments)
    ("default", "recommend, the default scenario", 1.0, ["recommend"]),
    ("moe8", "recommend, Qwen3-30B-A3B, 8x H100, Megatron", 3.0,
     ["recommend", "--framework", "verl-megatron", "--gpu", "h100", "--gpus", "8", "--model", "qwen3-30b-a3b"]),
    ("moe64", "recommend, Qwen3-30B-A3B, 64x H100, Megatron", 3.0,
     ["recommend", "--framework", "verl-megatron", "--gpu", "h100", "--gpus", "64", "--model", "qwen3-30b-a3b",
      "--algo", "grpo", "--n", "16", "--prompt-len", "1024", "--response-len", "4096",
      "--set", "data.train_batch_size=512"]),
    ("check", "check a pasted launch script", 1.5, ["check", SCRIPT]),
    # ms-swift's HF path, the user leaving use_vllm alone: both engines are searched (vLLM and transformers' generate)
    ("swift", "recommend, ms-swift, Qwen2.5-7B, 1x RTX 4090", 1.5,
     ["recommend", "--framework", "swift", "--gpu", "rtx4090", "--gpus", "1", "--model", "qwen2.5-7b"]),
]

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# the default scenario in this interpreter, with its large steps' CPU time taken as they run
SPLIT = """
import sys, time
start = time.process_time()
from ortools.sat.python import cp_model_helper  # OR-Tools' solver itself (a C++ extension)
solver_lib = time.process_time()
from ortools.sat.python import cp_model  # its Python layer: numpy and pandas load here
ortools = time.process_time()
import typer._coercion as coercion, typer.core as core
spent = {"typer parses the options": 0.0}
build = coercion.build_runtime_param
def timed(descriptor):
    t = time.process_time()
    try:
        return build(descriptor)
    finally:
        spent["typer parses the options"] += time.process_time() - t
core.build_runtime_param = timed
from rlbatch_solver.cli import main
sys.argv = ["rlbatch", "recommend"]
try:
    main()
except SystemExit:
    pass
end = time.process_time()
parts = {"OR-Tools' solver (cp_model_helper)": solver_lib - start, "numpy, pandas, cp_model.py": ortools - solver_lib,
         **spent}
parts["the rest (imports, search, report)"] = end - start - sum(parts.values())
print("SPLIT", repr(parts), file=sys.stderr)
"""


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one run of ``argv`` as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def split() -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", SPLIT], cwd=ROOT, env=ENV, capture_output=True, text=True)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("SPLIT "))
    import ast

    return ast.literal_eval(line.removeprefix("SPLIT "))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", action="append", help="a command's key (default, moe8, moe64, check, swift); repeatable")
    ap.add_argument("--split", action="store_true", help="where the default scenario's CPU time goes")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, CPython {platform.python_version()}, {os.cpu_count()} CPUs\n")
    if args.split:
        cpu_seconds([sys.executable, "-m", "rlbatch_solver.cli", "recommend"])  # the bytecode cache written
        for part, seconds in split().items():
            print(f"{part:40} {seconds:6.3f} CPU s")
        return
    chosen = [c for c in COMMANDS if not args.only or c[0] in args.only]
    base_cmd = [sys.executable, "-c", "pass"]
    base: list[float] = []
    times: dict[str, list[float]] = {key: [] for key, *_ in chosen}
    for key, _, _, cli in chosen:  # once each first: the bytecode cache written, the files read once
        cpu_seconds([sys.executable, "-m", "rlbatch_solver.cli", *cli])
    for _ in range(args.repeat):
        base.append(cpu_seconds(base_cmd))
        for key, _, _, cli in chosen:
            times[key].append(cpu_seconds([sys.executable, "-m", "rlbatch_solver.cli", *cli]))
    floor = statistics.median(base)
    print(f"{'command (CPU s: user + system)':48} {'median':>7} {'best':>6} {'own':>6} {'x python':>9}  target")
    print(f"{'python -c pass (baseline)':48} {floor:7.3f} {min(base):6.3f} {0.0:6.3f} {1.0:9.1f}")
    for key, label, target, _ in chosen:
        med = statistics.median(times[key])
        own = med - floor
        verdict = f"{target:.1f} s {'met' if own <= target else 'NOT met'}"
        print(f"{label:48} {med:7.3f} {min(times[key]):6.3f} {own:6.3f} {med / floor:9.1f}  {verdict}")


if __name__ == "__main__":
    main()

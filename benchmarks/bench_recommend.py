"""recommend end to end: process start to printed answer, against exhaustive scoring.

    python benchmarks/bench_recommend.py [--repeat 5] [--samples 20000]

For each scenario it runs the real command line (``python -m rlbatch_solver.cli
recommend ...``) ``--repeat`` times as a fresh process and prints the median
and best wall time against the target (seed's 4x RTX 4090: 1 s; a 64-GPU
Megatron MoE scenario: 3 s).

The baseline is what the tool replaces when done by hand in code: loop over
every combination of the same search space, check it with the same rules
(memory rules included) and score it with the same cost tables, keeping the
best. It runs in this process on a uniform random sample of the space; its full
time is the measured time per combination times the raw size ("est."). The
ratio is baseline / median end-to-end time of the command.

The in-process split (solver import, search space and cost tables, CP-SAT
solves, rendering) shows where the command's time goes.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIOS = [
    # (label, target seconds, CLI arguments after `recommend`)
    ("seed: ADPO, Qwen2.5-1.5B, 4x RTX 4090", 1.0, []),
    # the batch of verl's run_qwen3moe-30b_megatron example: 512 prompts x 16 responses
    ("Megatron MoE: GRPO, Qwen3-30B-A3B, 64x H100 (8 nodes)", 3.0,
     ["--framework", "verl-megatron", "--gpu", "h100", "--gpus", "64", "--model", "qwen3-30b-a3b",
      "--algo", "grpo", "--n", "16", "--prompt-len", "1024", "--response-len", "4096",
      "--set", "data.train_batch_size=512"]),
]


def end_to_end(args: list[str], repeat: int) -> tuple[list[float], int, str]:
    times, rc, out = [], 0, ""
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", "recommend", *args], cwd=ROOT,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    return times, rc, out


def scenario_of(args: list[str]):
    """The Scenario the command line builds from these arguments."""
    from rlbatch_solver.scenario import default_scenario, scenario_from_dict

    if not args:
        return default_scenario()
    names = {"--framework": "framework", "--gpu": "gpu", "--gpus": "gpus", "--model": "model", "--algo": "algorithm",
             "--n": "n", "--prompt-len": "prompt_length", "--response-len": "response_length"}
    data: dict = {"fixed": {}}
    for flag, value in zip(args[::2], args[1::2]):
        if flag == "--set":
            key, _, raw = value.partition("=")
            data["fixed"][key] = int(raw)
            continue
        key = names[flag]
        data[key] = int(value) if key in ("gpus", "n", "prompt_length", "response_length") else value
    return scenario_from_dict(data)


def in_process_split(scenario) -> dict[str, float]:
    """Seconds of each part of recommend, measured in this process (solver import first)."""
    start = time.perf_counter()
    import ortools.sat.python.cp_model  # noqa: F401

    split = {"import OR-Tools": time.perf_counter() - start}
    from rlbatch_solver import api
    from rlbatch_solver.solver.optimize import optimize

    start = time.perf_counter()
    fw, card, gpu, space, spec, terms, ruleset = api.prepare(scenario)
    split["space + cost tables"] = time.perf_counter() - start
    start = time.perf_counter()
    optimize(ruleset, space.domains, terms.time_us_per_sample, top=5)
    split["CP-SAT (top 5, proven)"] = time.perf_counter() - start
    return split


def exhaustive_estimate(scenario, samples: int, seed: int = 0) -> tuple[float, int, float]:
    """(estimated seconds to check and score every combination, raw size, seconds per combination)."""
    from rlbatch_solver import api
    from rlbatch_solver.rules.expr import evaluate

    fw, card, gpu, space, spec, terms, ruleset = api.prepare(scenario)
    names = list(space.domains)
    rnd = random.Random(seed)
    combos = [{n: rnd.choice(space.domains[n]) for n in names} for _ in range(samples)]
    start = time.perf_counter()
    best = None
    for values in combos:
        result = ruleset.check(values)
        if result.valid:
            score = evaluate(terms.time_us_per_sample, result.env)
            best = score if best is None else min(best, score)
    per = (time.perf_counter() - start) / samples
    return per * space.raw_size, space.raw_size, per


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--samples", type=int, default=20_000)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    for label, target, cli_args in SCENARIOS:
        print(f"\n{label}\n  rlbatch recommend {' '.join(cli_args)}")
        times, rc, out = end_to_end(cli_args, args.repeat)
        if rc != 0:
            print(f"  command failed (exit {rc}):\n" + "\n".join("    " + line for line in out.splitlines()[-8:]))
            continue
        med = statistics.median(times)
        print(f"  end to end: median {med:.2f} s, best {min(times):.2f} s over {len(times)} runs; "
              f"target {target:.0f} s: {'met' if med <= target else 'NOT met'}")
        sc = scenario_of(cli_args)
        for part, sec in in_process_split(sc).items():
            print(f"    {part:26} {sec:6.2f} s")
        est, raw, per = exhaustive_estimate(sc, args.samples)
        print(f"  exhaustive check+score of {raw:.2e} combinations: {per * 1e6:.1f} us each, "
              f"{est:,.0f} s est. -> {est / med:,.0f}x slower than the command")


if __name__ == "__main__":
    main()

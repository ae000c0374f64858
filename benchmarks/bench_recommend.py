"""recommend end to end: process start to printed answer, against exhaustive scoring.

    python benchmarks/bench_recommend.py [--repeat 5] [--samples 20000] [--only seed]

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

The split shows where the command's time goes: the same command line, run once
more as a fresh process through the entry point (``--split``), with recommend's
own steps timed as they run: OR-Tools' import, the rest of the imports, the
search space (``prepare``), the models of its ``optimize`` calls (the cost
tables priced, the rules compiled: the optimum, the headroom and roomier
solves), CP-SAT's own search (every ``CpSolver.Solve``: those solves, their
tie-breaks and runners-up), the rest of recommend (its reports and checks),
and the command line's own work (arguments, printing). (It used to time one
``optimize`` of its own over a scenario built without recommend's preparation,
which keeps the algorithm's batch, and without its tie-break: a search the
command never runs, 9-10 s for the MoE scenario whose command took 3-4 s.)
The baseline scores the space recommend searches (its ``searched_scenario``).
"""

from __future__ import annotations

import argparse
import json
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


def timed_split(args: list[str]) -> dict[str, float]:
    """Seconds of each step of ``rlbatch recommend ARGS`` run in this process through the entry point (``cli.main``,
    the answer printed to a buffer), recommend's own functions timed where they run. For a fresh process only
    (``--split``): its imports and first cost tables are then the command's."""
    import contextlib
    import io

    start = time.perf_counter()
    from ortools.sat.python import cp_model

    split = {"import OR-Tools": time.perf_counter() - start}
    start = time.perf_counter()
    from rlbatch_solver import cli
    from rlbatch_solver.commands import recommend
    from rlbatch_solver.solver import optimize

    split["import the rest"] = time.perf_counter() - start
    spent = {"prepare": 0.0, "optimize": 0.0, "recommend": 0.0, "Solve": 0.0, "Solve in optimize": 0.0}
    calls = dict.fromkeys(spent, 0)

    def timed(owner, name: str) -> None:
        original = getattr(owner, name)
        depth = [0]

        def run(*a, **k):
            if depth[0]:  # a call inside another of the same (a wider search's recommend): counted in the outer one
                return original(*a, **k)
            depth[0] += 1
            begin, solving = time.perf_counter(), spent["Solve"]
            try:
                return original(*a, **k)
            finally:
                depth[0] -= 1
                spent[name] += time.perf_counter() - begin
                calls[name] += 1
                if name == "optimize":
                    spent["Solve in optimize"] += spent["Solve"] - solving
        setattr(owner, name, run)

    # recommend calls prepare by its module's name and imports optimize where it solves; the entry point calls
    # the recommend of commands/recommend.py, as the module's name (a wider search's recommend inside it is counted
    # in the outer one); every CP-SAT search is a CpSolver.Solve
    owners = ((recommend, "prepare"), (optimize, "optimize"), (recommend, "recommend"), (cp_model.CpSolver, "Solve"))
    originals = [getattr(owner, name) for owner, name in owners]
    for owner, name in owners:
        timed(owner, name)
    sys.argv = ["rlbatch", "recommend", *args]
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            cli.main()
    finally:
        whole = time.perf_counter() - start
        for (owner, name), original in zip(owners, originals):
            setattr(owner, name, original)
    split["space (prepare)"] = spent["prepare"]
    split["models: tables, rules"] = spent["optimize"] - spent["Solve in optimize"]
    split[f"CP-SAT search ({calls['Solve']} solves)"] = spent["Solve"]
    split["rest of recommend"] = spent["recommend"] - spent["prepare"] - spent["optimize"] - (
        spent["Solve"] - spent["Solve in optimize"])
    split["arguments, printing"] = whole - spent["recommend"]
    return split


def split_of(args: list[str]) -> dict[str, float]:
    """``timed_split`` of the command line, in a fresh process."""
    proc = subprocess.run([sys.executable, __file__, "--split", *args], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def exhaustive_estimate(scenario, samples: int, seed: int = 0) -> tuple[float, int, float]:
    """(estimated seconds to check and score every combination, raw size, seconds per combination)."""
    from rlbatch_solver import api
    from rlbatch_solver.commands.recommend import searched_scenario
    from rlbatch_solver.rules.expr import evaluate

    fw, card, gpu, space, spec, terms, ruleset = api.prepare(searched_scenario(scenario)[0])
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
    ap.add_argument("--only", default="", help="the scenarios whose label contains this (seed, MoE)")
    ap.add_argument("--split", nargs=argparse.REMAINDER, help="(internal) time one command's steps: its arguments")
    args = ap.parse_args()
    if args.split is not None:
        print(json.dumps(timed_split(args.split)))
        return
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    for label, target, cli_args in (s for s in SCENARIOS if args.only in s[0]):
        print(f"\n{label}\n  rlbatch recommend {' '.join(cli_args)}")
        times, rc, out = end_to_end(cli_args, args.repeat)
        if rc != 0:
            print(f"  command failed (exit {rc}):\n" + "\n".join("    " + line for line in out.splitlines()[-8:]))
            continue
        med = statistics.median(times)
        print(f"  end to end: median {med:.2f} s, best {min(times):.2f} s over {len(times)} runs; "
              f"target {target:.0f} s: {'met' if med <= target else 'NOT met'}")
        split = split_of(cli_args)
        print(f"  one more run, its steps timed ({sum(split.values()):.2f} s in all, interpreter start aside):")
        for part, sec in split.items():
            print(f"    {part:26} {sec:6.2f} s")
        sc = scenario_of(cli_args)
        est, raw, per = exhaustive_estimate(sc, args.samples)
        print(f"  exhaustive check+score of {raw:.2e} combinations: {per * 1e6:.1f} us each, "
              f"{est:,.0f} s est. -> {est / med:,.0f}x slower than the command")


if __name__ == "__main__":
    main()

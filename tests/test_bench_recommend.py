"""benchmarks/bench_recommend.py times the command's own steps and scores the space the command searches (the seed's
4x RTX 4090 scenario: about a second each)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_recommend.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_recommend", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_split_times_the_steps_the_command_runs():
    """A fresh process runs ``rlbatch recommend`` through its entry point with recommend's prepare, its optimize
    calls and CP-SAT's Solve timed where they run: every step took time and the solves are counted (a split that
    times a search of its own, or misses recommend's calls, reads 0 s there)."""
    proc = subprocess.run([sys.executable, str(BENCH), "--split"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    split = json.loads(proc.stdout.splitlines()[-1])
    solves = [k for k in split if k.startswith("CP-SAT search (")]
    assert len(solves) == 1 and int(solves[0].split("(")[1].split()[0]) >= 1
    assert list(split) == ["import OR-Tools", "import the rest", "space (prepare)", "models: tables, rules",
                           solves[0], "rest of recommend", "arguments, printing"]
    assert all(seconds > 0 for seconds in split.values())


def test_the_baseline_scores_the_space_the_command_searches():
    """The exhaustive baseline loops over recommend's own search space (the algorithm's batch kept, as recommend
    keeps it), not the wider space of the scenario before recommend's preparation (8.8e8 combinations for the seed,
    where the command searches 1.1e7)."""
    from rlbatch_solver import api
    from rlbatch_solver.scenario import default_scenario

    bench = _bench()
    _, raw, per = bench.exhaustive_estimate(bench.scenario_of([]), samples=20)
    assert raw == api.recommend(default_scenario(), top=1, time_limit_s=60).raw_size
    assert per > 0

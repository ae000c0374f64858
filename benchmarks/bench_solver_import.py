"""What importing the solver costs a command that searches (recommend, enumerate, fix, sweep), and how much of it is
pandas.

    python benchmarks/bench_solver_import.py [--repeat 5] [--debug]

OR-Tools' CP-SAT Python API (ortools/sat/python/cp_model.py) imports numpy and pandas at its top and builds a type
from pandas at module level (``_IndexOrSeries = Union[pd.Index, pd.Series]``, and pd.Series in the signatures of its
``*_series`` helpers), so pandas loads with it whatever the caller uses: it is no optional path that importing only
some of cp_model's names could avoid. Each run is a fresh interpreter with ``-X importtime``, which prints every
module's cumulative import time in that same process: the ratio of pandas' to cp_model's (and of cp_model's to the
whole ``rlbatch_solver.solver.model`` import) is read from one process, so load moves both alike. It prints ratios
only (each module's share of the solver's import, the baseline of the same process); ``--debug`` adds the absolute
medians, which depend on the machine and its load. The commands that answer without a search never import it
(benchmarks/bench_cold_start.py checks that).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WATCHED = ("rlbatch_solver.solver.model", "ortools.sat.python.cp_model", "pandas", "numpy")


def one_run() -> dict[str, float]:
    """Cumulative import seconds of each WATCHED module, in one fresh interpreter importing the solver package."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import rlbatch_solver.solver.model"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    out: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$", line)
        if found and found.group(2) in WATCHED:
            out[found.group(2)] = int(found.group(1)) / 1e6
    return out


def hard_import() -> bool:
    """Whether cp_model.py imports pandas at its top and uses it at module level (not an optional path)."""
    import importlib.util

    spec = importlib.util.find_spec("ortools.sat.python.cp_model")
    text = Path(spec.origin).read_text()
    return bool(re.search(r"^import pandas as pd$", text, re.M)) and bool(re.search(r"^\w+ = .*\bpd\.", text, re.M))


BASELINE = "rlbatch_solver.solver.model"


def ratio(runs: list[dict[str, float]], part: str, whole: str) -> float | None:
    """The median over the runs of ``part``'s cumulative import time over ``whole``'s, each read in one process."""
    shares = [r[part] / r[whole] for r in runs if part in r and r.get(whole)]
    return statistics.median(shares) if shares else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--debug", action="store_true", help="also print the absolute medians (seconds)")
    args = parser.parse_args()
    runs = [one_run() for _ in range(args.repeat)]
    print(f"cp_model imports pandas at its top and uses it at module level: {hard_import()}")
    for name in WATCHED[1:]:
        share = ratio(runs, name, BASELINE)
        if share is not None:
            print(f"{name:32s} / {BASELINE} import (same process): median {share:.2f}")
    share = ratio(runs, "pandas", "ortools.sat.python.cp_model")
    if share is not None:
        print(f"pandas / cp_model import (same process): median {share:.2f}")
    if args.debug:
        for name in WATCHED:
            times = [r[name] for r in runs if name in r]
            if times:
                print(f"debug: {name:32s} median {statistics.median(times):6.3f} s cumulative")


if __name__ == "__main__":
    main()

"""The code carries no unused imports or names, no redefinitions and no undefined names: ruff's pyflakes rules
(pyproject.toml [tool.ruff.lint]) over the package, the tests and the benchmarks."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "rlbatch_solver",
                           "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr

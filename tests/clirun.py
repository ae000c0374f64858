"""Shared helper: the CLI run in a subprocess from the repository root."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args, stdin=None):
    """``python -m rlbatch_solver.cli ARGS`` (``stdin`` fed to it); it must not end in a traceback."""
    proc = subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, input=stdin, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc

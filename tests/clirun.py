"""Shared helper: the CLI run in-process with typer's ``CliRunner`` from the repository root (``run``), or as
``python -m rlbatch_solver.cli`` in a subprocess (``run_process``: the entry point's own smoke tests)."""

import contextlib
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from rlbatch_solver.cli import app

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Result:
    """What a run of the command line left: its exit code, stdout and stderr (as ``subprocess.run`` names them)."""

    returncode: int
    stdout: str
    stderr: str


def run(*args, stdin=None) -> Result:
    """``rlbatch ARGS`` in-process (``stdin`` fed to it); it must not end in an exception or print a traceback."""
    with contextlib.chdir(ROOT):
        res = CliRunner().invoke(app, [str(a) for a in args], input=stdin, prog_name="rlbatch")
    exc = res.exception
    assert exc is None or isinstance(exc, SystemExit), "".join(traceback.format_exception(exc))
    assert "Traceback" not in res.stderr, res.stderr
    return Result(res.exit_code, res.stdout, res.stderr)


def run_process(*args, stdin=None) -> subprocess.CompletedProcess:
    """``python -m rlbatch_solver.cli ARGS`` (``stdin`` fed to it); it must not end in a traceback."""
    proc = subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, input=stdin, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc

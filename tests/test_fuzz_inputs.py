"""Hostile input to every command and every option that reads a file (tests/hostile_corpus.py): each invocation
ends with exit code 0, 1 or 2, never a traceback, within 10 seconds; the heaviest shapes, run again as their own
process, stay under 1 GiB of memory.

Most cases run in-process (fast); a watchdog alarm turns a case that blocks (a FIFO opened for reading) into a
failure instead of a hung suite. The subprocess cases measure each child's peak resident memory with ``os.wait4``
and cap its address space (``RLIMIT_AS``) so a runaway read fails there rather than swapping the machine.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlbatch_solver.cli import app

from hostile_corpus import attack_files, heavy_invocations, invocations

ROOT = Path(__file__).resolve().parents[1]
WALL_LIMIT_S = 10.0  # the bar: no invocation runs longer
WATCHDOG_S = 30  # a case still running then is stopped and reported (a blocked read would hang the suite)
RSS_LIMIT = 1 << 30  # the bar: no process over 1 GiB resident
ADDRESS_SPACE = 3 << 30  # the children's cap: the solver's libraries map more than they touch


class _Stuck(Exception):
    """Raised by the watchdog alarm inside a case that did not finish."""


def _alarm(signum, frame):
    raise _Stuck(f"still running after {WATCHDOG_S} s")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hostile")
    files = attack_files(directory)
    counter = itertools.count()

    def new_path() -> str:
        return str(directory / "new" / f"out{next(counter)}.yaml")

    return files, new_path


def _problem(code: int, exc: BaseException | None, output: str) -> str | None:
    if exc is not None and not isinstance(exc, SystemExit):
        return f"exception {type(exc).__name__}: {str(exc)[:200]}"
    if code not in (0, 1, 2):
        return f"exit code {code}"
    if "Traceback" in output:
        return "traceback: " + output[output.index("Traceback"):][:300]
    return None


def _shown(args: list[str]) -> list[str]:
    return [a if len(a) <= 60 else f"{a[:40]}...({len(a)} chars)" for a in args]


def test_every_hostile_invocation_exits_0_1_or_2_within_10_seconds(corpus):
    files, new_path = corpus
    cases = invocations(files, new_path)
    assert len(cases) >= 1500, len(cases)
    runner = CliRunner()
    failures, slow, codes = [], [], set()
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for args in cases:
            started = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, WATCHDOG_S)
            try:
                result = runner.invoke(app, args, prog_name="rlbatch")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            wall = time.monotonic() - started
            codes.add(result.exit_code)
            problem = _problem(result.exit_code, result.exception, result.output)
            if problem:
                failures.append((_shown(args), problem))
            if wall > WALL_LIMIT_S:
                slow.append((_shown(args), round(wall, 1)))
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, f"{len(failures)} of {len(cases)} failed: {failures[:10]}"
    assert not slow, slow[:10]
    assert {0, 1, 2} <= codes  # the corpus reaches answers, refusals of configs and refusals of input


# The measured command runs under a small launcher, a child of this test process, that starts it and reports the
# command's peak resident memory: a process forked from the test process (hundreds of MiB after a whole suite) starts
# its peak at the parent's size, which Linux keeps across exec, so it must not be the measured one.
_LAUNCHER = """
import os, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))  # the solver's libraries map more than they touch
proc = subprocess.Popen([sys.executable, "-m", "rlbatch_solver.cli", *sys.argv[1:]], stdin=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
sys.stderr.write("\\n@peak_rss_kib=%d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_measured(args: list[str], timeout_s: float) -> tuple[int | None, float, float, str]:
    """(exit code or None when killed, wall seconds, peak RSS in bytes, stderr) of ``rlbatch ARGS`` as a process."""
    with tempfile.TemporaryFile() as err, open(os.devnull, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER.format(cap=ADDRESS_SPACE), *args], cwd=ROOT,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the command it started
            proc.wait()
            code = None
        wall = time.monotonic() - started
        err.seek(0)
        stderr = err.read().decode("utf-8", errors="replace")
    peak = re.search(r"\n@peak_rss_kib=(\d+)\n$", stderr)
    rss = int(peak.group(1)) * 1024.0 if peak else 0.0  # KiB on Linux
    return code, wall, rss, stderr[:peak.start()] if peak else stderr


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="peak memory of a child needs os.wait4")
def test_heaviest_shapes_as_processes_stay_under_1_gib_and_10_seconds(corpus):
    files, new_path = corpus
    cases = heavy_invocations(files, new_path)
    assert len(cases) >= 30
    failures = []
    for args in cases:
        code, wall, rss, stderr = _run_measured(args, timeout_s=3 * WALL_LIMIT_S)
        problem = _problem(code if code is not None else -9, None, stderr)
        if code is None:
            problem = f"killed after {wall:.0f} s"
        elif wall > WALL_LIMIT_S:
            problem = f"{wall:.1f} s"
        elif rss > RSS_LIMIT:
            problem = f"{rss / 2**20:.0f} MiB resident"
        if problem:
            failures.append((_shown(args), problem))
    assert not failures, failures[:10]

"""The suite never reads a calibration profile of the machine's user (calibration.user_profile_path)."""

import os

import pytest
import tempfile

os.environ["RLBATCH_CONFIG_DIR"] = tempfile.mkdtemp(prefix="rlbatch-test-config-")


SLOWER = 20.0  # how many times slower the machine ``slow_machine`` plays


@pytest.fixture
def slow_machine(monkeypatch):
    """A machine SLOWER times slower, without timing anything real: the commands' clock (deadline.now) runs SLOWER
    times fast and every CP-SAT solve gets its seconds divided by SLOWER (tests/test_*_load.py)."""
    import time

    from ortools.sat.python import cp_model

    import rlbatch_solver.deadline as deadline_module

    start = time.monotonic()
    monkeypatch.setattr(deadline_module, "now", lambda: start + (time.monotonic() - start) * SLOWER)
    real = cp_model.CpSolver.Solve

    def solve(self, *args, **kwargs):
        self.parameters.max_time_in_seconds = self.parameters.max_time_in_seconds / SLOWER
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "Solve", solve)

"""SkyRL 0.3.1: our rules against skyrl_train/utils/utils.py:validate_cfg (the wheel alone, heavy imports stubbed)."""

import pytest

pytest.importorskip("omegaconf", reason="parity needs omegaconf (see docs/parity.md)")
if __import__("importlib.util").util.find_spec("skyrl_train") is None:
    pytest.skip("parity needs the skyrl-train 0.3.1 wheel on PYTHONPATH (see docs/parity.md)", allow_module_level=True)

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_skyrl import ALLOWED, DRIVER, SkyRLOracle, skyrl_cases  # noqa: E402

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Stage  # noqa: E402


def _args(case):
    return [f"{k}={'null' if v is None else str(v).lower() if isinstance(v, bool) else v}" for k, v in case.items()]


def test_parity_skyrl(parity_budget):
    count, seed = parity_budget
    report = run_parity("skyrl", skyrl_cases(seed, count), SkyRLOracle().oracles(), seed=seed, ours_input=_args)
    assert_parity(report, count)


def test_every_rule_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED}
    ids = {r.id for r in get_framework("skyrl").ruleset.rules}
    assert ids - DRIVER - allowed == set()
    assert {r.id for r in get_framework("skyrl").ruleset.rules if r.stage == Stage.DRIVER} == DRIVER

"""verl 0.9.1: our rules against verl's own ``validate_config`` and ``RolloutConfig`` (see parity_verl.py)."""

import pytest

pytest.importorskip("verl", reason="parity needs the real verl 0.9.1 package (pip install '.[parity]')")

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_verl import ALLOWED, DRIVER_FSDP, DRIVER_MEGATRON, VerlOracle, verl_cases  # noqa: E402

from rlbatch_solver.rules.base import Severity, Stage  # noqa: E402
from rlbatch_solver.frameworks.verl.rules import RULESET as FSDP_RULESET  # noqa: E402
from rlbatch_solver.frameworks.verl.rules_megatron import MEGATRON_RULESET  # noqa: E402


@pytest.mark.parametrize("framework", ["verl", "verl-megatron"])
def test_parity(framework, parity_budget):
    count, seed = parity_budget
    megatron = framework == "verl-megatron"
    oracle = VerlOracle(megatron)
    report = run_parity(framework, verl_cases(seed, count, megatron), oracle.oracles(megatron), seed=seed)
    assert_parity(report, count)


@pytest.mark.parametrize("framework", ["verl", "verl-megatron"])
def test_every_driver_rule_is_compared_or_allowed(framework):
    """A new driver-stage rule must be compared with verl's code or allow-listed with a reason."""
    compared = DRIVER_MEGATRON if framework == "verl-megatron" else DRIVER_FSDP
    allowed = {a.rule for a in ALLOWED}
    ruleset = MEGATRON_RULESET if framework == "verl-megatron" else FSDP_RULESET
    driver = {r.id for r in ruleset.rules if r.stage == Stage.DRIVER and r.severity == Severity.ERROR}
    assert driver - compared - allowed == set()
    assert compared <= {r.id for r in ruleset.rules}

"""verl: our rules against verl's own ``validate_config`` and ``RolloutConfig`` (see parity_verl.py), for the installed
release: 0.9.1 in CI (the ``parity-verl`` extra); 0.8.0, 0.7.1 or 0.6.1 in an environment of their own compare that
release's rule pack (frameworks/verl/versions.py; docs/parity.md says how)."""

import pytest

pytest.importorskip("verl", reason="parity needs the real verl package (pip install '.[parity-verl]')")

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_verl import (ALLOWED, DRIVER_FSDP, DRIVER_MEGATRON, LEGACY_DRIVER_FSDP, VERSION, VerlOracle,  # noqa: E402
                         verl_cases)

from rlbatch_solver.frameworks.base import resolve_release  # noqa: E402
from rlbatch_solver.frameworks.verl import versions  # noqa: E402
from rlbatch_solver.frameworks.verl.versions import ruleset_for  # noqa: E402
from rlbatch_solver.rules.base import Severity, Stage  # noqa: E402

PACK, _ = resolve_release(".".join(str(x) for x in VERSION), versions)
LEGACY = VERSION < (0, 8)


def _compared(framework: str) -> frozenset:
    if framework == "verl-megatron":
        return DRIVER_MEGATRON
    return DRIVER_FSDP | (LEGACY_DRIVER_FSDP if LEGACY else frozenset())


@pytest.mark.parametrize("framework", ["verl", "verl-megatron"])
def test_parity(framework, parity_budget):
    count, seed = parity_budget
    megatron = framework == "verl-megatron"
    oracle = VerlOracle(megatron)
    report = run_parity(f"{framework}=={PACK}", verl_cases(seed, count, megatron), oracle.oracles(megatron), seed=seed)
    assert_parity(report, count)


@pytest.mark.parametrize("framework", ["verl", "verl-megatron"])
def test_every_driver_rule_is_compared_or_allowed(framework):
    """A new driver-stage rule must be compared with verl's code or allow-listed with a reason."""
    compared = _compared(framework)
    allowed = {a.rule for a in ALLOWED}
    ruleset = ruleset_for(PACK, "megatron" if framework == "verl-megatron" else "fsdp")
    driver = {r.id for r in ruleset.rules if r.stage == Stage.DRIVER and r.severity == Severity.ERROR}
    assert driver - compared - allowed == set()
    assert compared <= {r.id for r in ruleset.rules}

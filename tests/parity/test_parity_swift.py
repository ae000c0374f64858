"""ms-swift 4.6.0: our rules against GRPOConfig, RLHFArguments and the Megatron argument checks."""

import pytest

pytest.importorskip("swift", reason="parity needs the real ms-swift 4.6.0 package (pip install '.[parity]')")
pytest.importorskip("trl")

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_swift import (ALLOWED, HF_ARGS, HF_CONFIG, MG_DIST, MG_GRPO, SwiftHFOracle,  # noqa: E402
                          SwiftMegatronOracle, swift_cases)

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Severity, Stage  # noqa: E402


def test_parity_swift(parity_budget):
    count, seed = parity_budget
    report = run_parity("swift", swift_cases(seed, count, False), SwiftHFOracle().oracles(), seed=seed)
    assert_parity(report, count)


def test_parity_swift_megatron(parity_budget):
    count, seed = parity_budget
    report = run_parity("swift-megatron", swift_cases(seed, count, True), SwiftMegatronOracle().oracles(), seed=seed)
    assert_parity(report, count)


@pytest.mark.parametrize("framework,compared", [
    ("swift", HF_CONFIG | HF_ARGS),
    ("swift-megatron", MG_GRPO | MG_DIST | {"swift_megatron.mcore.world_divisible_by_model_parallel"}),
])
def test_every_driver_rule_is_compared_or_allowed(framework, compared):
    allowed = {a.rule for a in ALLOWED[framework]}
    ruleset = get_framework(framework).ruleset
    driver = {r.id for r in ruleset.rules if r.stage == Stage.DRIVER and r.severity == Severity.ERROR}
    assert driver - compared - allowed == set()
    assert compared <= {r.id for r in ruleset.rules}

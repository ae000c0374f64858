"""OpenRLHF 0.11.2 (+ DeepSpeed): our rules against train_ppo_ray's checks and DeepSpeed's batch assertion."""

import pytest

pytest.importorskip("deepspeed", reason="parity needs deepspeed 0.19.6 (see docs/parity.md)")
if __import__("importlib.util").util.find_spec("openrlhf") is None:
    pytest.skip("parity needs the openrlhf 0.11.2 package (see docs/parity.md)", allow_module_level=True)

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_openrlhf import ALLOWED, DEEPSPEED, DRIVER, TRAIN, OpenRLHFOracle, openrlhf_cases  # noqa: E402

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Stage  # noqa: E402


def test_parity_openrlhf(parity_budget):
    count, seed = parity_budget
    report = run_parity("openrlhf", openrlhf_cases(seed, count), OpenRLHFOracle().oracles(), seed=seed,
                        ours_input=OpenRLHFOracle.argv)
    assert_parity(report, count)


def test_every_driver_and_train_rule_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED}
    ruleset = get_framework("openrlhf").ruleset
    early = {r.id for r in ruleset.rules if r.stage in (Stage.DRIVER, Stage.TRAINER_INIT)}
    assert early - DRIVER - TRAIN - allowed == set()
    assert DRIVER | TRAIN | DEEPSPEED <= {r.id for r in ruleset.rules}

"""TRL 1.16.0: our rules against GRPOConfig's own checks (needs trl==1.16.0 and torch; see docs/parity.md)."""

import pytest

trl = pytest.importorskip("trl", reason="parity needs the real trl 1.16.0 package (pip install '.[parity-trl]')")
if trl.__version__ != "1.16.0":
    pytest.skip(f"trl {trl.__version__} is installed; the TRL rules follow 1.16.0", allow_module_level=True)

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_trl import ALLOWED, CONFIG, PARSER, TRAINER, TrlOracle, as_flags, trl_cases  # noqa: E402

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Severity, Stage  # noqa: E402


def test_parity_trl(parity_budget):
    count, seed = parity_budget
    # named: a case with a field of an older GRPOConfig (max_prompt_length) would otherwise be dated to that release
    report = run_parity("trl==1.16.0", trl_cases(seed, count), TrlOracle().oracles(), seed=seed, ours_input=as_flags)
    assert_parity(report, count)


def test_every_driver_rule_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED["trl"]}
    ruleset = get_framework("trl").ruleset
    driver = {r.id for r in ruleset.rules if r.stage == Stage.DRIVER and r.severity == Severity.ERROR}
    assert driver - CONFIG - PARSER - allowed == set()
    trainer = {r.id for r in ruleset.rules if r.stage == Stage.TRAINER_INIT and r.severity == Severity.ERROR}
    assert trainer - allowed == TRAINER

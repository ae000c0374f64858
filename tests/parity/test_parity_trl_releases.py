"""TRL 0.29.1, 0.19.1, 0.18.2, 0.17.0, 0.16.1, 0.15.2 and 0.14.0: our release packs against that release's own GRPO script parser and GRPOConfig (needs that
trl release importable, e.g. installed with --no-deps into a directory on PYTHONPATH beside the 1.16.0 environment's
torch and transformers; see docs/parity.md). The module runs for whichever of them is importable and skips
otherwise."""

import pytest

trl = pytest.importorskip("trl", reason="parity needs a real trl release")
RELEASES = ("0.29.1", "0.19.1", "0.18.2", "0.17.0", "0.16.1", "0.15.2", "0.14.0")
if trl.__version__ not in RELEASES:
    pytest.skip(f"trl {trl.__version__} is installed; this module checks {', '.join(RELEASES)}", allow_module_level=True)

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_trl import ALLOWED, CONFIG, PARSER, ReleaseOracle, as_flags, trl_cases  # noqa: E402

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Severity, Stage  # noqa: E402

VERSION = trl.__version__


def test_parity_trl_release(parity_budget):
    count, seed = parity_budget
    report = run_parity(f"trl=={VERSION}", trl_cases(seed, count), ReleaseOracle().oracles(), seed=seed,
                        ours_input=as_flags)
    assert_parity(report, count)


def test_every_driver_rule_of_the_release_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED["trl"]}
    ruleset = get_framework(f"trl=={VERSION}").ruleset
    driver = {r.id for r in ruleset.rules if r.stage == Stage.DRIVER and r.severity == Severity.ERROR}
    assert driver - CONFIG - PARSER - allowed == set()

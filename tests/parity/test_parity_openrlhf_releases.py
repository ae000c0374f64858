"""OpenRLHF 0.10.4, 0.9.10, 0.8.11, 0.7.5, 0.6.2, 0.5.9 and 0.4.0 (+ the DeepSpeed each pins): our release packs against that release's own
train_ppo_ray checks and DeepSpeed's batch assertion (needs that openrlhf release importable, e.g. its wheel installed
with --no-deps into a directory on PYTHONPATH, beside the DeepSpeed it pins; see docs/parity.md). The module runs
for whichever of them is installed and skips otherwise."""

import pytest

pytest.importorskip("deepspeed", reason="parity needs the DeepSpeed the OpenRLHF release pins (see docs/parity.md)")

from parity_openrlhf_releases import (ALLOWED, DEEPSPEED, DRIVER, TRAIN, flag_argv, installed,  # noqa: E402
                                      release_cases, release_oracle)

RELEASE = installed()
if RELEASE is None:
    pytest.skip("parity needs openrlhf 0.10.4, 0.9.10, 0.8.11, 0.7.5, 0.6.2, 0.5.9.post1 or 0.4.0.post2 (see docs/parity.md)", allow_module_level=True)

from parity_core import assert_parity, run_parity  # noqa: E402

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Severity, Stage  # noqa: E402

VERSION, PACK = RELEASE


def test_parity_openrlhf_release(parity_budget):
    count, seed = parity_budget
    report = run_parity(f"openrlhf=={PACK}", release_cases(PACK, seed, count), release_oracle(PACK).oracles(),
                        seed=seed, ours_input=flag_argv)
    assert_parity(report, count)


def test_every_driver_and_train_rule_of_the_release_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED[PACK]}
    ruleset = get_framework(f"openrlhf=={PACK}").ruleset
    early = {r.id for r in ruleset.rules
             if r.stage in (Stage.DRIVER, Stage.TRAINER_INIT) and r.severity == Severity.ERROR}
    assert early - DRIVER[PACK] - TRAIN[PACK] - allowed == set()
    assert DRIVER[PACK] | TRAIN[PACK] | DEEPSPEED <= {r.id for r in ruleset.rules}

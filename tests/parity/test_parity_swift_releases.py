"""ms-swift 4.3.2, 3.12.6, 3.10.3, 3.4.1, 3.4.0 and 3.3.1 (and any release a pack judges, 4.4-4.5 by 4.6.0's): our release
packs against that release's own argument and batch checks
(parity_swift_releases.py: its methods taken from its wheel's source, run without its imports). Needs
SWIFT_RELEASE_DIR, a directory with the release installed (``pip install --no-deps --target DIR ms-swift==X``; see
docs/parity.md); skipped without it."""

import pytest

from parity_core import assert_parity, run_parity
from parity_swift_releases import (ALLOWED, ARGS, CONFIG, TRAINER, ReleaseOracle, as_flags, check_kwargs, pack_of,
                                   release_cases, release_dir, release_version)

from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.rules.base import Severity, Stage

ROOT = release_dir()
if ROOT is None:
    pytest.skip("set SWIFT_RELEASE_DIR to an older ms-swift release installed with --no-deps --target",
                allow_module_level=True)
VERSION = release_version(ROOT)
PACK = pack_of(VERSION)


def test_parity_swift_release(parity_budget):
    count, seed = parity_budget
    report = run_parity(f"swift=={VERSION}", release_cases(VERSION, seed, count), ReleaseOracle(ROOT).oracles(),
                        seed=seed, check_kwargs=check_kwargs, ours_input=as_flags)
    assert_parity(report, count)


def test_every_driver_and_trainer_rule_of_the_pack_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED}
    ruleset = get_framework(f"swift=={PACK}").ruleset
    checked = {r.id for r in ruleset.rules if r.stage in (Stage.DRIVER, Stage.TRAINER_INIT)
               and r.severity == Severity.ERROR}
    assert checked - ARGS - CONFIG - TRAINER - allowed == set()

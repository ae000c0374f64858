"""EasyR1 0.3.2: our rules against EasyR1's own config merge and start-up checks (``EASYR1_SRC``, a source tree of
tag v0.3.2: EasyR1 is not on PyPI), see parity_easyr1.py and docs/parity.md."""

import os

import pytest

if not os.environ.get("EASYR1_SRC"):
    pytest.skip("EasyR1 parity needs EASYR1_SRC (EasyR1 v0.3.2's source tree): see docs/parity.md",
                allow_module_level=True)
# with EASYR1_SRC set nothing skips: a missing omegaconf is an import error, not a skip
import omegaconf  # noqa: E402

from parity_core import assert_parity, run_parity  # noqa: E402
from parity_easyr1 import (ALLOWED, DRIVER, MESH, ROLLOUT, VERSION, EasyR1Oracle, easyr1_cases,  # noqa: E402
                           overrides, source_dir, source_version)

from rlbatch_solver.frameworks import get_framework  # noqa: E402


@pytest.fixture(scope="module")
def src():
    # EASYR1_SRC set but not a tree of the release we follow: a failure, not a skip (CI fetched the wrong thing)
    found = source_dir()
    assert found, f"EASYR1_SRC={os.environ['EASYR1_SRC']} holds no verl/trainer/ray_trainer.py"
    assert source_version(found) == VERSION, f"EASYR1_SRC is EasyR1 {source_version(found)}, not {VERSION}"
    # EasyR1 pins no omegaconf; 2.4 refuses its own TrainerConfig.logger default (a 2-tuple typed Tuple[str]), so
    # main.py fails before any check: the oracle needs the 2.3 series (what hydra-core, and verl, pin)
    version = omegaconf.__version__
    assert version.startswith(("2.2.", "2.3.")), f"EasyR1 0.3.2 starts only under omegaconf<2.4, not {version}"
    return found


def test_parity_easyr1(parity_budget, src):
    count, seed = parity_budget
    report = run_parity("easyr1", easyr1_cases(seed, count), EasyR1Oracle(src).oracles(), seed=seed,
                        ours_input=overrides)
    assert_parity(report, count)


def test_every_rule_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED}
    ids = {r.id for r in get_framework("easyr1").ruleset.rules}
    compared = DRIVER | MESH | ROLLOUT
    assert ids - compared - allowed == set()
    assert compared | allowed <= ids
    assert not compared & allowed

"""slime 0.3.1: our rules against slime's own argument checks and DP schedule (``SLIME_SRC``, a source tree of tag
v0.3.1: slime is not on PyPI) and megatron-core 0.16.0's micro-batch calculator (``MEGATRON_CORE_DIR``), see
parity_slime.py and docs/parity.md."""

import os

import pytest

if not (os.environ.get("SLIME_SRC") or os.environ.get("MEGATRON_CORE_DIR")):
    pytest.skip("slime parity needs SLIME_SRC (slime v0.3.1's source) and/or MEGATRON_CORE_DIR (megatron-core "
                "0.16.0 installed with --target): see docs/parity.md", allow_module_level=True)

from parity_core import assert_parity, flag_argv, run_parity  # noqa: E402
from parity_slime import (ALLOWED, CALCULATOR, SCHEDULE, SGLANG_ARGS, SLIME_ARGS,  # noqa: E402
                          oracle_from_environment, slime_cases)

from rlbatch_solver.frameworks import get_framework  # noqa: E402
from rlbatch_solver.rules.base import Stage  # noqa: E402


def test_parity_slime(parity_budget):
    count, seed = parity_budget
    oracle = oracle_from_environment()
    report = run_parity("slime", slime_cases(seed, count), oracle.oracles(), seed=seed, ours_input=flag_argv)
    assert_parity(report, count)


def test_every_rule_before_the_first_step_is_compared_or_allowed():
    allowed = {a.rule for a in ALLOWED}
    ruleset = get_framework("slime").ruleset
    early = {r.id for r in ruleset.rules if r.stage in (Stage.DRIVER, Stage.TRAINER_INIT, Stage.WORKER_INIT,
                                                        Stage.FIRST_STEP)}
    compared = SLIME_ARGS | SGLANG_ARGS | CALCULATOR | SCHEDULE
    assert early - compared - allowed == set()
    assert compared | allowed <= {r.id for r in ruleset.rules}

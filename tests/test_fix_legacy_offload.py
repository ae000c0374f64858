"""OpenRLHF before 0.10.2 has one flag for both offloads, ``--ref_reward_offload``: fix and recommend print it.

Before, fix answered OpenRLHF issue 275's config (read as 0.7.5; named here: its flags date it 0.4.0, whose repair
must also set --vllm_num_engines, tests/test_fix_headroom.py) with ``--reward.offload``, 0.11.2's dotted name,
which that release's argparse refuses (``unrecognized arguments``); recommend left the offload out of the command.
The releases' rules now hold the two offloads equal (one flag sets both), and the flag is spelt as the release
spells it.
"""

from __future__ import annotations

import rlbatch_solver as rb
from rlbatch_solver.frameworks.openrlhf.framework import solution_to_flags
from rlbatch_solver.frameworks.openrlhf.versions import ruleset_for

from test_fix_headroom import ORL_275, ORL_275_RELEASE, _fixed

RULE = "openrlhf.driver.ref_reward_offload_one_flag"
KW = dict(framework=ORL_275_RELEASE, gpus=4, model="llama2-7b", gpu="rtx4090")


def test_fix_prints_the_one_flag_the_release_reads_and_the_answer_checks_as_printed():
    r = rb.fix(ORL_275, **KW)
    assert r.version == "0.7.5"
    assert "--ref_reward_offload" in r.native_after, r.native_after
    assert not any(a.startswith(("--reward.offload", "--ref.offload")) for a in r.native_after), r.native_after
    pasted = rb.check(_fixed(ORL_275, r.native_after), **KW)
    assert pasted.valid and not pasted.unknown_keys, ([v.rule for v in pasted.violations], pasted.unknown_keys)
    # what fix priced (MiB) is what check reads back: both models offloaded
    for phase, (peak, _) in r.memory_after.items():
        assert abs(pasted.memory.peaks[phase] - peak) <= 1, (phase, pasted.memory.peaks[phase], peak)


def test_the_legacy_releases_hold_both_offloads_equal_and_0_10_2_splits_them():
    for version in ("0.4.0", "0.7.5", "0.9.10"):
        rules = ruleset_for(version)
        assert RULE in {x.rule for x in rules.check(_values(version, ref=True, reward=False)).errors}, version
        assert RULE not in {x.rule for x in rules.check(_values(version, ref=True, reward=True)).errors}
    assert RULE not in {x.id for x in ruleset_for("0.10.4").rules}


def test_recommend_writes_the_one_flag_once():
    words = solution_to_flags({"ref_offload": True, "reward_offload": True}, version="0.7.5")
    assert words.count("--ref_reward_offload") == 1, words
    assert "--ref.offload" in solution_to_flags({"ref_offload": True, "reward_offload": True}, version="0.11.2")


def _values(version: str, *, ref: bool, reward: bool) -> dict:
    from rlbatch_solver.commands.fix_job import read_job

    values = read_job(ORL_275, f"openrlhf=={version}", 4, None, None, (), None, 1.0, None).values
    return {**values, "ref_offload": ref, "reward_offload": reward}

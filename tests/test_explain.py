"""``explain``: pasted framework errors map to our rules; with the config, a fix."""

import json
import subprocess
import sys

import pytest

from rlbatch_solver.api import explain
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.error_text import PATTERNS, match_error

from test_verl_rules import AR, SEED_4090, replace


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: f"{p.framework}:{p.rules[0]}")
def test_every_pattern_matches_its_message_and_names_real_rules(pattern):
    assert pattern.match(pattern.example), pattern.example
    ruleset = get_framework(pattern.framework).ruleset
    for rid in pattern.rules:
        ruleset.rule(rid)  # KeyError if the rule id drifted


def test_numbers_are_picked_out_of_the_message():
    found = match_error("AssertionError: real_train_batch_size (260) must be divisible by minimal possible batch size (8)")
    assert [p.rules for p, _ in found] == [("verl.driver.batch_divisible_by_gpus",)]
    assert found[0][1] == {"samples": "260", "minimal": "8"}


def test_explain_with_config_names_the_broken_rule_and_fixes_it():
    cfg = replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", 24)
    r = explain("AssertionError: data size must be divisible by force_group_size * micro_batch_size_per_gpu",
                framework="verl", config=cfg, gpus=4)
    assert [x.rule for x in r.rules] == ["verl.step.mini_divisible_by_micro"]
    assert r.fix is not None and r.fix.after is not None and len(r.fix.changes) == 1


def test_unknown_message_and_bad_input():
    assert not explain("CUDA error: an illegal memory access was encountered").matched
    with pytest.raises(InputError) as e:
        explain("   ")
    assert e.value.field == "error text"
    with pytest.raises(InputError):
        explain("x", framework="nope")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", *args], capture_output=True, text=True)


def test_cli_explain():
    p = run_cli("explain", "--json", "ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert "verl.actor.mini_le_train" in [r["rule"] for r in data["rules"]]
    assert run_cli("explain", "something else entirely").returncode == 1
    bad = run_cli("explain", "x", "--framework", "nope")
    assert bad.returncode == 2 and "framework" in bad.stderr

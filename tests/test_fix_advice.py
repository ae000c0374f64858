"""fix weighs the advice warnings a repair leaves (solver/costs.py WARNING_COST, one doubling each): among repairs
of as many keys, one that moves a value a little further and breaks no advice wins; a warning the answer still
breaks is said, with its numbers.

The config is OpenRLHF's published PPO script (Llama-3-8B, judged by 0.5.9's rules) with its train batch 128
mistyped as 100 (DeepSpeed refuses it: not a multiple of micro 8 x data-parallel 2). 96 is the nearest multiple of
16, but 1,024 rollout samples are not a whole number of 96-sample train batches (the advice
openrlhf.advice.whole_train_batches); 128 is a third of a doubling further and covers them evenly."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import run

SCRIPT = Path(__file__).parent / "data" / "scripts" / "openrlhf" / "train_ppo_llama_ray.sh"


def _script(tmp_path: Path, **flags: int) -> Path:
    text = SCRIPT.read_text()
    for flag, value in flags.items():
        old = next(line for line in text.splitlines() if line.strip().startswith(f"--{flag} "))
        text = text.replace(old, f"   --{flag} {value} \\")
    out = tmp_path / "run.sh"
    out.write_text(text)
    return out


def test_the_repair_that_keeps_the_advice_wins_over_a_nearer_one_that_breaks_it(tmp_path):
    p = run("fix", str(_script(tmp_path, train_batch_size=100)), "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["fixed_config"] == ["--train_batch_size 128"] and data["proven_nearest"]
    change = data["changes"][0]
    assert "openrlhf.advice.whole_train_batches" in change["satisfies"]  # the advice the value clears is said
    assert data["advice_after"] == []


def test_an_advice_no_repair_as_near_meets_is_said_with_its_numbers(tmp_path):
    # 1,000 samples: no multiple of 16 divides them, so the one-key repair of the train batch breaks the advice
    script = _script(tmp_path, train_batch_size=100, rollout_batch_size=1000)
    p = run("fix", str(script), "--json", "--keep", "micro_train_batch_size")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["fixed_config"] == ["--train_batch_size 96"]
    assert [(a["rule"], a["new"]) for a in data["advice_after"]] == [("openrlhf.advice.whole_train_batches", True)]
    assert "1000*1 = 1000 is not a multiple of train_batch_size = 96" in data["advice_after"][0]["text"]
    shown = " ".join(run("fix", str(script), "--keep", "micro_train_batch_size").stdout.split())
    assert ("note: the repaired config breaks the advice openrlhf.advice.whole_train_batches (a repair that meets "
            "it too moves the values more than one doubling further or changes another key): "
            "rollout_batch_size*n_samples_per_prompt = 1000*1 = 1000") in shown

"""explain on a parser's refusal of keys (argparse, Hydra's struct config, HfArgumentParser): the key it likely
misspells, and with the config the fix that renames it."""

from __future__ import annotations

import json

import pytest

from clirun import run
from rlbatch_solver.frameworks.key_names import refused_in_message


@pytest.mark.parametrize("message, framework, key, meant", [
    ("train_ppo_ray.py: error: unrecognized arguments: --train.bach_size 64", "openrlhf", "train.bach_size",
     "train.batch_size"),
    ("Could not override 'data.train_bach_size'.\nTo append to your config use +data.train_bach_size=8\n"
     "Key 'train_bach_size' is not in struct\n    full_key: data.train_bach_size", "verl", "data.train_bach_size",
     "data.train_batch_size"),
    ("ValueError: Some specified arguments are not used by the HfArgumentParser: ['--per_device_train_bach_size', "
     "'8']", "trl", "per_device_train_bach_size", "per_device_train_batch_size"),
])
def test_a_refused_key_is_named_with_the_key_it_likely_misspells(message, framework, key, meant):
    assert refused_in_message(message) == (framework, [key])
    res = run("explain", "--json", message)
    data = json.loads(res.stdout)
    assert data["matched"] and data["unknown_keys"] == [{"key": key, "did_you_mean": meant, "refused": True}]
    assert meant in data["meaning"][0]


def test_with_the_script_the_fix_renames_the_refused_flag(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m openrlhf.cli.train_ppo_ray --actor.num_nodes 1 --actor.num_gpus_per_node 4 --vllm.num_engines 4 "
        "--actor.model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --train.micro_batch_size 4 --train.bach_size 64 "
        "--rollout.micro_batch_size 8 --rollout.batch_size 64 --rollout.n_samples_per_prompt 4\n")
    res = run("explain", "train_ppo_ray.py: error: unrecognized arguments: --train.bach_size 64", script)
    # a rename keeping the value is said as fix says it, the value in the line to paste
    assert "  rename --train.bach_size -> --train.batch_size\n" in res.stdout, res.stdout
    assert "paste over yours: --train.batch_size 64" in res.stdout, res.stdout
    assert "openrlhf.launch.unknown_key" in res.stdout


def test_an_old_underscore_flag_is_still_the_legacy_names_rule():
    data = json.loads(run("explain", "--json", "train_ppo_ray.py: error: unrecognized arguments: "
                                              "--micro_train_batch_size 8").stdout)
    assert [r["rule"] for r in data["rules"]] == ["openrlhf.driver.legacy_flag_names"] and not data["unknown_keys"]

"""The Python API reads a launch script's path as the CLI does (commands/script_args.py): ``rb.check("run.sh")``
is the framework the script runs, its arguments, its launcher's GPU count and its model, with the same verdict as
``rlbatch check run.sh``; ``rb.fix`` and ``rb.explain(..., config="run.sh")`` too. A script path that does not
exist is an input error naming the config, not a pasted word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rlbatch_solver as rb

from clirun import run

SCRIPTS = Path(__file__).parent / "data" / "scripts"
# one published script per framework the scripts hold (the GPU count read from the launcher where it says one)
ONE_EACH = ["openrlhf/train_ppo_llama_ray.sh", "swift/gspo.sh", "swift-megatron/dense_colocate.sh",
            "verl/one_step_off_grpo_0.6b_gsm8k_fsdp2_2_6.sh", "verl-megatron/run_qwen2-7b_math_megatron.sh"]


def _rules(violations) -> list[tuple[str, str]]:
    return [(v["rule"], v["message"]) for v in violations]


@pytest.mark.parametrize("name", ONE_EACH)
def test_check_of_a_script_path_is_the_clis(name):
    path = SCRIPTS / name
    cli = json.loads(run("check", str(path), "--gpu", "h100", "--json").stdout)
    for config in (str(path), path, [str(path)]):
        report = rb.check(config, gpu="h100").to_dict()
        assert (report["framework"], report["rules_version"]) == (cli["framework"], cli["rules_version"])
        assert _rules(report["violations"]) == _rules(cli["violations"])
        assert report.get("memory") == cli.get("memory")
    assert f"read {path}: {cli['framework']}" in rb.check(path).notes


def test_arguments_after_the_scripts_path_override_it_as_on_the_command_line():
    path = SCRIPTS / "openrlhf" / "train_ppo_llama_ray.sh"
    r = rb.check([str(path), "--train_batch_size", "100"])
    assert r.framework == "openrlhf" and not r.valid
    assert "openrlhf.deepspeed.actor_batch" in [v.rule for v in r.violations]
    cli = json.loads(run("check", "--json", str(path), "--", "--train_batch_size", "100").stdout)
    assert _rules(r.to_dict()["violations"]) == _rules(cli["violations"])


def test_fix_and_explain_read_the_script_path(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text((SCRIPTS / "openrlhf" / "train_ppo_llama_ray.sh").read_text()
                      .replace("--train_batch_size 128", "--train_batch_size 100"))
    f = rb.fix(script)
    assert f.framework == "openrlhf" and f.native_after == ["--train_batch_size 128"]
    message = ("AssertionError: train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * "
               "world_size 100 != 8 * 6 * 2")
    e = rb.explain(message, config=str(script))
    assert e.fix is not None and e.fix.native_after == ["--train_batch_size 128"]
    assert f"read {script}: openrlhf" in e.notes
    cli = run("explain", message, str(script))
    assert cli.returncode == 0 and "--train_batch_size 128" in cli.stdout


def test_a_framework_named_beside_the_script_must_be_the_one_it_runs():
    with pytest.raises(rb.InputError) as err:
        rb.check(SCRIPTS / "openrlhf" / "train_ppo_llama_ray.sh", framework="verl")
    assert "runs openrlhf" in str(err.value)
    # a release of the framework it runs is kept
    assert rb.check(SCRIPTS / "openrlhf" / "train_ppo_llama_ray.sh", framework="openrlhf==0.9.10").version == "0.9.10"


def test_a_script_path_that_does_not_exist_is_an_input_error(tmp_path):
    missing = tmp_path / "no_such_run.sh"
    for call in (lambda: rb.check(str(missing)), lambda: rb.fix(missing), lambda: rb.explain("x", config=missing)):
        with pytest.raises(rb.InputError) as err:
            call()
        assert err.value.field == "config" and "does not exist" in str(err.value)
    cli = run("check", str(missing))
    assert cli.returncode == 2 and "does not exist" in cli.stderr and "Traceback" not in cli.stderr

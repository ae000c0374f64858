"""``check`` names the micro batch per GPU that verl of January 2025 runs for a global micro batch key (rollout.n
scales it, the GPU's share caps it: frameworks/verl/cost.py ``scaled_micro_batches``), and ``fix`` lowers it with
keys that release has. The real case: Logic-RL #8 (hesperxxz, Qwen2.5-7B GRPO on 4 A800, 8 prompts x 32 responses ran
out of memory; "reducing ppo_micro_batch_size did not help")."""

from __future__ import annotations

import json

import memory_corpus as mc
from clirun import run

import rlbatch_solver as rb
from rlbatch_solver.frameworks.verl import cost

OOM = "verl_logicrl8_qwen2_5_7b_grpo_bs8_n32_4xa800"
MICRO = "actor_rollout_ref.actor.ppo_micro_batch_size"


def _case(name: str) -> mc.Case:
    return next(c for c in mc.cases() if c.name == name)


def _cli(c: mc.Case, args: list[str], *flags: str):
    return run("check", "-f", c.framework, "--gpu", c.gpu, "--gpus", c.gpus, "--model", c.model, *flags, *args)


def _lowered(c: mc.Case, value: int) -> list[str]:
    return [f"{MICRO}={value}" if a.startswith(f"{MICRO}=") else a for a in c.args]


def test_check_prints_what_the_release_runs_per_gpu_for_a_global_micro_key():
    """The printed output (the CLI, not only the report's notes) carries the line, with the user's own move: 64 -> 8
    still runs the whole 64-sequence share; 4 runs rollout.n = 32."""
    c = _case(OOM)
    line = next(ln for ln in _cli(c, c.args).stdout.splitlines() if "global micro batch key" in ln)
    assert f"{MICRO} 64 -> 512, the GPU's whole mini batch of 64 sequences in one" in line
    assert "ActorRolloutRefWorker.__init__" in line
    assert f"{MICRO} 8 -> 64 sequences" in _cli(c, _lowered(c, 8)).stdout
    assert f"{MICRO} 4 -> 32 sequences" in _cli(c, _lowered(c, 4)).stdout


def test_check_json_gives_each_scaled_micro_batch_as_the_memory_model_prices_it():
    c = _case(OOM)
    res = _cli(c, c.args, "--json")
    field = json.loads(res.stdout)["micro_batches_per_gpu"]
    actor = next(m for m in field if m["phase"] == "actor_update")
    assert actor == {"phase": "actor_update", "variable": MICRO, "given": 64, "dp": 4, "n": 32, "scaled": 512,
                     "per_gpu": 64, "share_of": "mini batch"}
    assert [m["phase"] for m in field] == ["actor_update", "old_log_prob", "ref"]
    # one arithmetic: the line's numbers are the micro batches the memory estimate runs
    report = rb.check(c.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    plan = cost.make_plan(report.values, "actor_update", _card(c.model), _gpu(c.gpu), report.version)
    assert plan.train_micro == actor["per_gpu"]


def test_no_line_where_the_key_means_what_it_says():
    c = _case(OOM)
    for args in ([a.replace("rollout.n=32", "rollout.n=1") for a in c.args],
                 [a.replace("ppo_micro_batch_size=64", "ppo_micro_batch_size_per_gpu=16") for a in c.args]):
        res = _cli(c, args, "--json")
        assert "micro_batches_per_gpu" not in json.loads(res.stdout)
        assert "global micro batch key" not in _cli(c, args).stdout


def test_fix_lowers_the_scaled_micro_batch_with_keys_the_release_has():
    """With ppo_micro_batch_size lowered to 8 (still the whole 64-sequence share), fix moved a critic's per-GPU key
    (a GRPO run has no critic): a per-GPU key only dated the config after verl PR #136, which unscaled the model's
    micro batches without anything the fork runs changing. Now it packs the update by tokens."""
    c = _case(OOM)
    report = rb.fix(_lowered(c, 8), framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    keys = [k for k, _, _ in report.native_changes]
    assert report.after is not None and keys
    assert not [k for k in keys if k.endswith("_per_gpu")], keys
    assert report.after.get("actor_dyn") or report.after["train_batch_size"] < 8


def _card(name: str):
    from rlbatch_solver.catalog.models import load_model

    return load_model(name)


def _gpu(name: str):
    from rlbatch_solver.catalog.gpus import load_gpu

    return load_gpu(name)

"""``fix``'s headroom step: when the nearest repair leaves a training phase within the memory model's observed error of
the usable memory, the answer that keeps the headroom is weighed by the plain repair's own cost (keys beyond the
nearest repair's, then how far the numbers move), not by the number of keys alone.

Before, an OpenRLHF 0.11.2 config (7B, 8 colocated H100, 3 vLLM engines of TP 2, train.batch_size 100) was "fixed"
with ``--ds.tensor_parallel_size 1 -> 8`` (DeepSpeed AutoTP 8 for a 7B: data parallelism 8 -> 1), "proven nearest",
because it changes two keys like the nearest repair (``num_engines 4, train.batch_size 128``), which is tight at the
log-prob pass. Now the answer is that repair plus ``--rollout.micro_batch_size 16 -> 8``, and the output says which
repair was the proven nearest one.
"""

from __future__ import annotations

import json
import math

import rlbatch_solver as rb
from rlbatch_solver.commands.check import memory_error_log

ORL = ["--actor.num_nodes", "1", "--actor.num_gpus_per_node", "8", "--ref.num_nodes", "1",
       "--ref.num_gpus_per_node", "8", "--vllm.num_engines", "3", "--vllm.tensor_parallel_size", "2",
       "--train.colocate_all", "--vllm.gpu_memory_utilization", "0.6",
       "--actor.model_name_or_path", "Qwen/Qwen2.5-7B-Instruct", "--reward.remote_url", "reward_func.py",
       "--train.micro_batch_size", "4", "--train.batch_size", "100", "--rollout.micro_batch_size", "16",
       "--rollout.batch_size", "128", "--rollout.n_samples_per_prompt", "8", "--data.max_len", "4096",
       "--rollout.max_new_tokens", "3072", "--ds.zero_stage", "3", "--actor.gradient_checkpointing_enable",
       "--algo.advantage.estimator", "group_norm", "--algo.kl.use_loss", "--algo.kl.init_coef", "0.001"]


def _fixed(args: list[str], answer: list[str]) -> list[str]:
    """The pasted flags with the answer's pasted over them."""
    out = list(args)
    for arg in answer:
        key, _, value = arg.partition(" ")
        if key in out:
            i = out.index(key)
            out[i + 1] = value
        else:
            out += [key, value]
    return out


def test_a_tight_repair_gains_a_smaller_step_of_the_users_numbers_not_tp_8():
    r = rb.fix(ORL, framework="openrlhf", model="qwen2.5-7b", gpu="h100")
    keys = {k for k, _, _ in r.diff}
    assert "ds.tensor_parallel_size" not in keys
    assert dict((k, n) for k, _, n in r.diff) == {"vllm.num_engines": "--vllm.num_engines 4",
                                                 "train.batch_size": "--train.batch_size 128",
                                                 "rollout.micro_batch_size": "--rollout.micro_batch_size 8"}
    d = r.to_dict()
    # the nearest repair was proven; the answer, one key more, is not itself the nearest valid config
    assert d["nearest_repair"] == {"changes": ["--vllm.num_engines 4", "--train.batch_size 128"],
                                   "proven_nearest": True}
    assert d["proven_nearest"] is False and d["status"] == "feasible"
    assert any("keeps that headroom with one more key" in n for n in r.notes)
    # the answer keeps one observed error of headroom in every training phase, checked by check itself
    after = rb.check(_fixed(ORL, r.native_after), framework="openrlhf", model="qwen2.5-7b", gpu="h100")
    assert after.valid, [v.rule for v in after.violations]
    limit = math.exp(-memory_error_log("openrlhf"))
    assert all(after.memory.peaks[p] <= after.memory.capacity_of(p) * limit for p in after.memory.peaks
               if p != "rollout")


def test_cli_says_which_repair_is_the_proven_nearest_and_prints_the_answer(tmp_path):
    from typer.testing import CliRunner

    from rlbatch_solver.cli import app

    res = CliRunner().invoke(app, ["fix", "--framework", "openrlhf", "--model", "qwen2.5-7b", "--gpu", "h100", "--",
                                   *ORL])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert ("Valid config with memory headroom (3 change(s)" in out and "the nearest repair (proven nearest) is "
            "--vllm.num_engines 4 --train.batch_size 128; this one keeps the memory headroom:" in out)
    assert "Nearest valid config" not in out and "proven nearest among" not in out
    res = CliRunner().invoke(app, ["fix", "--json", "--framework", "openrlhf", "--model", "qwen2.5-7b", "--gpu",
                                   "h100", "--", *ORL])
    assert json.loads(res.stdout)["fixed_config"] == ["--vllm.num_engines 4", "--rollout.micro_batch_size 8",
                                                      "--train.batch_size 128"]


def test_a_repair_without_memory_is_the_plain_nearest_one():
    """Without --gpu and --model there is no headroom step: the proven nearest repair, two keys."""
    r = rb.fix(ORL, framework="openrlhf")
    assert r.proven and not r.nearest_diff
    assert {k for k, _, _ in r.diff} == {"vllm.num_engines", "train.batch_size"}


def test_the_fix_tools_schema_carries_the_nearest_repair_and_the_host_fields():
    import jsonschema

    from rlbatch_solver.agent.schemas import FIX

    d = json.loads(json.dumps(rb.fix(ORL, framework="openrlhf", model="qwen2.5-7b", gpu="h100").to_dict(), default=str))
    jsonschema.validate(d, FIX)
    assert {"nearest_repair", "host_memory_unfit"} <= set(FIX["properties"])
    with_bad = {**d, "nearest_repair": {"changes": "not a list", "proven_nearest": True}}
    try:
        jsonschema.validate(with_bad, FIX)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a nearest_repair of the wrong shape passed the schema")

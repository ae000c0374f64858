"""``fix``'s headroom step: when the nearest repair leaves a training phase within the memory model's observed error of
the usable memory, the answer that keeps the headroom is weighed by the plain repair's own cost (keys beyond the
nearest repair's, then how far the numbers move), not by the number of keys alone.

Before, an OpenRLHF 0.11.2 config (7B, 8 colocated H100, 3 vLLM engines of TP 2, train.batch_size 100) was "fixed"
with ``--ds.tensor_parallel_size 1 -> 8`` (DeepSpeed AutoTP 8 for a 7B: data parallelism 8 -> 1), "proven nearest",
because it changes two keys like the nearest repair (``num_engines 4, train.batch_size 128``: 96 is a third of a
doubling nearer, but 1,024 rollout samples are no whole number of 96-sample train batches, an advice warning the
repair's cost weighs as one doubling), which is tight at the log-prob pass. Now the answer is that repair plus
``--rollout.micro_batch_size 16 -> 8``, and the output says which repair was the proven nearest one.
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
    assert ("Valid config with memory headroom (3 changes" in out and "the nearest repair (proven nearest) is "
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


# OpenRLHF issue 275 (tests/data/memory_corpus/openrlhf.yaml, openrlhf_275): 7B PPO, one RTX 4090 per model. Its
# flags (--flash_attn, --actor_init_on_gpu, ...) date it 0.4.0, the oldest release that has them all, whose __main__
# compares the unset --vllm_num_engines with 1 (a repair must set it); these tests are of the headroom step on the
# memory rules alone, so they name 0.7.5, the newest release with these flags (no such comparison).
ORL_275_RELEASE = "openrlhf==0.7.5"
ORL_275 = ["--ref_num_nodes", "1", "--ref_num_gpus_per_node", "1", "--reward_num_nodes", "1",
           "--reward_num_gpus_per_node", "1", "--critic_num_nodes", "1", "--critic_num_gpus_per_node", "1",
           "--actor_num_nodes", "1", "--actor_num_gpus_per_node", "1", "--micro_train_batch_size", "8",
           "--train_batch_size", "64", "--micro_rollout_batch_size", "16", "--rollout_batch_size", "1024",
           "--max_epochs", "1", "--prompt_max_len", "1024", "--generate_max_len", "1024", "--zero_stage", "2", "--bf16",
           "--actor_learning_rate", "5e-7", "--critic_learning_rate", "9e-6", "--init_kl_coef", "0.01",
           "--normalize_reward", "--actor_init_on_gpu", "--adam_offload", "--flash_attn"]


def _fix_275():
    return rb.fix(ORL_275, framework=ORL_275_RELEASE, gpus=4, model="llama2-7b", gpu="rtx4090")


def test_the_headroom_step_halves_the_micro_batch_rather_than_taking_one_off():
    """Before: ``--micro_rollout_batch_size 16 -> 15`` (nearest by distance), which splits the 1024 samples of a
    rollout unevenly (openrlhf.advice.even_actor_samples). Now 8: a divisor of the 1024 samples."""
    r = _fix_275()
    moved = {k: n for k, _, n in r.diff}
    assert moved["micro_rollout_batch_size"] == "--micro_rollout_batch_size 8"
    # the greedy descent's steepest step (micro batch 8 -> 1) is walked back to what the fit needs (4)
    assert moved["micro_train_batch_size"] == "--micro_train_batch_size 4"
    assert "micro_rollout_batch_size" not in {k for k, _, _ in r.nearest_diff}  # the step added it
    after = rb.check(_fixed(ORL_275, r.native_after), framework=ORL_275_RELEASE, gpus=4, model="llama2-7b", gpu="rtx4090")
    assert after.valid and "openrlhf.advice.even_actor_samples" not in {v.rule for v in after.violations}


def test_a_headroom_change_says_the_margin_it_buys_not_a_rule_the_config_met():
    """Before: ``(satisfies openrlhf.memory.old_log_prob, ...)`` beside the headroom change, though
    the pasted config meets both (18.9 of 21.8 GiB): the rules came from the search priced one error higher."""
    r = _fix_275()
    met = {v.rule for v in rb.check(ORL_275, framework=ORL_275_RELEASE, gpus=4, model="llama2-7b",
                                    gpu="rtx4090").violations}
    assert "openrlhf.memory.old_log_prob" not in met
    for key, rules in r.satisfies.items():
        assert set(rules) <= met, (key, set(rules) - met)
    text = r.headroom["micro_rollout_batch_size"]
    # the phases at that margin are named (old_log_prob, and ref where it peaks alike)
    assert text.startswith("margin ") and "GiB in old_log_prob" in text and " at the nearest repair)" in text
    assert "8 divides the 1024 samples per rollout" in text
    assert set(r.headroom) == {"micro_rollout_batch_size"}  # the nearest repair's own changes keep their rules
    change = {c["key"]: c for c in r.to_dict()["changes"]}["micro_rollout_batch_size"]
    assert change["satisfies"] == [] and change["headroom"] == text


def test_cli_prints_the_margin_beside_the_headroom_change():
    from typer.testing import CliRunner

    from rlbatch_solver.cli import app

    res = CliRunner().invoke(app, ["fix", "--framework", ORL_275_RELEASE, "--gpus", "4", "--model", "llama2-7b", "--gpu",
                                   "rtx4090", "--", *ORL_275])
    out = " ".join(res.output.split())
    assert "+ --micro_rollout_batch_size 8 (margin " in out, out
    assert "satisfies openrlhf.memory.old_log_prob" not in out


def test_regular_values_are_the_divisors_of_the_batches_a_size_divides_else_powers_of_two():
    from rlbatch_solver.commands.fix_job import read_job
    from rlbatch_solver.commands.headroom_values import regular_values

    job = read_job(ORL_275, ORL_275_RELEASE, 4, None, None, (), None, 1.0, None)
    values = job.values
    keys = {"micro_rollout_batch_size", "micro_train_batch_size", "vllm_generate_batch_size"}
    reg = regular_values(job.fw.ruleset, values, keys)
    # 1024 samples per rollout / rollout micro batch (advice), DeepSpeed's 64 / (train micro * world 1) (error)
    assert [b.size for b in reg.batches["micro_rollout_batch_size"]] == [1024]
    assert [b.size for b in reg.batches["micro_train_batch_size"]] == [64]
    assert reg.allows("micro_rollout_batch_size", 8) and not reg.allows("micro_rollout_batch_size", 15)
    assert not reg.allows("micro_train_batch_size", 12) and reg.allows("micro_train_batch_size", 32)
    assert "vllm_generate_batch_size" not in reg.batches  # divides nothing: powers of two
    assert reg.allows("vllm_generate_batch_size", 64) and not reg.allows("vllm_generate_batch_size", 48)
    # ... and the divisors of the user's own value (80 -> 40: halved)
    mine = regular_values(job.fw.ruleset, values, keys, own={"vllm_generate_batch_size": 80})
    assert mine.allows("vllm_generate_batch_size", 40) and not mine.allows("vllm_generate_batch_size", 48)
    assert mine.why("vllm_generate_batch_size", 40) == "40 divides your 80"
    assert mine.why("vllm_generate_batch_size", 32) == "32 is a power of two"
    assert reg.allows("vllm_generate_batch_size", None) and reg.allows("rollout_batch_size", 1000)  # not covered
    filtered = reg.filtered({"micro_rollout_batch_size": [16, 15, 14, 12, 8, 4]}, {"micro_rollout_batch_size": 16})
    assert filtered == {"micro_rollout_batch_size": [16, 8, 4]}


def test_a_tight_note_lists_the_whole_alternative_never_a_pasted_value_as_a_further_move(monkeypatch):
    """Search-R1's 14B script with train_batch_size=1 on 4 H100 (verl 0.1): the note listed the alternative's
    difference from the nearest repair, so a value the alternative keeps at the pasted one read as a move "on top of
    this repair" (verl 0.4 LoRA: micro batch 40 after the repair had said 20). Now the alternative is listed whole,
    from the pasted config, each key at a value other than the pasted one. (That script's repair now keeps its
    headroom, so the note is checked on 60 prompts x 5 of a 14B model on 8 H100, verl 0.9.1, whose repair is tight,
    with the values the repairs move written out as pasted. Its repair from the pasted values now keeps the headroom
    with as few keys, found once the headroom step's searches were bounded by work rather than cut by seconds; it is
    withheld here, so the step from the nearest repair, which moves the algorithm's batch, is the alternative named.
    Responses of up to 1,536 tokens: at verl's default 1,024 the repair keeps the headroom of the model's observed
    error since that error narrowed.)"""
    from dataclasses import replace

    import rlbatch_solver.commands.fix_headroom as fix_headroom
    from clirun import run

    real = fix_headroom.repair_once

    def without_the_repair_from_the_pasted_values(fw, policy, values, *, regular=None, **kwargs):
        attempt = real(fw, policy, values, regular=regular, **kwargs)
        return attempt if regular is not None else replace(attempt, result=replace(attempt.result, solution=None))

    monkeypatch.setattr(fix_headroom, "repair_once", without_the_repair_from_the_pasted_values)

    pasted = {"data.train_batch_size": "60", "actor_rollout_ref.rollout.n": "5", "trainer.n_gpus_per_node": "8",
              "actor_rollout_ref.actor.ppo_mini_batch_size": "256", "critic.ppo_mini_batch_size": "256",
              "actor_rollout_ref.rollout.gpu_memory_utilization": "0.5",
              "actor_rollout_ref.actor.use_dynamic_bsz": "False", "critic.use_dynamic_bsz": "False",
              "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": "False",
              "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": "16384", "data.max_response_length": "1536"}
    out = run("fix", "--gpu", "h100", "--model", "qwen2.5-14b", "--",
              *(f"{k}={v}" for k, v in pasted.items()))
    tight = [line for line in out.stdout.splitlines() if line.startswith("note: tight")]
    assert tight and "instead of this one: " in tight[0], out.stdout
    alternative = dict(kv.split("=", 1) for kv in tight[0].split("instead of this one: ", 1)[1].split())
    assert alternative and all(pasted.get(k) != v for k, v in alternative.items()), tight[0]

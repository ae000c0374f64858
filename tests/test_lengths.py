"""The response-length profile (costmodel/lengths.py): chosen by the model's family, printed as an assumption, and
the straggler a synchronous rollout waits for."""

from __future__ import annotations

import pytest

from clirun import run
from rlbatch_solver.costmodel.constants import DEFAULT_AVG_RESPONSE_FRACTION
from rlbatch_solver.costmodel.lengths import DEFAULT, REASONING, profile_for, straggler_tokens


@pytest.mark.parametrize("name", ["deepseek-r1-distill-qwen-1.5b", "deepseek-r1-distill-qwen-7b", "qwen3-8b",
                                  "qwen3-30b-a3b", "QwQ-32B"])
def test_reasoning_models_take_the_reasoning_profile(name):
    assert profile_for(name) is REASONING and REASONING.response_fraction > DEFAULT_AVG_RESPONSE_FRACTION


@pytest.mark.parametrize("name", ["qwen2.5-7b", "llama2-7b", "deepseek-llm-7b", "qwen3-30b-a3b-instruct-2507"])
def test_other_models_take_the_default(name):
    assert profile_for(name) is DEFAULT and DEFAULT.response_fraction == DEFAULT_AVG_RESPONSE_FRACTION


def test_the_straggler_reaches_the_limit_in_a_large_step_and_not_in_a_tiny_one():
    assert straggler_tokens(0.55 * 8192, 8192, 512) == 8192
    one = straggler_tokens(0.1 * 8192, 8192, 1)
    assert one == pytest.approx(0.1 * 8192, rel=0.01)  # one sample: its own expected length (the cap barely cuts)
    assert straggler_tokens(0.0, 8192, 512) == 0.0


def _check(model: str, *extra: str) -> str:
    proc = run("check", "--gpu", "h100", "--model", model, "--gpus", "8", *extra, "--",
               "data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
               "actor_rollout_ref.actor.ppo_mini_batch_size=32", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
               "data.max_prompt_length=1024", "data.max_response_length=8192")
    return " ".join(proc.stdout.split())


def test_check_prints_the_profile_and_the_straggler():
    out = _check("deepseek-r1-distill-qwen-1.5b")
    assert "response 4,506 of 8,192 (assumed: 0.55 of the limit, reasoning model" in out, out
    assert "waits for its longest response, ~8,192 tokens (the limit)" in out
    out = _check("qwen2.5-1.5b")
    assert "response 2,867 of 8,192 (assumed: 0.35 of the limit" in out, out


def test_a_given_mean_replaces_the_profile():
    out = _check("deepseek-r1-distill-qwen-1.5b", "--mean-response-len", "1000")
    assert "response 1,000 of 8,192 (given)" in out, out

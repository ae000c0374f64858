"""The response-length profile (costmodel/lengths.py): chosen by the model's family, printed as an assumption, and
the straggler a synchronous rollout waits for."""

from __future__ import annotations

import pytest

from clirun import run
from rlbatch_solver.costmodel.constants import DEFAULT_AVG_RESPONSE_FRACTION
from rlbatch_solver.costmodel.lengths import (DAPO_MATH_PROMPT, DEFAULT, GSM8K, MATH, PROFILES, REASONING,
                                              data_prompt, dataset_of, named, profile_for, straggler_tokens)
from rlbatch_solver.costmodel.time import length_scale
from rlbatch_solver.errors import InputError


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


def _check(model: str, *extra: str, config: tuple = ()) -> str:
    proc = run("check", "--gpu", "h100", "--model", model, "--gpus", "8", *extra, "--",
               "data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
               "actor_rollout_ref.actor.ppo_mini_batch_size=32", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
               "data.max_prompt_length=1024", "data.max_response_length=8192", *config)
    return " ".join(proc.stdout.split())


def test_check_prints_the_profile_and_the_straggler():
    out = _check("deepseek-r1-distill-qwen-1.5b")
    assert ("response 4,260 of 8,192 (assumed: profile reasoning (from the model's family), 0.52 of the limit at "
            "8,192 tokens x (limit/8,192)^-0.28; reasoning model") in out, out
    assert "waits for its longest response, ~8,192 tokens (the limit)" in out
    assert "prompt 287 of 1,024 (assumed: 0.28 of the limit, the published runs' mean prompt share)" in out, out
    out = _check("qwen2.5-1.5b")
    assert "response 2,867 of 8,192 (assumed: profile default, 0.35 of the limit" in out, out
    out = _check("qwen2.5-1.5b", "--response-profile", "limit")
    assert "prompt 1,024 of 1,024 (assumed: the limit)" in out, out


def test_the_reasoning_share_falls_with_the_limit_through_its_published_runs():
    # DeepScaleR 0.55 at 8K; verl #3816 0.34 at 20K, #3727 0.37 at 30K, v1_async_trainer 0.39 at 32K
    for limit, published in ((8192, 0.55), (20480, 0.34), (30000, 0.37), (32768, 0.39)):
        assert abs(REASONING.fraction(limit) / published - 1) < 0.2, (limit, REASONING.fraction(limit))
    assert REASONING.fraction(1024) > REASONING.fraction(8192) > REASONING.fraction(32768)
    assert REASONING.fraction(64) == 1.0  # a share never passes the limit
    assert REASONING.mean_response(32768) > REASONING.mean_response(8192)  # a longer limit still answers longer


def test_a_given_mean_replaces_the_profile():
    out = _check("deepseek-r1-distill-qwen-1.5b", "--mean-response-len", "1000")
    assert "response 1,000 of 8,192 (given)" in out, out


@pytest.mark.parametrize("data, profile", [("$HOME/data/gsm8k/train.parquet", GSM8K), ("openai/gsm8k", GSM8K),
                                           ("${RAY_DATA_HOME}/data/dapo-math-17k.parquet", MATH),
                                           ("trl-lib/DeepMath-103K", MATH), ("AI-MO/NuminaMath-TIR#1000", MATH),
                                           ("hiyouga/math12k@train", MATH), ("OpenRLHF/prompt-collection-v0.1", DEFAULT),
                                           ("", DEFAULT)])
def test_a_non_reasoning_model_takes_its_datas_profile(data, profile):
    assert profile_for("qwen2.5-7b", data) is profile


def test_a_reasoning_model_keeps_its_profile_whatever_the_data_and_a_named_one_wins():
    assert profile_for("deepseek-r1-distill-qwen-1.5b", "openai/gsm8k") is REASONING
    assert profile_for("deepseek-r1-distill-qwen-1.5b", "openai/gsm8k", "math") is MATH


def test_a_natural_length_does_not_grow_with_the_limit_and_a_share_does():
    assert MATH.mean_response(4096) < MATH.mean_response(32768) <= MATH.natural_tokens
    assert MATH.mean_response(32768) == pytest.approx(MATH.natural_tokens, rel=1e-6)
    assert DEFAULT.mean_response(32768) == pytest.approx(8 * DEFAULT.mean_response(4096))
    # a reasoning share falls with the limit: the mean grows, but less than the limit (limit^0.72)
    assert 4 < REASONING.mean_response(32768) / REASONING.mean_response(4096) < 8
    # the capped mean is the exponential's: the scale the drain solves for is the profile's natural length
    assert length_scale(GSM8K.mean_response(1024), 1024) == pytest.approx(GSM8K.natural_tokens, rel=1e-3)


@pytest.mark.parametrize("flat, data", [({"data.train_files": "a/gsm8k.parquet"}, "a/gsm8k.parquet"),
                                        ({"prompt_data": "x"}, "x"), ({"data.prompt_dataset": "y"}, "y"),
                                        ({"dataset_name": "z"}, "z"), ({"dataset": ["p", "q"]}, "p q"),
                                        ({"prompt-data": "s.jsonl"}, "s.jsonl"), ({"data.train_data": ["k"]}, "k"),
                                        ({}, "")])
def test_each_frameworks_data_key_is_read(flat, data):
    assert dataset_of(flat) == data


def test_an_unknown_profile_is_an_input_error_naming_the_known_ones():
    with pytest.raises(InputError) as e:
        named("long")
    assert all(name in str(e.value) for name in PROFILES)


def test_the_data_in_the_config_chooses_the_profile_and_prompts_take_its_mean():
    out = _check("qwen2.5-1.5b", config=("data.train_files=$HOME/data/gsm8k/train.parquet",))
    assert "prompt 93 of 1,024 (assumed: profile gsm8k's data mean)" in out, out
    assert "response 232 of 8,192 (assumed: profile gsm8k (from the data, $HOME/data/gsm8k/train.parquet)" in out


@pytest.mark.parametrize("data", ["${RAY_DATA_HOME}/data/dapo-math-17k.parquet", "BytedTsinghua-SIA/DAPO-Math-17k",
                                  "/data/dapo_math_train.parquet"])
def test_dapo_math_data_names_its_published_mean_prompt(data):
    assert data_prompt(data) is DAPO_MATH_PROMPT and DAPO_MATH_PROMPT.tokens == 156
    assert data_prompt("$HOME/data/gsm8k/train.parquet") is None and data_prompt("") is None


def test_the_datas_mean_prompt_holds_whatever_profile_the_model_takes_but_not_the_limit_profile():
    dapo = ("data.train_files=$HOME/data/dapo-math-17k.parquet",)
    for model in ("qwen2.5-7b", "qwen3-8b"):  # the math profile (the data's task) and the reasoning one (the model)
        out = _check(model, config=dapo)
        assert "prompt 156 of 1,024 (assumed: DAPO-Math-17k's mean prompt: 154-160 tokens" in out, out
    assert "prompt 156 of 1,024" in _check("qwen2.5-7b", "--response-profile", "gsm8k", config=dapo)
    worst = _check("qwen2.5-7b", "--response-profile", "limit", config=dapo)
    assert "prompt 1,024 of 1,024 (assumed: the limit)" in worst, worst
    given = _check("qwen2.5-7b", "--mean-prompt-len", "300", config=dapo)
    assert "prompt 300 of 1,024 (given)" in given, given


def test_a_named_profile_is_printed_and_an_unknown_one_exits_2():
    out = _check("qwen2.5-1.5b", "--response-profile", "math")
    assert "response 1,494 of 8,192 (assumed: profile math (named), a natural length of 1,500 tokens" in out, out
    proc = run("check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--gpus", "8", "--response-profile", "long",
               "--", "data.train_batch_size=64")
    assert proc.returncode == 2 and "is not a length profile" in proc.stderr + proc.stdout


def test_a_scenario_names_its_profile_or_its_data_and_recommend_times_with_it():
    from rlbatch_solver.api import recommend
    from rlbatch_solver.scenario import Scenario

    def lengths(**kw):
        sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                      prompt_length=512, response_length=4096, **kw)
        return recommend(sc, time_limit_s=5).lengths

    assert lengths(response_profile="math")["profile"] == "math"
    by_data = lengths(dataset="openai/gsm8k")
    assert by_data["profile"] == "gsm8k" and by_data["profile_chosen"] == "the data" and by_data["prompt"] == 93
    # no data named: the data of the command recommend prints, verl's GSM8K example (check prices that command so)
    unnamed = lengths()
    assert unnamed["profile"] == "gsm8k" and "gsm8k/train.parquet" in unnamed["dataset"]
    with pytest.raises(InputError):
        Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", response_profile="long")


def test_sweep_applies_a_profile_to_the_points_that_name_none(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("framework: verl\ngpu: h100\ngpus: 8\nmodel: qwen2.5-1.5b\nalgorithm: grpo\nn: 8\n"
                    "prompt_length: 512\nresponse_length: [2048, 4096]\nresponse_profile: [gsm8k, null]\n"
                    "time_limit_s: 5\n")
    out = tmp_path / "out.jsonl"
    assert run("sweep", str(grid), "--out", str(out), "--no-progress", "--response-profile", "math").returncode == 0
    import json

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["mean_lengths"]["profile"] for r in rows) == ["gsm8k", "gsm8k", "math", "math"]


def test_the_length_laws_moments_match_its_integral():
    """capped_moments: mean and variance of min(X, cap) for X exponential with the scale that gives the capped mean,
    checked against a numerical integral of the same law."""
    import math

    from rlbatch_solver.costmodel.lengths import capped_moments

    cap = 1024.0
    for mean in (0.1 * cap, 260.0, 0.35 * cap, 0.8 * cap):
        lam = length_scale(mean, cap)
        steps = 20000
        dx = cap / steps
        m1 = sum((i + 0.5) * dx * math.exp(-(i + 0.5) * dx / lam) / lam * dx for i in range(steps))
        m2 = sum(((i + 0.5) * dx) ** 2 * math.exp(-(i + 0.5) * dx / lam) / lam * dx for i in range(steps))
        tail = math.exp(-cap / lam)  # the share of responses cut at the cap
        m1, m2 = m1 + cap * tail, m2 + cap * cap * tail
        got_mean, got_var = capped_moments(mean, cap)
        assert got_mean == pytest.approx(mean, rel=1e-6) == pytest.approx(m1, rel=1e-3)
        assert got_var == pytest.approx(m2 - m1 * m1, rel=1e-3)
    assert capped_moments(cap, cap) == (cap, 0.0)  # every response at the cap


def test_a_packed_micro_batch_is_priced_at_a_high_quantile_of_its_summed_lengths():
    """packed_sum_tokens: n prompts at their mean plus the 99.9th percentile of n responses' sum (constants
    PACKED_SUM_Z), never more than n responses at the cap. One sequence reaches the cap at the default mean (two nearly);
    many concentrate towards n x the mean (the excess falls as 1/sqrt(n))."""
    from rlbatch_solver.costmodel.constants import PACKED_SUM_Z
    from rlbatch_solver.costmodel.lengths import capped_moments, packed_sum_tokens

    cap, mean = 1024.0, DEFAULT_AVG_RESPONSE_FRACTION * 1024.0
    assert packed_sum_tokens(1, 93, mean, 512, cap, PACKED_SUM_Z) == 93 + cap
    assert packed_sum_tokens(2, 93, mean, 512, cap, PACKED_SUM_Z) == pytest.approx(2 * (93 + cap), rel=0.002)
    _, var = capped_moments(mean, cap)
    excess = [packed_sum_tokens(n, 0, mean, 512, cap, PACKED_SUM_Z) / (n * mean) - 1 for n in (8, 32, 128)]
    assert excess[0] > excess[1] > excess[2] > 0
    assert excess[2] == pytest.approx(PACKED_SUM_Z * (var / 128) ** 0.5 / mean, rel=1e-9)
    assert packed_sum_tokens(128, 93, mean, 512, cap, 0.0) == pytest.approx(128 * (93 + mean))  # z 0: the mean
    assert packed_sum_tokens(4, 600, mean, 512, cap, PACKED_SUM_Z) <= 4 * (512 + cap)  # a mean over the limit: cut


def _stated_point():
    """OpenRLHF's 2024 README (35865c7e), Llama-2-7B on 8 A100s: "generation_length = 100~300" under
    --generate_max_len 1024, 16 prompts a generate call (the measured set's record)."""
    from pathlib import Path

    import yaml

    points = yaml.safe_load((Path(__file__).parent / "data" / "measured" / "points.yaml").read_text())
    return next(p for p in points if p["name"] == "openrlhf_readme2024_llama2_7b_ray_ppo_8xa100")


def _rollout(point, longest):
    """(the straggler check prints, the rollout's decode steps per generate call) for the record with the stated
    longest response ``longest`` (None: not stated)."""
    from dataclasses import replace

    from crossval import derived_run
    from rlbatch_solver.costmodel.efficiency import DEFAULT_EFFICIENCY
    from rlbatch_solver.costmodel.memory import hf_generate_calls
    from rlbatch_solver.costmodel.phase import Phase
    from rlbatch_solver.costmodel.tables import mean_lengths
    from rlbatch_solver.costmodel.time import estimate_time

    run = derived_run({**point, "longest_response_length": longest})
    spec = replace(run.spec, plan=lambda values, phase: run._plan(values, phase, DEFAULT_EFFICIENCY))
    plan = spec.plan(run.values, Phase.ROLLOUT)
    assert plan.engine == "hf" and plan.response_len == 1024
    report = estimate_time(plan)
    return mean_lengths(spec, run.values)["longest"], report.decode_steps / hf_generate_calls(plan)


def test_a_stated_longest_response_bounds_the_straggler_of_a_real_run():
    point = _stated_point()
    assert (point["mean_response_length"], point["longest_response_length"]) == (200, 300)
    # not stated: the length law (exponential, mean 200, capped at the 1,024 limit) puts the step's longest far past
    # the README's 300, and each call of 16 prompts runs to its own longest of 16 (past 300 too)
    free, free_steps = _rollout(point, None)
    assert free > 600 and 300 < free_steps < free
    # stated: the law is capped at 300, which it truncates: the step's longest and every call end at 300
    longest, steps = _rollout(point, 300)
    assert longest == 300 and steps == pytest.approx(300)
    # a stated longest above the limit is the limit's; the longest never falls under the mean
    assert _rollout(point, 4096) == (free, free_steps)


def test_the_response_cap_is_the_limit_or_the_stated_longest_never_under_the_mean():
    from types import SimpleNamespace

    from rlbatch_solver.costmodel.lengths import response_cap

    assert response_cap(SimpleNamespace(response_len=1024, longest_response=None), 200) == 1024
    assert response_cap(SimpleNamespace(response_len=1024, longest_response=300), 200) == 300
    assert response_cap(SimpleNamespace(response_len=1024, longest_response=2048), 200) == 1024
    assert response_cap(SimpleNamespace(response_len=1024, longest_response=150), 200) == 200
    assert straggler_tokens(200, response_cap(SimpleNamespace(response_len=1024, longest_response=300), 200), 16) == 300


def _json_check(*extra: str) -> dict:
    import json

    proc = run("check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--gpus", "8", "--json", *extra, "--",
               "data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
               "actor_rollout_ref.actor.ppo_mini_batch_size=32", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
               "data.max_prompt_length=1024", "data.max_response_length=8192")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["memory"]


def test_a_longest_response_given_on_the_command_line_caps_the_rollout_and_is_printed():
    """--longest-response-len: the rollout waits for at most that response (not the length law's longest, here the
    8,192 limit), an assumed mean is the profile's share of it (the law is truncated there), memory keeps the limit,
    and the answer says so."""
    free, given = _json_check(), _json_check("--longest-response-len", "2000")
    assert free["mean_lengths"]["longest"] == 8192 and free["mean_lengths"]["longest_from"] == "assumed"
    assert given["mean_lengths"]["longest"] <= 2000 and given["mean_lengths"]["longest_from"] == "given"
    assert given["mean_lengths"]["response"] == pytest.approx(0.35 * 2000, rel=0.01)
    assert given["phase_seconds"]["rollout"] < free["phase_seconds"]["rollout"]
    assert {p: v["peak_mib"] for p, v in given["phases"].items()} == {p: v["peak_mib"] for p, v in free["phases"].items()}
    out = _check("qwen2.5-1.5b", "--longest-response-len", "2000")
    assert "applied to the longest given (2,000) as its limit" in out and "(at most the longest given)" in out, out
    out = _check("qwen2.5-1.5b", "--mean-response-len", "500", "--longest-response-len", "2000")
    assert "response 500 of 8,192 (given)" in out and "(at most the longest given)" in out, out
    assert "state yours with --longest-response-len" in " ".join(_check("qwen2.5-1.5b", "--response-profile",
                                                                         "gsm8k").split())


@pytest.mark.parametrize("extra", [["--longest-response-len", "0"], ["--longest-response-len", "-5"],
                                   ["--longest-response-len", "nan"], ["--longest-response-len", "inf"],
                                   ["--mean-response-len", "1000", "--longest-response-len", "500"]])
def test_a_longest_response_that_is_no_length_exits_2_naming_the_field(extra):
    proc = run("check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--gpus", "8", *extra, "--",
               "data.train_batch_size=64")
    text = proc.stderr + proc.stdout
    assert proc.returncode == 2 and "longest_response_length" in text and "Traceback" not in text, text


def test_recommend_and_a_scenario_take_the_longest_response():
    from rlbatch_solver.api import recommend
    from rlbatch_solver.commands.recommend import check_options
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=512, response_length=4096, response_profile="default", longest_response_length=900)
    lengths = recommend(sc, time_limit_s=5).lengths
    assert lengths["longest"] <= 900 and lengths["longest_from"] == "given"
    assert check_options(sc)[-2:] == ["--longest-response-len", "900"]
    with pytest.raises(InputError):
        Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", longest_response_length=-1)


def test_the_agent_tools_take_the_longest_response():
    from rlbatch_solver.agent import tools
    from rlbatch_solver.agent.schemas import INPUTS

    assert "longest_response_len" in INPUTS["check"]["properties"]
    assert "longest_response_len" in INPUTS["recommend"]["properties"]
    args = ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "data.max_response_length=8192"]
    lengths = tools.check(args=args, gpus=8, model="qwen2.5-1.5b", gpu="h100",
                          longest_response_len=900).data["memory"]["mean_lengths"]
    assert lengths["longest_from"] == "given" and lengths["longest"] <= 900


def test_a_sweep_grid_states_the_longest_response(tmp_path):
    import json

    grid = tmp_path / "grid.yaml"
    grid.write_text("framework: verl\ngpu: h100\ngpus: 8\nmodel: qwen2.5-1.5b\nalgorithm: grpo\nn: 8\n"
                    "prompt_length: 512\nresponse_length: 4096\nlongest_response_length: 900\ntime_limit_s: 5\n")
    out = tmp_path / "out.jsonl"
    assert run("sweep", str(grid), "--out", str(out), "--no-progress").returncode == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["mean_lengths"]["longest_from"] == "given" and row["mean_lengths"]["longest"] <= 900


def test_a_length_given_above_the_configs_limit_is_said_to_be_taken_at_the_limit():
    """A mean or longest response given above the config's max_response_length is priced at the limit (a response
    never runs past it); the answer says the given number was above the limit rather than printing "(the limit)" or
    "(given)" as if it had been read as given: a user who gives 12,000 for an 8,192 limit learns the config cuts
    the answers the data has."""
    out = " ".join(_check("qwen2.5-1.5b", "--longest-response-len", "12000").split())
    assert "the longest given, 12,000, is above the limit of 8,192" in out, out
    out = " ".join(_check("qwen2.5-1.5b", "--mean-response-len", "9000").split())
    assert "response 8,192 of 8,192 (given 9,000, above the limit: taken at it)" in out, out
    out = " ".join(_check("qwen2.5-1.5b", "--mean-response-len", "500").split())
    assert "response 500 of 8,192 (given)" in out, out


def test_a_prompts_completions_share_its_length_as_trl_logs_show():
    """TRL's logged longest / mean completion (docs/cost-model.md section 4, "A prompt's completions share its
    length"): batches of one prompt x 2 log 1.09-1.10, two prompts x 4 log 1.47-1.49; independent exponential
    lengths would give 1.5 and 2.72."""
    from rlbatch_solver.costmodel.lengths import harmonic, straggler_factor

    assert straggler_factor(2, 2) == pytest.approx(1.095, abs=0.01)  # within the logged 1.09-1.10
    assert 1.47 < straggler_factor(8, 4) < harmonic(8)  # above the logged, far under independent lengths
    assert straggler_factor(512, 1) == pytest.approx(harmonic(512))  # groups of one: every completion its own
    assert straggler_factor(3, 8) == straggler_factor(3, 3)  # a call holding part of one prompt's group
    # a synchronous step of one GSM8K prompt x 6 (Unsloth's notebooks) waits for about 1.3x the mean, not 2.45x
    lam = length_scale(200.0, 768.0)
    assert 1.2 * lam < straggler_tokens(200.0, 768.0, 6, 6) < 1.4 * lam
    assert straggler_tokens(200.0, 768.0, 6, 6) < 0.6 * straggler_tokens(200.0, 768.0, 6)


@pytest.mark.parametrize("prompts,group", [(512, 16), (256, 8), (64, 16), (1024, 5), (2, 4), (1, 2), (8, 1)])
def test_a_group_sharing_its_prompts_length_never_waits_longer_than_independent_completions(prompts, group):
    """Completions that share their prompt's length can only end closer together than as many independent ones:
    the expected longest is at most the independent value H(prompts x group). The product law H(g) x (1 + s (H(m)
    - 1)) alone crossed it in large steps (verl's 512 prompts x 16: 9.9 against 9.6)."""
    from rlbatch_solver.costmodel.lengths import harmonic, straggler_factor

    samples = prompts * group
    assert straggler_factor(samples, group) <= harmonic(samples) + 1e-12
    # and never under the longest of the prompts' own lengths (every group at least its prompt's)
    assert straggler_factor(samples, group) >= harmonic(prompts) - 1e-12


@pytest.mark.parametrize("framework,args,group", [
    ("verl", ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8"], 8),
    ("trl", ["--per_device_train_batch_size", "8", "--num_generations", "4"], 4),
    ("openrlhf", ["--rollout_batch_size", "64", "--n_samples_per_prompt", "4"], 4),
])
def test_each_framework_names_its_group_size(framework, args, group):
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.phase import Phase

    run = make_run(framework, args, gpu="h100", model="qwen2.5-7b", gpus=8)
    assert run.spec.plan(run.values, Phase.ROLLOUT).group_size == group

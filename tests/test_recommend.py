"""recommend: the CP-SAT optimum equals exhaustive evaluation of the same cost model (gap 0),
every returned config passes the checker (memory rules included), and the cost tables equal
the full cost model on the configs they describe."""

import json
import math
from dataclasses import replace

import pytest
import yaml

import rlbatch_solver as rb
from bruteforce import assert_tables_match_cost_model
from clirun import run

from rlbatch_solver.api import prepare
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel.tables import MIB
from rlbatch_solver.scenario import Scenario
from rlbatch_solver.solver.exhaustive import best_by_exhaustion
from rlbatch_solver.solver.optimize import optimize

AR = "actor_rollout_ref"

SMALL_SEARCH = {
    "data.train_batch_size": [16, 32, 64],
    f"{AR}.actor.ppo_mini_batch_size": [8, 16, 32],
    f"{AR}.actor.ppo_micro_batch_size_per_gpu": [1, 2, 4, 8],
    f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": [2, 8],
    f"{AR}.rollout.tensor_model_parallel_size": [1, 2],
    f"{AR}.rollout.gpu_memory_utilization": [0.4, 0.6],
    f"{AR}.model.enable_gradient_checkpointing": [True, False],
}


def small_scenario(gpu="rtx4090", gpus=4, model="qwen2.5-0.5b", algo="grpo", objective="time", search=None, **kw):
    return Scenario(framework="verl", gpu=gpu, gpus=gpus, model=model, algorithm=algo, n=4, prompt_length=512,
                    response_length=1024, search=dict(search or SMALL_SEARCH), objective=objective, **kw)


def exhaustive(scenario):
    """Every assignment of the space, checked with the checker, scored with the same objective."""
    fw, card, gpu, space, spec, terms, ruleset = prepare(scenario)
    maximize = scenario.objective == "memory-headroom"
    objective = terms.headroom_mib if maximize else terms.time_us_per_sample
    best, _ = best_by_exhaustion(ruleset, space, objective, maximize)
    if best is not None and maximize:
        best = -best
    return best, (fw, space, spec, terms, ruleset, objective)


@pytest.mark.parametrize("case", [
    dict(),
    dict(gpu="a100-80gb", gpus=2, model="qwen2.5-1.5b"),
    dict(gpu="h100", gpus=8, model="qwen2.5-3b", algo="ppo"),
    dict(gpu="rtx4090", gpus=2, model="qwen2.5-1.5b", objective="memory-headroom"),
])
def test_cpsat_optimum_equals_exhaustive_evaluation(case):
    sc = small_scenario(**case)
    expected, (fw, space, spec, terms, ruleset, objective) = exhaustive(sc)
    res = optimize(ruleset, space.domains, objective, maximize=sc.objective == "memory-headroom", top=3,
                   time_limit_s=30)
    if expected is None:
        assert res.status == "infeasible"
        return
    assert res.proven
    got = res.ranked[0].objective
    assert (-got if sc.objective == "memory-headroom" else got) == expected  # gap 0
    scores = [r.objective for r in res.ranked]
    assert scores == sorted(scores, reverse=sc.objective == "memory-headroom")  # proven order
    for r in res.ranked:
        assert ruleset.check(r.solution).valid


def test_the_runners_up_are_enumerated_on_a_copy_of_the_optimums_model(monkeypatch):
    """optimize builds its model once: each band of runners-up enumerates a copy of it (the same model a rebuild
    gives), not a model built again from the rules and the cost tables."""
    import rlbatch_solver.solver.optimize as opt

    sc = small_scenario()
    fw, card, gpu, space, spec, terms, ruleset = prepare(sc)
    builds = []
    real = opt.build_model
    monkeypatch.setattr(opt, "build_model", lambda *a, **k: builds.append(1) or real(*a, **k))
    res = optimize(ruleset, space.domains, terms.time_us_per_sample, top=3, time_limit_s=30)
    assert res.proven and len(res.ranked) == 3 and len(builds) == 1


def test_a_band_that_ranks_the_runners_up_settles_the_optimums_tie_without_a_solve_of_its_own(monkeypatch):
    """With runners-up, the band of the optimal objective is enumerated and ordered by the tie-break: its first is the
    config a tie-settling solve finds (asked for the best alone, optimize runs that solve and answers the same)."""
    import rlbatch_solver.solver.optimize as opt
    from rlbatch_solver.commands.recommend import tie_break

    sc = small_scenario()
    fw, card, gpu, space, spec, terms, ruleset = prepare(sc)
    then = tie_break(terms, space.domains)
    settled = []
    real = opt._settle_tie
    monkeypatch.setattr(opt, "_settle_tie", lambda *a, **k: settled.append(1) or real(*a, **k))
    ranked = optimize(ruleset, space.domains, terms.time_us_per_sample, top=3, time_limit_s=30, then=then)
    assert ranked.proven and len(ranked.ranked) == 3 and not settled
    best = optimize(ruleset, space.domains, terms.time_us_per_sample, top=1, time_limit_s=30, then=then)
    assert best.proven and settled and best.ranked[0].solution == ranked.ranked[0].solution


@pytest.mark.parametrize("algo,engine", [("ppo", "vllm"), ("grpo", "sglang")])
def test_tables_equal_the_full_cost_model(algo, engine):
    """The solver's per-phase MiB and time per sample are the printed report's, on random configs of
    a space that also varies every knob the cost model reads (a table that missed an input would differ)."""
    search = {**SMALL_SEARCH,
              f"{AR}.model.use_remove_padding": [True, False],
              f"{AR}.actor.use_dynamic_bsz": [False, True],
              f"{AR}.rollout.free_cache_engine": [True, False],
              f"{AR}.rollout.enforce_eager": [False, True],
              f"{AR}.actor.entropy_from_logits_with_chunking": [False, True],
              f"{AR}.actor.fsdp_config.param_offload": [False, True],
              f"{AR}.actor.fsdp_config.optimizer_offload": [False, True],
              "critic.ppo_infer_max_token_len_per_gpu": [4096, 8192]}
    sc = small_scenario(gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", algo=algo,
                        fixed={f"{AR}.rollout.name": engine}, search=search)
    fw, card, gpu, space, spec, terms, ruleset = prepare(sc)
    assert_tables_match_cost_model(space, spec, ruleset, configs=60, seed=3, label=algo, terms=terms)


def test_recommend_default_scenario_fits_and_is_proven():
    rep = rb.recommend(rb.default_scenario(), top=3)
    assert rep.best is not None and rep.proven
    cap = rep.capacity_mib * MIB
    for phase, r in rep.best.memory.items():
        assert r.peak(phase) <= cap
    assert rep.best.tokens_per_s > 0 and rep.best.step_time_s > 0
    times = [c.step_time_s for c in rep.choices]
    assert times[0] <= min(times) + 0.01


def test_nothing_fits_says_which_memory_term_and_by_how_much():
    sc = Scenario(framework="verl", gpu="rtx4090", gpus=1, model="qwen2.5-72b", algorithm="grpo", n=4,
                  prompt_length=512, response_length=1024)
    rep = rb.recommend(sc, top=1, time_limit_s=20)
    assert rep.best is None
    short = {k: (a, b) for k, (a, b) in rep.memory_floor.items() if a > b}
    assert short and all(".memory." in k for k in short)


def run_cli(*args):
    return run(*args)


def test_cli_recommend_json():
    p = run_cli("recommend", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--algo", "grpo",
                "--n", "8", "--prompt-len", "880", "--response-len", "1280", "--top", "2", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["proven"] and data["choices"][0]["native"]
    assert set(data["choices"][0]["memory_gib"]) >= {"rollout", "old_log_prob", "actor_update"}
    fragment = yaml.safe_load(data["choices"][0]["yaml"])  # the same overrides as a config file
    assert fragment["data"]["max_prompt_length"] == 880 and fragment["actor_rollout_ref"]["rollout"]["n"] == 8
    nofit = run_cli("recommend", "--gpu", "rtx4090", "--gpus", "1", "--model", "qwen2.5-72b", "--algo", "grpo")
    assert nofit.returncode == 1 and "memory" in nofit.stdout


def test_recommend_does_not_pick_a_config_that_pads_when_one_that_does_not_is_as_fast():
    """96 prompts: mini batches of 64 pad every step to 128 prompts (verl's v1 trainer); without the
    padding counted, the time model ranks that config first (fewer optimizer steps)."""
    from dataclasses import replace

    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.solver.costs import waste_of

    sc = rb.default_scenario()
    sc = replace(sc, fixed={**sc.fixed, "data.train_batch_size": 96})
    r = rb.recommend(sc, top=3)
    ruleset = get_framework("verl").ruleset
    assert r.proven and r.choices
    best = r.choices[0]
    assert waste_of(ruleset, best.values) == 0 and best.waste == ""
    assert 96 % best.values["actor_mini"] == 0
    # the padding config exists and is valid: it is ranked below, and says why
    padded = dict(best.values, actor_mini=64, critic_mini=64)
    assert waste_of(ruleset, padded) == 250
    assert ruleset.check(padded).valid
    # had it been ranked, the alternatives table would say why it lost
    from types import SimpleNamespace

    from rlbatch_solver.render import why_lost

    text = why_lost(best, SimpleNamespace(waste="96 prompts padded to 128: ...", phase_seconds=best.phase_seconds))
    assert text.startswith("pads the step: 96 prompts padded to 128")


def test_a_proven_no_fit_says_its_numbers_and_what_helps_for_this_framework():
    """The conflict shows derived quantities whose inputs the scenario fixes (ms-swift's training ranks and GPUs
    needed), and "what would help" names the framework's own offload switch, only where the search did not try it and
    only for a memory conflict."""
    from clirun import run

    r = run("recommend", "--framework", "swift", "--gpu", "a100-80gb", "--gpus", "6", "--model", "qwen2.5-7b",
            "--set", "vllm_mode=server", "--set", "NPROC_PER_NODE=6")
    assert r.returncode == 1
    assert "the job needs 7 GPUs (NPROC_PER_NODE*NNODES = 6 training ranks" in r.stdout
    assert "offload" not in r.stdout.split("what would help:")[1]  # a GPU budget, not memory
    r = run("recommend", "--framework", "verl-megatron", "--gpu", "rtx4090", "--gpus", "2", "--model", "qwen2.5-72b")
    assert r.returncode == 1 and "--set actor_rollout_ref.actor.megatron.param_offload=True" in r.stdout
    r = run("recommend", "--gpu", "rtx4090", "--gpus", "2", "--model", "qwen2.5-32b")  # verl searched offload already
    assert r.returncode == 1 and "fsdp_config.param_offload" not in r.stdout.split("what would help:")[1]


def test_a_proven_no_fit_of_full_fine_tuning_suggests_lora_as_set_pairs_that_fit():
    """7B GRPO on 4x RTX 4090 is out of memory with full fine-tuning (verl loads the offloaded optimizer back for the
    update): "what would help" names LoRA in the framework's own keys, as --set pairs that, pasted back, fit; not
    where the config is LoRA already (TRL with --use_peft)."""
    from clirun import run

    scenario = ["--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-7b", "--time-limit", "20"]
    for framework, pairs in [("verl", ["actor_rollout_ref.model.lora_rank=32"]),
                             ("trl", ["use_peft=true", "lora_r=32", "lora_target_modules=all-linear"])]:
        r = run("recommend", "--framework", framework, *scenario)
        helps = r.stdout.split("what would help:")[1]
        said = " ".join(f"--set {kv}" for kv in pairs)
        assert r.returncode == 1 and f"or LoRA instead of full fine-tuning ({said})" in helps, r.stdout
        again = run("recommend", "--framework", framework, *scenario, *said.split())
        assert again.returncode == 0 and "proven optimal" in again.stdout, again.stdout
        assert "what would help" not in again.stdout
    # the JSON says the same (an agent reads it): the helps of the text, [] where a config was found
    data = json.loads(run("recommend", "--framework", "verl", *scenario, "--json").stdout)
    assert not data["choices"] and "LoRA instead of full fine-tuning (--set actor_rollout_ref.model.lora_rank=32)" \
        in data["helps"], data["helps"]
    assert json.loads(run("recommend", "--framework", "verl", *scenario, "--json", "--set",
                          "actor_rollout_ref.model.lora_rank=32").stdout)["helps"] == []


# ------------------------------------------------------------------ the algorithm's batch is the user's
def _verl_batch(choice):
    return choice.values["train_batch_size"], choice.values["actor_mini"]


def test_recommend_keeps_the_algorithms_batch_at_verls_defaults():
    """The README's GRPO example: no batch given, so verl's defaults (1024 prompts, 4 updates per step) are kept
    and said, not the largest batch a throughput search would take (one update of 1024 prompts)."""
    sc = Scenario(framework="verl", gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=880, response_length=1280)
    report = rb.recommend(sc, time_limit_s=20)
    assert _verl_batch(report.best) == (1024, 256)
    assert report.batch_kept == {"data.train_batch_size": 1024, "actor_rollout_ref.actor.ppo_mini_batch_size": 256}
    assert "--free-batch" in report.batch_note
    free = rb.recommend(Scenario(**{**sc.to_dict(), "free_batch": True}), time_limit_s=20)
    assert free.batch_kept == {} and "searched" in free.batch_note
    assert free.best.values["train_batch_size"] / free.best.values["actor_mini"] < 4  # the search's own pick


def test_a_batch_the_user_sets_is_kept_and_its_updates_follow_verls_default():
    sc = Scenario(framework="verl", gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=880, response_length=1280, fixed={"data.train_batch_size": 96})
    report = rb.recommend(sc, time_limit_s=20)
    assert _verl_batch(report.best) == (96, 24)  # 4 updates per step, as verl's 1024/256
    assert report.batch_kept == {"actor_rollout_ref.actor.ppo_mini_batch_size": 24}
    given = rb.recommend(Scenario(**{**sc.to_dict(), "fixed": {"data.train_batch_size": 96,
                                                              "actor_rollout_ref.actor.ppo_mini_batch_size": 48}}),
                         time_limit_s=20)
    assert _verl_batch(given.best) == (96, 48) and given.batch_kept == {} and given.batch_note == ""


def test_a_default_batch_the_gpus_cannot_split_is_the_nearest_that_they_can():
    """24 GPUs, n 8: 1024 x 8 samples do not split over 24; 1020 (mini 255) is the nearest with 4 updates."""
    sc = Scenario(framework="verl", gpu="h100", gpus=24, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024)
    report = rb.recommend(sc, time_limit_s=20)
    assert _verl_batch(report.best) == (1020, 255)
    assert rb.check(report.best.native, gpus=24).valid


def _per_update(choice, world):
    v = choice.values
    return v["per_device_train_batch_size"] * world * v["gradient_accumulation_steps"]


@pytest.mark.parametrize("framework, default", [("trl", 64), ("swift", 8)])
def test_hf_trainer_paths_keep_the_completions_per_optimizer_step(framework, default):
    """TRL and ms-swift's HF path: the algorithm's batch is per-device x world x accumulation (TRL's defaults 8 x 8
    x 1, ms-swift's 1 x 8 x 1); recommend keeps the product and chooses the factors (the per-device batch is the
    micro batch memory depends on), and says so."""
    sc = Scenario(framework=framework, gpu="a100-80gb", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=2048)
    report = rb.recommend(sc, time_limit_s=20, top=8)
    assert report.batch_kept == {"opt_batch": default}
    assert all(_per_update(c, 8) == default for c in report.choices)
    assert "completions per optimizer step" in report.batch_note and "--free-batch" in report.batch_note
    assert rb.check(report.best.native, framework=framework, gpus=8).valid


def test_a_set_accumulation_keeps_its_product_and_an_unsplittable_default_rounds():
    """TRL, n 16 with gradient_accumulation_steps=4 set: 8 x 8 x 4 = 256 completions per update, whole prompts.
    ms-swift, n 16: its default 1 x 8 x 1 = 8 completions is half a prompt, so 16 (the nearest whole prompts)."""
    sc = Scenario(framework="trl", gpu="a100-80gb", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=16,
                  prompt_length=1024, response_length=2048, fixed={"gradient_accumulation_steps": 4})
    report = rb.recommend(sc, time_limit_s=20)
    assert report.batch_kept == {"opt_batch": 256} and _per_update(report.best, 8) == 256
    swift = rb.recommend(Scenario(**{**sc.to_dict(), "framework": "swift", "fixed": {}}), time_limit_s=20)
    assert swift.batch_kept == {"opt_batch": 16} and _per_update(swift.best, 8) == 16
    both = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}
    pinned = rb.recommend(Scenario(**{**sc.to_dict(), "fixed": both}), time_limit_s=20)
    assert pinned.batch_kept == {} and _per_update(pinned.best, 8) == 64
    free = rb.recommend(Scenario(**{**sc.to_dict(), "fixed": {}, "free_batch": True}), time_limit_s=20)
    assert free.batch_kept == {}


def test_free_batch_is_a_flag_and_a_scenario_field():
    base = ["recommend", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--algo", "grpo", "--json"]
    kept, free = json.loads(run(*base).stdout), json.loads(run(*base, "--free-batch").stdout)
    assert kept["batch_kept"] and not free["batch_kept"]
    assert "--free-batch" in kept["batch"]
    with pytest.raises(rb.InputError, match="free_batch"):
        Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", free_batch="yes")


def test_a_set_rollout_n_is_the_scenarios_n():
    """--set actor_rollout_ref.rollout.n=5 without --n is the run's n (it was overridden by the algorithm's 8);
    --n and a --set that disagree are an input error."""
    base = ["recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--algo", "grpo", "--json"]
    out = json.loads(run_cli(*base, "--set", "actor_rollout_ref.rollout.n=5").stdout)
    assert "actor_rollout_ref.rollout.n=5" in out["choices"][0]["native"]
    bad = run_cli(*base, "--n", "8", "--set", "actor_rollout_ref.rollout.n=5")
    assert bad.returncode == 2 and "error: n:" in bad.stderr


@pytest.mark.parametrize("framework, gpu, gpus, model", [
    ("verl", "rtx4090", 4, "qwen2.5-1.5b"), ("verl-megatron", "h100", 8, "qwen2.5-7b"),
    ("swift", "a100-80gb", 8, "qwen2.5-7b"), ("swift-megatron", "h100", 8, "qwen2.5-7b"),
    ("trl", "h100", 8, "qwen2.5-7b"), ("openrlhf", "h100", 8, "qwen2.5-7b"), ("easyr1", "h100", 8, "qwen2.5-7b"),
    ("openrlhf==0.6.2", "h100", 8, "qwen2.5-7b"),
    ("slime", "h100", 8, "qwen3-4b"),
    ("unsloth", "rtx4090", 4, "qwen3-4b"),
    ("skyrl", "h100", 4, "qwen2.5-1.5b")])
def test_the_best_config_is_a_whole_command_that_checks_valid(tmp_path, framework, gpu, gpus, model):
    """recommend prints the best config as a command to run: the entry point, the model's Hugging Face id, the
    framework example's data and reward, the answer. Saved as a script as printed, check reads it as valid and fitting,
    and reads the same arguments (the JSON command is the printed one)."""
    args = ["recommend", "--framework", framework, "--gpu", gpu, "--gpus", gpus, "--model", model]
    out = run(*args).stdout
    block = out.split("as a command to run", 1)[1].split("\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if not line.startswith("  "):
            break
        lines.append(line[2:].removesuffix(" \\").strip())
    script = tmp_path / "run.sh"
    script.write_text(" \\\n".join(lines) + "\n")
    words = json.loads(run(*args, "--json").stdout)["command"]
    assert lines[0] == words[0] and len(lines) == len(words)
    assert any(w.endswith(" " + load_model(model).hf_id) or w.endswith("=" + load_model(model).hf_id) for w in words)
    checked = run("check", "--framework", framework, script, "--gpu", gpu, "--model", model)
    assert checked.returncode == 0, checked.stdout
    assert "VALID" in checked.stdout and "will not fit" not in checked.stdout


def test_a_set_train_batch_with_no_four_update_split_keeps_the_nearest_count():
    """30 prompts on 8 GPUs, n 4: no mini batch gives 4 updates (a mini must hold a multiple of 2 prompts); 6
    (5 updates) is the nearest, kept and said, not left to the throughput search (which takes one update)."""
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=4,
                  prompt_length=1024, response_length=1024, fixed={"data.train_batch_size": 30})
    report = rb.recommend(sc, time_limit_s=20)
    assert _verl_batch(report.best) == (30, 6)
    assert "ppo_mini_batch_size=6" in report.batch_note and "as near as" in report.batch_note


def test_an_alternative_that_leaves_a_flag_out_says_so():
    """TRL's alternative without --dtype (fp32 weights) differs by a flag it does not set: 'no dtype', not '-'."""
    from types import SimpleNamespace

    from rlbatch_solver.render import differs

    best = SimpleNamespace(native=["--zero_stage 2", "--dtype bfloat16", "--per_device_train_batch_size 8"])
    other = SimpleNamespace(native=["--zero_stage 2", "--per_device_train_batch_size 4"])
    assert differs(best, other) == "per_device_train_batch_size=4, no dtype"
    assert differs(best, best) == "-"


def test_an_alternative_that_turns_a_bare_switch_on_says_on():
    """OpenRLHF's alternative with --ds.adam_offload (a bare flag) read "adam_offload=" in the table: now "on"; and
    "micro_batch_size=4" did not say which of rollout. and train.micro_batch_size: now the config's keys decide."""
    from types import SimpleNamespace

    from rlbatch_solver.render import differs

    best = SimpleNamespace(native=["--rollout.micro_batch_size 16", "--train.micro_batch_size 2"])
    other = SimpleNamespace(native=["--rollout.micro_batch_size 16", "--train.micro_batch_size 4", "--ds.adam_offload"])
    assert differs(best, other) == "train.micro_batch_size=4, adam_offload on"
    assert differs(other, best) == "train.micro_batch_size=2, no adam_offload"


def _command_keys(words):
    from rlbatch_solver.frameworks.overrides import exported_pair

    return [exported_pair(w)[0] for w in words[1:]]


@pytest.mark.parametrize("framework, fixed, key, value", [
    ("openrlhf", {}, "reward.remote_url", "examples/python/reward_func.py"),
    ("openrlhf", {"reward.remote_url": "/d/rm.py", "data.prompt_dataset": "me/d"}, "reward.remote_url", "/d/rm.py"),
    ("verl", {"data.train_files": "/d/train.parquet"}, "data.train_files", "/d/train.parquet")])
def test_the_whole_command_sets_each_key_once_the_users_value_first(framework, fixed, key, value):
    """recommend --framework openrlhf printed --reward.remote_url twice (the example's reward_func.py and a
    YOUR_REWARD_FUNC.py placeholder), and a --set data key beside the example's (verl's data.train_files twice): each
    key once now, the user's value where they gave one, else the example's."""
    from rlbatch_solver.commands.recommend import best_command
    from rlbatch_solver.frameworks.overrides import exported_pair

    sc = Scenario(framework=framework, gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024, fixed=dict(fixed))
    words = best_command(rb.recommend(sc, time_limit_s=20))
    keys = _command_keys(words)
    assert len(keys) == len(set(keys)), words
    assert dict(map(exported_pair, words[1:]))[key] == value


def test_a_reward_model_leaves_the_examples_reward_function_out():
    """OpenRLHF with --set reward.model_name_or_path: the command named the example's reward function too (which
    train_ppo_ray uses instead of the model); now the reward model alone."""
    from rlbatch_solver.commands.recommend import best_command

    sc = Scenario(framework="openrlhf", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024,
                  fixed={"reward.model_name_or_path": "OpenRLHF/Llama-3-8b-rm-700k"})
    keys = _command_keys(best_command(rb.recommend(sc, time_limit_s=20)))
    assert "reward.model_name_or_path" in keys and "reward.remote_url" not in keys


def test_a_tight_answer_says_no_config_has_the_headroom_when_that_is_proven():
    """verl, qwen2.5-72b on 24x H100, response 4096: the headroom solve proves no config keeps one observed error
    of headroom; the answer said "no config with that headroom was found in the time left" (a timeout's words,
    after 0.15 s); now that the search space has none. (Qwen2.5-32B on 8x H100 was the case until verl FSDP's
    root-unit gradients were priced at the backward's end: it has a config with that headroom now.)"""
    sc = Scenario(framework="verl", gpu="h100", gpus=24, model="qwen2.5-72b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=4096)
    note = rb.recommend(sc, time_limit_s=20).margin_note
    assert note.startswith("tight:") and "no config of the search space has that headroom" in note, note


def test_equally_fast_configs_come_roomiest_first_whatever_the_solvers_threads():
    """verl GRPO on 8 H100 with Qwen2.5-1.5B: the vLLM memory share does not change the step time here, so configs
    tie on time per sample. They are ordered by the least sum of the phases' peak MiB (``recommend.tie_break``), so
    one thread or eight give the same answers in the same order (CP-SAT's workers alone return any of the ties)."""
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=4096)
    answers = [rb.recommend(sc, top=3, time_limit_s=20, solver_workers=w) for w in (1, 8)]
    assert len({tuple(tuple(c.native) for c in r.choices) for r in answers}) == 1
    choices = answers[0].choices + answers[0].left_out  # the solver's order; the table lists what a listed one
    tied = [c for c in choices if c.objective == choices[0].objective]  # does not make pointless (alike.py)
    assert len(tied) >= 2 and all(c.proven for c in tied)
    peaks = [sum(-(-c.memory[p].peak(p) // MIB) for p in c.memory) for c in tied]
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]
    # asked for the best alone (no band of runners-up to sort), the same config
    assert rb.recommend(sc, top=1, time_limit_s=20).best.native == choices[0].native


def test_equally_roomy_configs_come_fastest_first_whatever_the_solvers_threads():
    """--objective memory-headroom on the seed's 4x RTX 4090: the runners-up leave the same least memory as the best
    (its vLLM share is set), and were listed in CP-SAT's order (175.8 s a step before 149.1 s). Configs of equal
    headroom are ordered by the time objective (``recommend.tie_break``'s ``fastest``): the fastest first, the same
    with one, two or eight threads, and the best alone is the band's first."""
    sc = replace(rb.default_scenario(), objective="memory-headroom")
    answers = [rb.recommend(sc, top=3, time_limit_s=20, solver_workers=w) for w in (1, 2, 8)]
    assert len({tuple(tuple(c.native) for c in r.choices) for r in answers}) == 1
    choices = answers[0].choices + answers[0].left_out
    tied = [c for c in choices if c.objective == choices[0].objective]
    assert len(tied) >= 2 and all(c.proven for c in tied)
    times = [c.step_time_s for c in tied]  # one batch per step (the seed sets it): step time orders time per sample
    # the order is the solver's whole-microsecond time per sample; the printed step is the float model's: equal to
    # a thousandth (two configs 8 ms a step apart of 126 s may come either way)
    assert all(b >= a * (1 - 1e-3) for a, b in zip(times, times[1:])) and times[0] < times[-1], times
    assert rb.recommend(sc, top=1, time_limit_s=20).best.native == choices[0].native


def test_objective_gpus_keeps_headroom_or_says_how_many_gpus_it_takes():
    """--objective gpus answered the fewest GPUs even where the peak sat within the memory model's observed error of
    the usable memory, and said nothing of it (--objective time keeps the headroom or says what it costs). 7B LoRA on
    RTX 4090s: 2 GPUs peak 20.5 of 21.8 GiB; the answer says so and how many GPUs keep the headroom."""
    sc = Scenario(framework="verl", gpu="rtx4090", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024, objective="gpus",
                  fixed={"actor_rollout_ref.model.lora_rank": 32})
    report = rb.recommend(sc, time_limit_s=60)
    assert report.choices and report.margin_note, report.margin_note
    from rlbatch_solver.commands.check import memory_error_log

    kept = f"kept {math.exp(memory_error_log('verl')) - 1:.0%} of headroom"  # the model's observed error, as it stands
    assert report.margin_note.startswith((kept, "tight: the peak is within")), report.margin_note
    if report.margin_note.startswith("tight") and "with that headroom the fewest is" in report.margin_note:
        fewest = int(report.margin_note.rsplit(" ", 1)[1])
        assert fewest > 2


def _priced_key(c):
    return c.objective, tuple(sorted((p, round(v / 1024, 1)) for p, v in c.peak_mib().items()))


@pytest.mark.parametrize("framework, gpu, gpus, model", [("trl", "h100", 8, "qwen2.5-7b"),
                                                         ("trl", "rtx4090", 4, "qwen2.5-1.5b"),
                                                         ("verl", "h100", 8, "qwen2.5-7b"),
                                                         ("openrlhf", "h100", 8, "qwen2.5-7b")])
def test_no_listed_alternative_is_as_good_as_one_listed_before_it(framework, gpu, gpus, model):
    """TRL 7B on 8 H100 listed four alternatives at the best's step time: without --dtype (priced the same), ZeRO-2
    (as fast, more memory), both, and a vLLM share of 0.5 (more memory). None offers anything the best does not: they
    are left out and counted; no two listed configs are priced alike, and none is dominated by one before it."""
    from rlbatch_solver.commands.alike import alike, dominates

    r = rb.recommend(Scenario(framework=framework, gpu=gpu, gpus=gpus, model=model), time_limit_s=30)
    assert r.choices and [c.rank for c in r.choices] == list(range(1, len(r.choices) + 1))
    assert len({_priced_key(c) for c in r.choices}) == len(r.choices)
    for i, c in enumerate(r.choices[1:], 1):
        assert not any(dominates(k, c) for k in r.choices[:i])
    for c in r.left_out:
        assert any(alike(k, c) or dominates(k, c) for k in r.choices)
    if framework == "trl" and gpu == "h100":
        assert r.left_out and len(r.choices) == 1  # the four ties of the best, folded into it


def test_of_configs_priced_alike_the_simplest_command_stands_for_them():
    """Two alternatives priced the same (one spells out a setting the other leaves to the framework): the one with
    fewer arguments is listed, at the first one's place; the best is kept as ranked even where a tie is simpler."""
    from dataclasses import dataclass

    from rlbatch_solver.commands.alike import fold_alike

    @dataclass
    class C:
        rank: int
        native: list
        objective: int
        step_time_s: float
        samples: int
        peaks: dict

        def peak_mib(self):
            return self.peaks

    cs = [C(1, ["--a 1", "--b 2"], 100, 10.0, 10, {"x": 1000.0}),
          C(2, ["--a 1"], 100, 10.0, 10, {"x": 1000.0}),  # priced as the best: left out, the best stays
          C(3, ["--a 2", "--b 2"], 120, 12.0, 10, {"x": 500.0}),
          C(4, ["--a 2"], 120, 12.0, 10, {"x": 500.0}),  # priced as 3, shorter: listed at 3's place
          C(5, ["--a 3"], 130, 13.0, 10, {"x": 600.0})]  # slower than 3/4 and larger: dominated
    kept, left = fold_alike(cs)
    assert [c.native for c in kept] == [["--a 1", "--b 2"], ["--a 2"]] and [c.rank for c in kept] == [1, 2]
    assert [c.native for c in left] == [["--a 1"], ["--a 2", "--b 2"], ["--a 3"]]
    # the headroom objective is maximized: a larger objective is the better one
    kept, _ = fold_alike([C(1, ["--a 1"], 500, 1.0, 1, {"x": 100.0}), C(2, ["--a 2"], 400, 1.0, 1, {"x": 100.0})],
                         maximize=True)
    assert len(kept) == 1

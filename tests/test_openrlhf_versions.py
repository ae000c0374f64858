"""OpenRLHF release packs (frameworks/openrlhf/versions.py): each release's own checks and defaults, the release a
config's flags date it to, and the 0.4 fp32 gradient accumulation reaching the memory model."""

import json

import pytest
from clirun import run

from rlbatch_solver.costmodel.memory import deepspeed_states
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.openrlhf import versions

OLD = {"--actor_num_nodes": 1, "--actor_num_gpus_per_node": 6, "--critic_num_nodes": 1,
       "--critic_num_gpus_per_node": 4, "--ref_num_nodes": 1, "--ref_num_gpus_per_node": 2,
       "--reward_num_nodes": 1, "--reward_num_gpus_per_node": 2, "--rollout_batch_size": 64,
       "--train_batch_size": 64, "--micro_train_batch_size": 2, "--micro_rollout_batch_size": 4,
       "--vllm_num_engines": 2, "--pretrain_data": "x"}


def _failed(fw, flat):
    return set(fw.ruleset.failing_errors(fw.to_values(flat, gpus=None, model=None)))


def test_each_release_checks_its_own_asserts():
    v062, v040 = get_framework("openrlhf==0.6.2"), get_framework("openrlhf==0.4.0")
    failed_062, failed_040 = _failed(v062, OLD), _failed(v040, OLD)
    # 64 prompts over 6 actor ranks; 6 is not a multiple of the critic's 4
    assert {"openrlhf.driver.rollout_divisible_by_actor_world",
            "openrlhf.driver.actor_world_divisible_by_critic_world"} <= failed_062
    assert "openrlhf.driver.legacy_flag_names" not in failed_062
    # 0.4.0 asks for powers of two instead of the rollout check
    assert "openrlhf.driver.actor_world_power_of_two" in failed_040
    assert "openrlhf.driver.critic_world_power_of_two" not in failed_040
    assert "openrlhf.driver.rollout_divisible_by_actor_world" not in failed_040
    fixed = {**OLD, "--actor_num_gpus_per_node": 4}
    assert not {"openrlhf.driver.rollout_divisible_by_actor_world", "openrlhf.driver.actor_world_power_of_two",
                "openrlhf.driver.actor_world_divisible_by_critic_world"} & (_failed(v062, fixed) | _failed(v040, fixed))


def test_release_defaults_reach_the_values():
    flat = {"--actor_num_gpus_per_node": 4}
    new = get_framework("openrlhf").to_values(flat, gpus=None, model=None)
    old = get_framework("openrlhf==0.4.0").to_values(flat, gpus=None, model=None)
    assert (new["micro_train_batch_size"], new["micro_rollout_batch_size"], new["gmu_permille"]) == (1, 1, 950)
    assert (old["micro_train_batch_size"], old["micro_rollout_batch_size"], old["gmu_permille"]) == (4, 8, 900)
    assert old["grad_accum_fp32"] and not new["grad_accum_fp32"]
    assert old["need_ref"]  # 0.4.0 builds the reference model whatever the KL coefficient
    assert not get_framework("openrlhf==0.4.0").to_values({**flat, "--grad_accum_dtype": "bf16"}, gpus=None,
                                                          model=None)["grad_accum_fp32"]


def test_fp32_grad_accumulation_only_changes_zero1():
    p, n = 7e9, 8
    assert deepspeed_states(p, n, 1, True)[1] == 6 * p > deepspeed_states(p, n, 1, False)[1]
    assert deepspeed_states(p, n, 2, True) == deepspeed_states(p, n, 2, False)
    assert deepspeed_states(p, n, 1, True)[2] == deepspeed_states(p, n, 1, False)[2]


def test_flags_date_the_config():
    """The one dating policy (frameworks/dating.py): the newest release when it has every dating flag, else the
    oldest release that has them all (and takes the config's advantage estimator)."""
    # --pretrain_data: 0.4.0 to 0.6.2
    assert versions.detect({"--micro_train_batch_size": 1, "--pretrain_data": "x"})[0] == "0.4.0"
    assert versions.detect({"--disable_trace_cache": True})[0] == "0.4.0"
    # --flash_attn was a flag from 0.4.0 to 0.7.5 (0.8 replaced it by --attn_implementation); --ema_beta came in 0.7
    assert versions.detect({"--flash_attn": True})[0] == "0.4.0"
    assert versions.detect({"--flash_attn": True, "--ema_beta": 0.99})[0] == "0.7.5"
    # an estimator the oldest release lacks moves the date to the first release that has it
    assert versions.detect({"--micro_train_batch_size": 1, "--advantage_estimator": "group_norm"})[0] == "0.6.2"
    assert get_framework("openrlhf==0.7.3").version == "0.7.5"
    assert versions.detect({"--train.batch_size": 8})[0] == "0.11.2"
    fw, note = get_framework("openrlhf").for_config(OLD)
    assert fw.version == "0.4.0" and "upgrade: on OpenRLHF 0.11.2 --" in note
    assert get_framework("openrlhf==0.6.3").version == "0.6.2"
    assert versions.detect({"--use_kl_estimator_k3": True})[0] == "0.5.9"  # a flag of 0.5.x only
    assert get_framework("openrlhf==0.5.9.post1").version == "0.5.9"


def test_flags_of_no_single_release_say_which_rules_and_the_nearest_releases():
    # OpenRLHF's examples/scripts/train_grpo_ray_hybrid_engine.sh at 00ef17c (between releases): --use_kl_loss came
    # after 0.5.9, --use_kl_estimator_k3 went before 0.6; the check used 0.11.2's rules and said nothing
    flat = {"--use_kl_loss": True, "--use_kl_estimator_k3": True, "--colocate_all_models": True}
    fw, note = get_framework("openrlhf").for_config(flat)
    assert fw.version == "0.11.2"
    assert "checked with the OpenRLHF 0.11.2 rules" in note
    assert "0.6.2 (no --use_kl_estimator_k3)" in note and "0.5.9 (no --use_kl_loss)" in note


def test_each_release_prices_its_own_log_prob_code():
    from rlbatch_solver.costmodel import constants as C

    flat = {"--actor_num_gpus_per_node": 4, "--vllm_num_engines": 4}
    impl = {}
    for version in ("0.11.2", "0.6.2", "0.5.9", "0.4.0"):
        fw = get_framework(f"openrlhf=={version}")
        values = fw.to_values(flat, gpus=None, model=None)
        impl[version] = (values["logits_gather"], values["logits_fp32_model"])
    assert impl == {"0.11.2": (False, False), "0.6.2": (False, False), "0.5.9": (True, False), "0.4.0": (True, True)}
    # without flash-attn's cross-entropy the update holds more fp32 [tokens, vocab] tensors than 0.6.2 on
    assert C.LOGIT_BYTES["openrlhf-0.5"][2] > C.LOGIT_BYTES["openrlhf"][2]
    assert C.LOGIT_BYTES["openrlhf-0.4"][0] > C.LOGIT_BYTES["openrlhf"][0]  # the model's own fp32 upcast


def test_059_colocated_engine_runs_at_0_4():
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.phase import Phase
    from rlbatch_solver.frameworks.openrlhf.cost import make_plan

    flat = {"--actor_num_gpus_per_node": 4, "--vllm_num_engines": 4, "--colocate_all_models": True}
    model, gpu = load_model("qwen2.5-7b"), load_gpu("a100-80gb")
    for version, share in (("0.5.9", 0.4), ("0.6.2", 0.9)):
        fw = get_framework(f"openrlhf=={version}")
        plan = make_plan(fw.to_values(flat, gpus=None, model=None), Phase.ROLLOUT, model, gpu)
        assert plan.gpu_memory_utilization == share
    # below 0.9 the share is the user's, and 0.5.9 checks the engines against the actor only at 0.9 or more
    fw = get_framework("openrlhf==0.5.9")
    low = {**flat, "--vllm_num_engines": 2, "--vllm_gpu_memory_utilization": 0.5}
    assert make_plan(fw.to_values(low, gpus=None, model=None), Phase.ROLLOUT, model, gpu).gpu_memory_utilization == 0.5
    assert "openrlhf.colocate.vllm_matches_actor" not in _failed(fw, low)
    assert "openrlhf.colocate.vllm_matches_actor" in _failed(fw, {**low, "--vllm_gpu_memory_utilization": 0.9})


def test_fix_writes_the_release_own_flag_names():
    from rlbatch_solver.api import fix

    flags = [f"--{k[2:]}" if v is True else f"{k} {v}" for k, v in {
        "--actor_num_nodes": 1, "--actor_num_gpus_per_node": 8, "--critic_num_nodes": 1,
        "--critic_num_gpus_per_node": 8, "--ref_num_gpus_per_node": 8, "--reward_num_gpus_per_node": 8,
        "--rollout_batch_size": 100, "--train_batch_size": 64, "--micro_train_batch_size": 2,
        "--vllm_num_engines": 4}.items()]
    report = fix(" ".join(flags), framework="openrlhf==0.6.2")
    # 128, not the nearer 96: 96 prompts are not whole train batches of 64 (openrlhf.advice.whole_train_batches),
    # and fix counts a warning its answer breaks as a doubling
    assert report.native_after == ["--rollout_batch_size 128"]
    assert get_framework("openrlhf").native_key("rollout_batch_size") == "rollout.batch_size"


def _space(version: str, algo: str = "ppo", fixed: dict | None = None, knobs: bool = False):
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework=f"openrlhf=={version}", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm=algo,
                  fixed=fixed or {})
    return get_framework(f"openrlhf=={version}").space(sc, load_model("qwen2.5-7b"), with_knobs=knobs).domains


def test_recommend_searches_with_the_release_defaults():
    """recommend for a pinned old release starts from its argparse defaults and its own model groups, and searches only
    what its train_ppo_ray has a flag for."""
    assert _space("0.11.2")["gmu_permille"] == [950] and _space("0.6.2")["gmu_permille"] == [900]
    old = _space("0.4.0")
    assert old["need_ref"] == [True]  # 0.4.0 always builds the reference model
    # no --packing_samples, --colocate_all_models or --vllm_gpu_memory_utilization in 0.4.0: left at what it does
    assert old["packing_samples"] == [False] and old["colocate_all"] == [False]
    assert _space("0.4.0", knobs=True)["gmu_permille"] == [900] and len(_space("0.6.2", knobs=True)["gmu_permille"]) > 1
    # no KL coefficient: 0.11.2 builds no reference model, 0.5.9 builds one all the same
    assert _space("0.11.2", "rloo", {"algo.kl.init_coef": 0})["need_ref"] == [False]
    assert _space("0.5.9", "rloo", {"init_kl_coef": 0})["need_ref"] == [True]


def _release_argparse(version):
    """An argparse parser with the flags of ``version``'s train_ppo_ray (release_flags.py, read from its wheel), each
    taking any number of values: what it refuses is a flag the release does not have."""
    import argparse

    from rlbatch_solver.frameworks.openrlhf.release_flags import RELEASE_FLAGS

    parser = argparse.ArgumentParser(prog=f"train_ppo_ray {version}", allow_abbrev=False, add_help=False)
    for name in sorted(RELEASE_FLAGS[version]):
        parser.add_argument(f"--{name}", nargs="*")
    return parser


# the algorithm each release's answer is asked for: GRPO where it has group_norm, else RLOO (0.5.9: its KL in the
# loss has no flag there), else PPO (0.4.0: no --advantage_estimator)
def _algo(version):
    estimators = versions.RELEASES[version].estimators
    return "grpo" if "group_norm" in estimators else "rloo" if "rloo" in estimators else "ppo"


@pytest.mark.parametrize("version", versions.VERSIONS)
def test_recommends_whole_command_parses_with_the_releases_own_flags(version):
    """The command recommend prints for a release (model, the example's data and reward, the answer, the
    algorithm's flags) is parsed by that release's own flag list with nothing left over, and says every setting the
    release has a flag for (0.9.10 renamed --generate_max_len to --max_new_tokens: the response length is not
    dropped); a setting it cannot say is a note."""
    import shlex

    import rlbatch_solver as rb
    from rlbatch_solver.commands.recommend import best_command
    from rlbatch_solver.frameworks.openrlhf.names import release_key
    from rlbatch_solver.scenario import Scenario

    algo = _algo(version)
    sc = Scenario(framework=f"openrlhf=={version}", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm=algo)
    report = rb.recommend(sc, time_limit_s=10)
    words = best_command(report)
    assert words and words[0] == "python3 -m openrlhf.cli.train_ppo_ray"
    args, unknown = _release_argparse(version).parse_known_args(shlex.split(" ".join(words[1:])))
    assert unknown == [], (version, unknown)
    said = {k: v for k, v in vars(args).items() if v is not None}
    assert said[release_key("rollout.max_new_tokens", version)] == ["1024"]
    assert said[release_key("actor.model_name_or_path", version)] == ["Qwen/Qwen2.5-7B"]
    if version == "0.5.9":  # rloo puts its KL in the loss from 0.6; 0.5.9 has no --use_kl_loss
        assert len(report.space.notes) == 1 and "no --use_kl_loss" in report.space.notes[0]
    else:
        assert report.space.notes == []


def test_a_setting_the_release_cannot_say_is_a_note_in_text_and_json():
    out = run("recommend", "--framework", "openrlhf==0.5.9", "--gpu", "h100", "--gpus", "8", "--model",
              "qwen2.5-7b", "--algo", "rloo", "--json")
    data = json.loads(out.stdout)
    assert data["notes"] and "no --use_kl_loss" in data["notes"][0]
    assert "--use_kl_loss" not in " ".join(data["command"])
    assert "kept rollout_batch_size=" in data["batch"]  # 0.5.9's own name, not rollout.batch_size
    text = run("recommend", "--framework", "openrlhf==0.5.9", "--gpu", "h100", "--gpus", "8", "--model",
               "qwen2.5-7b", "--algo", "rloo").stdout
    assert "note: --algo rloo sets --algo.kl.use_loss on the newest OpenRLHF; 0.5.9's train_ppo_ray has no " \
           "--use_kl_loss" in " ".join(text.split())


@pytest.mark.parametrize("version", [v for v in versions.VERSIONS if not versions.dotted_names(v)])
def test_old_releases_rule_messages_name_their_own_flags(version):
    """A release before 0.10.2 reads --train_batch_size: its rules' messages say that, not 0.11.2's
    --train.batch_size (names.spelled)."""
    import re

    from rlbatch_solver.frameworks.openrlhf.names import LEGACY_FLAGS

    dotted = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(k) for k in set(LEGACY_FLAGS.values())) + r")(?!\w)")
    rules = versions.ruleset_for(version).rules
    for rule in rules:
        for text in (rule.message, rule.explanation, rule.tolerance_message):
            assert not dotted.search(text or ""), (rule.id, dotted.search(text).group(1))
    by_id = {r.id: r for r in rules}
    assert "train_batch_size" in by_id["openrlhf.deepspeed.actor_batch"].message


def test_old_release_input_errors_name_its_flags():
    import pytest

    import rlbatch_solver as rb
    from rlbatch_solver.scenario import Scenario

    def error(framework, flat):
        with pytest.raises(rb.InputError) as e:
            get_framework(framework).to_values(flat, gpus=None, model=None)
        return e.value

    assert error("openrlhf==0.6.2", {"--micro_train_batch_size": 0}).field == "micro_train_batch_size"
    assert error("openrlhf", {"--micro_train_batch_size": 0}).field == "train.micro_batch_size"
    assert error("openrlhf==0.6.2", {"--init_kl_coef": -1}).field == "init_kl_coef"
    e = error("openrlhf==0.5.9", {"--advantage_estimator": "group_norm"})
    assert e.field == "advantage_estimator" and "0.5.9" in str(e) and "gae, reinforce, rloo" in str(e)
    assert "0.4.0" in str(error("openrlhf==0.4.0", {"--advantage_estimator": "gae"}))
    for version, algo, said in (("0.5.9", "grpo", "group_norm"), ("0.6.2", "dapo", "--dynamic_filtering"),
                                ("0.4.0", "rloo", "rloo")):
        sc = Scenario(framework=f"openrlhf=={version}", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm=algo)
        with pytest.raises(rb.InputError, match=said) as e:
            rb.recommend(sc, time_limit_s=5)
        assert e.value.field == "algo" and version in str(e.value)
    sc = Scenario(framework="openrlhf==0.4.0", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="ppo",
                  placement="colocate")
    with pytest.raises(rb.InputError, match="colocate_all_models"):
        rb.recommend(sc, time_limit_s=5)


def test_packs_of_0_8_to_0_10_check_what_each_release_checks():
    """0.10.4 asks no n > 1 of dr_grpo; 0.9.10 has no over-sampling check and fails an empty dynamic-batch step with
    IndexError; 0.8.11 has no --partial_rollout; each dates the configs only it reads."""
    base = {"--actor_num_gpus_per_node": 4, "--vllm_num_engines": 4, "--advantage_estimator": "dr_grpo",
            "--n_samples_per_prompt": 1, "--remote_rm_url": "x"}
    dotted = {"--actor.num_gpus_per_node": 4, "--vllm.num_engines": 4, "--algo.advantage.estimator": "dr_grpo",
              "--rollout.n_samples_per_prompt": 1, "--reward.remote_url": "x"}
    assert "openrlhf.driver.group_estimator_needs_n" in _failed(get_framework("openrlhf"), dotted)
    assert "openrlhf.driver.group_estimator_needs_n" not in _failed(get_framework("openrlhf==0.10.4"), dotted)
    over = {**base, "--advantage_estimator": "rloo", "--n_samples_per_prompt": 2, "--rollout_batch_size": 8,
            "--vllm_generate_batch_size": 16}
    assert "openrlhf.driver.generate_batch_needs_async" in _failed(get_framework("openrlhf==0.10.4"), {
        "--actor.num_gpus_per_node": 4, "--vllm.num_engines": 4, "--algo.advantage.estimator": "rloo",
        "--rollout.n_samples_per_prompt": 2, "--rollout.batch_size": 8, "--rollout.vllm_generate_batch_size": 16,
        "--reward.remote_url": "x"})
    assert "openrlhf.driver.generate_batch_needs_async" not in _failed(get_framework("openrlhf==0.9.10"), over)
    # dynamic batch with 2 samples per step over 4 actor ranks: an empty slice per rank; with fewer samples in the
    # whole rollout than one step, 0.9.10 runs no step (0.10 still divides by the empty slice)
    dyn = {**base, "--advantage_estimator": "gae", "--critic_num_gpus_per_node": 4, "--use_dynamic_batch": True,
           "--train_max_tokens_per_gpu": 4096, "--train_batch_size": 2, "--rollout_batch_size": 8,
           "--micro_rollout_batch_size": 1}
    rule = "openrlhf.dynamic.actor_train_batch_covers_dp"
    assert rule in _failed(get_framework("openrlhf==0.9.10"), dyn)
    assert rule not in _failed(get_framework("openrlhf==0.9.10"), {**dyn, "--train_batch_size": 3,
                                                                     "--rollout_batch_size": 1})
    partial = {**base, "--advantage_estimator": "rloo", "--n_samples_per_prompt": 2, "--partial_rollout": True}
    assert "openrlhf.driver.partial_rollout_needs_async" in _failed(get_framework("openrlhf==0.9.10"), partial)
    assert "openrlhf.driver.partial_rollout_needs_async" not in _failed(get_framework("openrlhf==0.8.11"), partial)
    # --generate_max_len: 0.4.0 to 0.8.11 (the oldest); --max_new_tokens: 0.9.10 only
    assert versions.detect({"--micro_train_batch_size": 2, "--generate_max_len": 100})[0] == "0.4.0"
    assert versions.detect({"--micro_train_batch_size": 2, "--max_new_tokens": 100})[0] == "0.9.10"
    assert versions.detect({"--train.batch_size": 8})[0] == "0.11.2"


def _issue_1013_args(*extra: str) -> list[str]:
    """OpenRLHF #1013's command (0.7.5: GRPO on a 7B, 2x8 GPUs, colocated, vLLM sleep), from the memory corpus."""
    from memory_corpus import cases

    case = next(c for c in cases() if c.name == "openrlhf_1013_7b_grpo_sleep_2x8gpu_512g")
    assert case.release == "0.7.5"
    return case.args + list(extra)


def _violated(args: list[str], framework: str) -> tuple[str, set[str]]:
    import rlbatch_solver as rb

    r = rb.check(args, framework=framework, gpus=16, model="qwen2.5-7b", gpu="h100")
    return r.version, {v.rule for v in r.violations}


def test_pack_0_7_5_checks_what_its_train_ppo_ray_checks_on_issue_1013():
    """0.7.5's __main__ block divides the actor's world by ring_attn_size only in its sample-batch assert (0.8 also
    by ds_tensor_parallel_size), ring attention does not switch packing on there (0.8 forces packing, which asks for
    vLLM engines), and without engines its experience maker stops at the first rollout (_generate_with_hf)."""
    rule = "openrlhf.driver.sample_batches_cover_actor"
    # 2 prompts x 8 samples / 8 per batch = 2 batches; 16 actor ranks, 2 with DeepSpeed TP 8
    small = _issue_1013_args("--rollout_batch_size", "2", "--micro_rollout_batch_size", "8",
                             "--ds_tensor_parallel_size", "8")
    version, violated = _violated(small, "openrlhf==0.7.5")
    assert version == "0.7.5" and rule in violated
    assert rule not in _violated(small, "openrlhf==0.8.11")[1]
    assert rule not in _violated(_issue_1013_args(), "openrlhf==0.7.5")[1]
    ring = _issue_1013_args("--ring_attn_size", "2", "--vllm_num_engines", "0")
    v075, v0811 = _violated(ring, "openrlhf==0.7.5")[1], _violated(ring, "openrlhf==0.8.11")[1]
    assert "openrlhf.vllm.engines_required" in v075 and "openrlhf.driver.packing_needs_vllm" not in v075
    assert "openrlhf.driver.packing_needs_vllm" in v0811
    assert "openrlhf.driver.packing_needs_vllm" in _violated(ring + ["--packing_samples"], "openrlhf==0.7.5")[1]
    rs = versions.ruleset_for("0.7.5")
    ids = {r.id for r in rs.rules}
    assert not ids & {"openrlhf.driver.async_forbids_vllm_sleep", "openrlhf.driver.dynamic_filtering_needs_n",
                      "openrlhf.dynamic.actor_train_batch_covers_dp"}
    assert all("deepspeed 0.16.7" in r.source for r in rs.rules if r.id.startswith("openrlhf.deepspeed.")
               and r.id.endswith("_batch"))
    release = versions.RELEASES["0.7.5"]
    # vLLM 0.8.5.post1: graphs outside the share; the sync wakes the engines fully; save_model clones on every rank
    assert (release.vllm, release.vllm_graphs_in_budget, release.sync_wakes_weights_only,
            release.save_clones_every_rank) == ("0.8.5.post1", False, False, True)


def test_0_10_4_takes_the_optimizer_flags_it_adds_in_a_loop():
    """train_ppo_ray.py of 0.10.4 adds --{actor,critic}.adam.lr and its neighbours in a loop over the two models (the
    v0.10.4 example examples/scripts/train_ppo_ray_hybrid_engine.sh passes --actor.adam.lr and --critic.adam.lr)."""
    from rlbatch_solver.frameworks.openrlhf.release_flags import RELEASE_FLAGS

    for who in ("actor", "critic"):
        assert {f"{who}.adam.lr", f"{who}.max_norm", f"{who}.optim", f"{who}.lr_warmup_ratio"} <= RELEASE_FLAGS["0.10.4"]
    assert "actor.adam.lr" not in RELEASE_FLAGS["0.9.10"]


def test_releases_sort_by_their_numbers():
    """One reading of a release as numbers (release_numbers.py), used by the dating of verl, TRL and OpenRLHF, by
    explain and for the DeepSpeed and vLLM releases the cost model compares: 0.10.4 after 0.9.10, a post release
    with its release; each folder lists its packs newest first."""
    from rlbatch_solver.frameworks.trl import versions as trl_versions
    from rlbatch_solver.frameworks.verl import versions as verl_versions
    from rlbatch_solver.release_numbers import release_numbers

    assert release_numbers("0.10.4") > release_numbers("0.9.10") and release_numbers("0.2.0.post2") == (0, 2, 0)
    assert release_numbers("0.16.4") == (0, 16, 4) and release_numbers("0.8.5.post1") == (0, 8, 5)
    for module in (versions, trl_versions, verl_versions):
        assert list(module.VERSIONS) == sorted(module.VERSIONS, key=release_numbers, reverse=True), module.NAME


def _measured(name):
    import yaml
    from pathlib import Path

    points = yaml.safe_load((Path(__file__).parent / "data" / "measured" / "points.yaml").read_text())
    return next(p for p in points if p["name"] == name)


def _check_point(point, framework=None):
    import rlbatch_solver as rb

    return rb.check(point["args"], framework=framework or point["framework"], gpus=point.get("gpus"),
                    model=point["model"], gpu=point["gpu"])


def test_without_vllm_engines_0_4_to_0_6_price_the_actors_own_generate():
    """OpenRLHF's benchmark row "OpenRLHF(ray) 1:1:4:2" (v0.2.2, no vLLM: 4 actor GPUs, Llama-2-7B, ZeRO-2 with Adam
    offload on A800) ran with the actor generating through transformers, micro_rollout_batch_size prompts per call
    (experience_maker.py: 0.4.0.post2 _generate_local, 0.6.2 generate_samples). It was priced with a vLLM engine
    filling 0.95 of a GPU it never had (rollout 76.9 of 79 GiB)."""
    point = _measured("openrlhf_bench_llama2_7b_ray_nonvllm_8xa800")
    assert point["framework"] == "openrlhf==0.4.0" and point["args"][-2:] == ["--vllm_num_engines", "0"]
    for version in ("0.4.0", "0.5.9", "0.6.2"):
        r = _check_point(point, f"openrlhf=={version}")
        rollout = r.memory.phases["rollout"]
        assert not any("vLLM" in term for term in rollout), (version, rollout)
        # the actor's bf16 params stay (ZeRO-2 shards only grads and optimizer, the optimizer is on the CPU) beside
        # the KV cache of 16 sequences (micro_rollout_batch_size) of 1024 + 1024 tokens: 16 x 2048 x 0.5 MiB = 16 GiB
        assert rollout["generate KV cache (transformers, whole local batch)"] / 1024 == pytest.approx(16.0, abs=0.01)
        assert rollout["actor params+optimizer (resident)"] / 1024 == pytest.approx(12.55, abs=0.05)
        assert r.memory.fits and not r.violations
    # 0.7.5 stops in _generate_with_hf (NotImplementedError) and 0.8 on require engines: no transformers path there;
    # with engines the release runs vLLM; the other phases keep their engine whatever the count
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.phase import Phase
    from rlbatch_solver.frameworks.openrlhf.cost import make_plan

    model, gpu = load_model("qwen2.5-7b"), load_gpu("a100-80gb")

    def engine(fw, engines, phase=Phase.ROLLOUT):
        values = get_framework(fw).to_values({"--actor_num_gpus_per_node": 4, "--vllm_num_engines": engines},
                                             gpus=None, model=None)
        return make_plan(values, phase, model, gpu).engine

    assert [engine(f"openrlhf=={v}", 0) for v in ("0.4.0", "0.5.9", "0.6.2", "0.7.5")] == ["hf"] * 3 + ["vllm"]
    assert engine("openrlhf", 0) == engine("openrlhf==0.4.0", 2) == engine("openrlhf==0.4.0", 0, Phase.ACTOR_UPDATE) \
        == "vllm"


def test_2024_vllm_rows_are_priced_with_vllms_own_default_share():
    """OpenRLHF passed its own --vllm_gpu_memory_utilization to vLLM from c10f02bd (2025-02-07, v0.5.8) on; the
    benchmark's vLLM rows (v0.2.2, create_vllm_engines passing none) ran with vLLM's default 0.9, as the 0.4.0 pack
    has it: 4 GiB less KV cache per A800 than under a newer release's 0.95."""
    point = _measured("openrlhf_bench_llama2_7b_ray_vllm_8xa800")
    assert point["framework"] == "openrlhf==0.4.0"
    # 0.7.5: the last release with these flags (--flash_attn), passing its own share of 0.95 to a vLLM that sizes the
    # KV cache before its CUDA graphs, as 0.4.0's does
    old, new = _check_point(point), _check_point(point, "openrlhf==0.7.5")
    kv_old, kv_new = old.memory.phases["rollout"]["vLLM KV cache"], new.memory.phases["rollout"]["vLLM KV cache"]
    assert (kv_new - kv_old) / 1024 == pytest.approx(0.05 * 80, abs=0.1)
    assert (old.memory.peaks["rollout"] - kv_old) == pytest.approx(new.memory.peaks["rollout"] - kv_new, abs=64)


def test_measured_rows_a_release_cannot_run_as_written_are_unjudged():
    """The benchmark's DeepSpeed row runs examples/train_ppo.py without Ray with a ZeRO stage and offload it does not publish; the vLLM rows whose engines
    are not published give none, which their release reads as no vLLM (and refuses with ZeRO-3): listed unjudged, not
    counted as right fits on a rollout they never ran."""
    import memory_corpus as mc

    names = ["openrlhf_bench_llama2_7b_deepspeed_8xa800", "openrlhf_bench_codellama_34b_ray_vllm_8xa800",
             "openrlhf_readme_llama2_7b_ppo_16xa800", "openrlhf_readme_llama2_70b_ppo_32xa800"]
    cases = {c.name: c for c in mc.cases()}
    for name in names:
        assert cases[name].unjudged and _measured(name)["unjudged"] == cases[name].unjudged
        assert mc.judge(cases[name]).unjudged


def _bench_rollout(version: str, micro: int) -> float:
    """The rollout of OpenRLHF's benchmark 7B row (2 vLLM engines of TP 1, 1,024 prompts a step) at ``version``."""
    from rlbatch_solver.calibration import make_run

    args = ["--ref_num_gpus_per_node", "1", "--reward_num_gpus_per_node", "1", "--critic_num_gpus_per_node", "2",
            "--actor_num_gpus_per_node", "2", "--vllm_num_engines", "2", "--vllm_tensor_parallel_size", "1",
            "--micro_rollout_batch_size", str(micro), "--micro_train_batch_size", "8", "--rollout_batch_size", "1024",
            "--train_batch_size", "128", "--prompt_max_len", "1024", "--generate_max_len", "1024", "--bf16",
            "--flash_attn", "--gradient_checkpointing", "--adam_offload"]
    return make_run(f"openrlhf=={version}", args, gpu="a800", model="llama2-7b", gpus=8).predict().seconds["rollout"]


def test_openrlhf_0_4_calls_its_engines_micro_batch_by_micro_batch():
    """0.4.0.post2's ranks each generate micro_rollout_batch_size samples per call on a Ray actor that serves one
    call at a time (ppo_trainer.py fit, experience_maker.py _generate_vllm): 1,024 prompts over 2 engines in calls of
    16 are 32 calls an engine, each drained to its own longest response, so the rollout grows as the calls shrink;
    0.5.9 sends each rank's share at once, whatever the micro batch."""
    small, large = _bench_rollout("0.4.0", 8), _bench_rollout("0.4.0", 64)
    assert small > 1.5 * large
    assert _bench_rollout("0.5.9", 8) == pytest.approx(_bench_rollout("0.5.9", 64))
    assert _bench_rollout("0.5.9", 16) < _bench_rollout("0.4.0", 16) / 2


def test_every_release_whose_flags_date_a_config_is_one_we_follow():
    """detect dates a config to a release of RELEASE_FLAGS (dating.pick) and reads its estimators (RELEASES): a
    release whose flags were added without its pack would be a KeyError, or a --framework we refuse, on a paste."""
    from rlbatch_solver.frameworks.openrlhf.release_flags import RELEASE_FLAGS

    assert set(RELEASE_FLAGS) <= set(versions.RELEASES) and set(RELEASE_FLAGS) <= set(versions.VERSIONS)


def test_the_pre_dotted_enforce_eager_flag_reaches_the_cost_model():
    """OpenRLHF before 0.10.2 spells vLLM's eager mode --enforce_eager (0.9.10's cli/train_ppo_ray.py, "Disable CUDA
    graph in vLLM"; 0.11.2 renamed it --vllm.enforce_eager, names.SUCCESSOR_OF): a config of those releases that
    sets it runs its engines without CUDA graphs, so its rollout holds no graph memory and decodes eagerly, as the
    dotted flag under 0.11.2 is priced."""
    import rlbatch_solver as rb

    base = ["--actor_num_nodes", "1", "--actor_num_gpus_per_node", "4", "--vllm_num_engines", "4",
            "--vllm_tensor_parallel_size", "1", "--colocate_all_models", "--vllm_gpu_memory_utilization", "0.5",
            "--micro_train_batch_size", "2", "--train_batch_size", "128", "--micro_rollout_batch_size", "4",
            "--rollout_batch_size", "128", "--n_samples_per_prompt", "4", "--prompt_max_len", "1024",
            "--generate_max_len", "1024", "--zero_stage", "3", "--advantage_estimator", "group_norm"]
    graphs = "CUDA graphs (outside budget)"
    for release in ("openrlhf==0.9.10", "openrlhf==0.7.5"):
        plain = rb.check(base, framework=release, gpu="h100", gpus=4, model="qwen2.5-7b").memory
        eager = rb.check(base + ["--enforce_eager"], framework=release, gpu="h100", gpus=4, model="qwen2.5-7b").memory
        assert plain.phases["rollout"][graphs] > 0 and eager.phases["rollout"][graphs] == 0, release
        assert eager.seconds["rollout"] > plain.seconds["rollout"], release

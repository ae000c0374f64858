"""Split placements: rollout on a GPU pool of its own, pipelined with training (docs/async.md).

* verl 0.9.1's separate_async mode and fully_async recipe: their rules with the numbers, the recipe's keys read and
  written back, the published fully_async scripts judged (one of them broken as published, and why);
* the pipelined step: the slower pool plus the weight sync, in the reports and in the solver's objective alike;
  memory per pool; the streaming rollout has no batch-1 tail;
* ``recommend --placement colocate|split|auto``: every layout solved is valid by the plain checker, the verdict
  names the winner over the other kind, sweeps vary the placement; OpenRLHF's --train.async_enable;
* brute force: the solver and the checker agree on small split spaces.
"""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlbatch_solver as rb
from bruteforce import assert_enumerate_equals_checker, assert_tables_match_cost_model
from clirun import run
from doc_sections import marked
from rlbatch_solver.api import prepare
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.commands.recommend import recommend
from rlbatch_solver.costmodel.tables import full_reports, stage_seconds, step_seconds
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.verl.fsdp import config_to_values, split_layouts, solution_to_overrides
from rlbatch_solver.frameworks.verl.rules import RULESET, VARIABLES
from rlbatch_solver.launch_script import read_launch_script
from rlbatch_solver.scenario import Scenario

AR = "actor_rollout_ref"
SCRIPTS = Path(__file__).parent / "data" / "scripts"

# the v1 trainer's separate_async mode, as verl's own e2e test launches it (tests/special_e2e/run_v1_separate_async.sh
# @ verl-project/verl 1dda039b9c6311889a9c9a26040677e1254814f9, with its defaults: 8 GPUs split 4 + 4, FSDP2)
SEPARATE = ["trainer.use_v1=True", "trainer.v1.trainer_mode=separate_async",
            "trainer.v1.separate_async.parameter_sync_step=4", "data.train_batch_size=4", "data.max_prompt_length=512",
            "data.max_response_length=512", "algorithm.adv_estimator=grpo", "algorithm.use_kl_in_reward=False",
            f"{AR}.actor.ppo_mini_batch_size=1", f"{AR}.actor.use_dynamic_bsz=True",
            f"{AR}.actor.ppo_max_token_len_per_gpu=4096", f"{AR}.actor.use_kl_loss=False",
            f"{AR}.rollout.name=vllm", f"{AR}.rollout.mode=async", f"{AR}.rollout.nnodes=1",
            f"{AR}.rollout.n_gpus_per_node=4", f"{AR}.rollout.tensor_model_parallel_size=2",
            f"{AR}.rollout.gpu_memory_utilization=0.6", f"{AR}.rollout.n=4", f"{AR}.rollout.log_prob_use_dynamic_bsz=True",
            f"{AR}.rollout.log_prob_max_token_len_per_gpu=4096", f"{AR}.rollout.checkpoint_engine.backend=nccl",
            "trainer.nnodes=1", "trainer.n_gpus_per_node=4", f"{AR}.actor.fsdp_config.fsdp_size=2"]


def rules_broken(args, **kw):
    return {v.rule for v in rb.check(args, **kw).errors}


def with_(args, **changes):
    out = [a for a in args if a.partition("=")[0] not in changes]
    return out + [f"{k}={v}" for k, v in changes.items()]


# ---------------------------------------------------------------------------------------------- rules
def test_verls_own_separate_async_e2e_config_is_valid_and_fits():
    report = rb.check(SEPARATE, gpus=8, model="qwen2.5-0.5b", gpu="h100")
    assert report.valid, [v.message for v in report.errors]
    assert report.values["async_mode"] == 2 and report.values["cluster_gpus"] == 8
    assert [name for name, *_ in report.memory.stages] == ["rollout", "trainer"]


def test_separate_async_trains_one_mini_batch_per_step_between_syncs():
    """PPOTrainerSeparateAsync.__init__: train_batch_size == parameter_sync_step * ppo_mini_batch_size."""
    report = rb.check(with_(SEPARATE, **{"data.train_batch_size": 6}))
    v = next(v for v in report.errors if v.rule == "verl.async.separate_batch_is_sync_steps_of_minis")
    assert "train_batch_size = 6, parameter_sync_step = 4, ppo_mini_batch_size = 1" in v.message
    assert v.stage.value == "trainer_init"


def test_separate_async_needs_a_rollout_pool_and_a_network_checkpoint_engine():
    no_pool = rules_broken(with_(SEPARATE, **{f"{AR}.rollout.nnodes": 0}))
    assert "verl.async.rollout_pool_needed" in no_pool
    naive = rules_broken(with_(SEPARATE, **{f"{AR}.rollout.checkpoint_engine.backend": "naive"}))
    assert naive == {"verl.async.checkpoint_engine_not_naive"}


def test_the_cluster_must_hold_both_pools_and_a_replica_must_fit_the_pool():
    assert "verl.async.pools_fit_cluster" in rules_broken(SEPARATE, gpus=6)
    assert "verl.async.pools_fit_cluster" not in rules_broken(SEPARATE, gpus=8)
    tp8 = rb.check(with_(SEPARATE, **{f"{AR}.rollout.tensor_model_parallel_size": 8, f"{AR}.hybrid_engine": False}))
    assert "verl.async.replica_fits_rollout_pool" in {v.rule for v in tp8.errors}
    tp3 = rb.check(with_(SEPARATE, **{f"{AR}.rollout.tensor_model_parallel_size": 3, f"{AR}.hybrid_engine": False}))
    leftover = next(v for v in tp3.warnings if v.rule == "verl.advice.rollout_pool_whole_replicas")
    assert "4 standalone rollout GPUs are not whole replicas of TP*DP*PP = 3" in leftover.message


def test_trainer_gpus_hold_rollout_replicas_only_with_the_hybrid_engine():
    """verl.worker.rollout_world_divides_gpus reads the trainer GPUs: it holds while they host hybrid replicas."""
    odd = with_(SEPARATE, **{f"{AR}.rollout.tensor_model_parallel_size": 4, "trainer.n_gpus_per_node": 6,
                             f"{AR}.rollout.n_gpus_per_node": 4})
    assert "verl.worker.rollout_world_divides_gpus" in rules_broken(odd)
    assert "verl.worker.rollout_world_divides_gpus" not in rules_broken(odd + [f"{AR}.hybrid_engine=False"])


FULLY_ASYNC = ["data.train_batch_size=0", "data.max_prompt_length=1024", "data.max_response_length=4096",
               f"{AR}.rollout.n=8", "algorithm.adv_estimator=grpo", f"{AR}.actor.ppo_mini_batch_size=16",
               f"{AR}.actor.ppo_micro_batch_size_per_gpu=2", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=4",
               f"{AR}.hybrid_engine=False", "trainer.nnodes=1",
               "trainer.n_gpus_per_node=4", "rollout.nnodes=1", "rollout.n_gpus_per_node=4",
               "async_training.trigger_parameter_sync_step=2", "async_training.require_batches=2",
               "async_training.staleness_threshold=0.5", "async_training.partial_rollout=True"]


def test_the_fully_async_recipe_is_read_from_its_own_keys():
    values = config_to_values(get_framework("verl").parse(FULLY_ASYNC)[0])
    assert values["async_mode"] == 3 and values["rollout_nnodes"] == 1 and values["rollout_gpus_per_node"] == 4
    # prompts per weight sync: mini x require_batches x trigger_parameter_sync_step
    assert values["train_batch_size"] == 16 * 2 * 2 and values["fa_train_batch"] == 0
    assert values["bypass_logprob"] is True and values["ckpt_naive"] is False  # the recipe's yaml
    assert rb.check(FULLY_ASYNC).valid


def test_the_fully_async_recipe_wants_train_batch_zero_and_no_hybrid_engine():
    given = rules_broken(with_(FULLY_ASYNC, **{"data.train_batch_size": 512}))
    assert given == {"verl.async.fully_async_train_batch_zero"}
    # left out, data.train_batch_size is verl's 1024: the recipe's rollouter rejects it
    omitted = [a for a in FULLY_ASYNC if not a.startswith("data.train_batch_size")]
    assert "verl.async.fully_async_train_batch_zero" in rules_broken(omitted)
    hybrid = [a for a in FULLY_ASYNC if not a.startswith(f"{AR}.hybrid_engine")]
    assert "verl.async.recipe_without_hybrid_engine" in rules_broken(hybrid)
    assert "verl.async.fully_async_staleness_nonnegative" in rules_broken(
        with_(FULLY_ASYNC, **{"async_training.staleness_threshold": -0.1}))


def test_the_fully_async_runner_skips_the_drivers_validate_config():
    """fully_async_main.py never calls validate_config: its train_batch_size*n % GPUs check cannot fire, the first
    step's mini_n % dp still does."""
    three = with_(FULLY_ASYNC, **{"trainer.n_gpus_per_node": 3, f"{AR}.actor.ppo_mini_batch_size": 3})
    broken = rules_broken(three)
    assert "verl.driver.batch_divisible_by_gpus" not in broken
    assert "verl.step.mini_divisible_by_dp" not in broken  # 3*8 = 24 samples over dp 3
    sync = with_(three, **{"data.train_batch_size": 5})
    sync = [a for a in sync if not a.startswith(("async_training.", "rollout.", f"{AR}.hybrid_engine"))]
    assert "verl.driver.batch_divisible_by_gpus" in rules_broken(sync)


ONE_STEP_OFF = ["data.train_batch_size=64", "data.max_prompt_length=1024", "data.max_response_length=2048",
                f"{AR}.rollout.n=6", "algorithm.adv_estimator=grpo", f"{AR}.actor.ppo_mini_batch_size=16",
                f"{AR}.actor.ppo_micro_batch_size_per_gpu=2", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=4",
                f"{AR}.hybrid_engine=False", "trainer.nnodes=1", "trainer.n_gpus_per_node=6", "rollout.nnodes=1",
                "rollout.n_gpus_per_node=2"]


def test_the_one_step_off_recipe_is_read_from_its_own_keys_and_checked_as_its_code_does():
    """Top-level rollout.* without async_training.*: verl.experimental.one_step_off_policy.main_ppo. Its driver runs
    validate_config on the trainer GPUs; its trainer (the legacy RayPPOTrainer) does not pad a step."""
    report = rb.check(ONE_STEP_OFF)
    assert report.valid, [v.message for v in report.errors]
    v = report.values
    assert (v["async_mode"], v["rollout_nnodes"], v["rollout_gpus_per_node"], v["train_batch_size"]) == (4, 1, 2, 64)
    assert v["bypass_logprob"] and not v["ckpt_naive"]  # the recipe's yaml
    assert "verl.async.one_step_off_train_divisible_by_mini" in rules_broken(
        with_(ONE_STEP_OFF, **{"data.train_batch_size": 40}))
    assert "verl.async.recipe_without_hybrid_engine" in rules_broken(
        [a for a in ONE_STEP_OFF if not a.startswith(f"{AR}.hybrid_engine")])
    assert "verl.driver.batch_divisible_by_gpus" in rules_broken(with_(ONE_STEP_OFF, **{"actor_rollout_ref.rollout.n": 5}))
    native = solution_to_overrides(v)
    assert "rollout.nnodes=1" in native and not any("trainer_mode" in a for a in native)
    assert get_framework("verl").entry_point(v).endswith("one_step_off_policy.main_ppo")


# verl #2828 (2025-07-31): "2*8 H800, 1 node for actor, 1 node for rollout; verl+qwen32b+grpo+fsdp/fsdp2" on the
# one_step_off recipe of that time (v0.5.0's recipe/one_step_off_policy), its traceback dying in compute_log_prob. The
# issue gives no script: the recipe's own GRPO example of v0.5.0 (grpo_3b_gsm8k_fsdp2_2_6.sh) on the issue's model
# and pools.
ISSUE_2828 = ["algorithm.adv_estimator=grpo", "data.train_batch_size=1152", "data.max_prompt_length=512",
              "data.max_response_length=1024", f"{AR}.actor.strategy=fsdp2", f"{AR}.model.path=Qwen/Qwen2.5-32B",
              f"{AR}.hybrid_engine=False", f"{AR}.model.use_remove_padding=True", f"{AR}.actor.ppo_mini_batch_size=192",
              f"{AR}.actor.ppo_micro_batch_size_per_gpu=32", f"{AR}.actor.use_kl_loss=True",
              f"{AR}.actor.entropy_coeff=0", f"{AR}.model.enable_gradient_checkpointing=True",
              f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=32", f"{AR}.rollout.tensor_model_parallel_size=2",
              f"{AR}.rollout.name=vllm", f"{AR}.rollout.gpu_memory_utilization=0.6", f"{AR}.rollout.n=5",
              f"{AR}.ref.log_prob_micro_batch_size_per_gpu=32", f"{AR}.ref.fsdp_config.param_offload=True",
              "algorithm.use_kl_in_reward=False", "trainer.nnodes=1", "trainer.n_gpus_per_node=8", "rollout.nnodes=1",
              "rollout.n_gpus_per_node=8"]


@pytest.mark.parametrize("release,recomputes", [("0.5.0", True), ("0.6.1", True), ("0.7.1", False), ("0.9.1", False)])
def test_the_one_step_off_recipe_recomputes_the_old_log_probs_before_0_7(release, recomputes):
    """Up to v0.6.1 the recipe's trainer recomputes the old log-probs on the trainer pool
    (OneStepOffRayTrainer.fit: actor_wg.compute_log_prob, where #2828 ran out of memory); v0.7.0's recipe yaml sets
    algorithm.rollout_correction.bypass_mode True and the engine's log-probs serve. Priced as the code runs."""
    report = rb.check(ISSUE_2828, framework=f"verl=={release}", gpu="h800", model="qwen2.5-32b", gpus=16)
    assert report.values["async_mode"] == 4
    assert report.values["bypass_logprob"] is not recomputes
    assert ("old_log_prob" in report.memory.phases) is recomputes, report.memory.phases
    assert (report.memory.seconds.get("old_log_prob", 0) > 0) is recomputes
    # the recipe of 0.6.1 recomputes them even where the config asks for bypass mode (0.6.1's own trainer has it)
    said = rb.check(with_(ISSUE_2828, **{"algorithm.rollout_correction.bypass_mode": True}),
                    framework=f"verl=={release}", gpu="h800", model="qwen2.5-32b", gpus=16)
    assert ("old_log_prob" in said.memory.phases) is recomputes


@pytest.mark.parametrize("script,valid", [
    ("fully_async_dapo_7b_math_fsdp2_4_4.sh", True),
    ("fully_async_dapo_7b_math_fsdp2_8_8.sh", True),
    ("fully_async_dapo_7b_math_fsdp2_16_16.sh", True),
    ("fully_async_dapo_7b_math_fsdp2_32_32.sh", True),
    ("fully_async_dapo_7b_math_fsdp2_64_64.sh", True),
    ("fully_async_grpo_30b_a3b_base_math_megatron_96_32.sh", True),
    # 12 trainer GPUs (2 nodes x 6), ulysses 1: dp 12 does not divide ppo_mini_batch_size*n = 32*16 = 512
    # (TrainingWorker.train_mini_batch asserts it; the recipe's _balance_batch already fails on 2048 % 12)
    ("fully_async_dapo_7b_math_fsdp2_4_12.sh", False),
    ("one_step_off_dapo_7b_math_fsdp2_4_12.sh", True),
    ("one_step_off_dapo_7b_math_megatron_4_12.sh", True),
    ("one_step_off_dapo_7b_math_fsdp2_64_64.sh", True),
    ("one_step_off_grpo_0.6b_gsm8k_fsdp2_2_6.sh", True),
    ("one_step_off_grpo_3b_gsm8k_fsdp2_2_6.sh", True),
])
def test_verls_published_fully_async_scripts(script, valid):
    folder = "verl-megatron" if "megatron" in script else "verl"
    report = rb.check(read_launch_script(SCRIPTS / folder / script).args, framework=folder)
    assert report.values["async_mode"] == (3 if script.startswith("fully_async") else 4)
    assert report.valid == valid, [v.message for v in report.errors]
    if not valid:
        assert {v.rule for v in report.errors} == {"verl.step.mini_divisible_by_dp"}


def test_the_96_32_script_reads_its_pools():
    script = SCRIPTS / "verl-megatron" / "fully_async_grpo_30b_a3b_base_math_megatron_96_32.sh"
    report = rb.check(read_launch_script(script).args, framework="verl-megatron")
    v = report.values
    assert (v["nnodes"], v["gpus_per_node"], v["rollout_nnodes"], v["rollout_gpus_per_node"]) == (4, 8, 12, 8)


def test_exports_write_the_modes_own_keys_and_read_back_the_same():
    fw = get_framework("verl")
    for args in (SEPARATE, FULLY_ASYNC):
        values = fw.to_values(fw.parse(args)[0], gpus=None, model=None)
        native = solution_to_overrides(values)
        again = fw.to_values(fw.parse(native)[0], gpus=None, model=None)
        keys = ("async_mode", "train_batch_size", "actor_mini", "sync_steps", "rollout_nnodes", "rollout_gpus_per_node",
                "hybrid_engine", "ckpt_naive", "fa_train_batch", "require_batches")
        assert {k: again[k] for k in keys} == {k: values[k] for k in keys}, native
    fa = solution_to_overrides(fw.to_values(fw.parse(FULLY_ASYNC)[0], gpus=None, model=None))
    assert "data.train_batch_size=0" in fa and "async_training.trigger_parameter_sync_step=2" in fa
    assert "rollout.nnodes=1" in fa and not any(a.startswith("trainer.v1.trainer_mode") for a in fa)
    sep = solution_to_overrides(fw.to_values(fw.parse(SEPARATE)[0], gpus=None, model=None))
    assert "trainer.v1.trainer_mode=separate_async" in sep and f"{AR}.rollout.checkpoint_engine.backend=nccl" in sep
    sync = solution_to_overrides(fw.to_values(fw.parse(with_(SEPARATE, **{"trainer.v1.trainer_mode": "sync"}))[0],
                                              gpus=None, model=None))
    assert not any("trainer_mode" in a or "rollout.nnodes" in a for a in sync)


def test_older_verl_packs_say_the_async_modes_are_not_modelled_there():
    report = rb.check(SEPARATE, framework="verl==0.8.0")
    assert "verl.advice.async_modelled_for_0_9_only" in {v.rule for v in report.warnings}
    assert not any(v.rule.startswith("verl.async.") for v in report.violations)


# ---------------------------------------------------------------------------------------------- brute force
BASE = {name: [spec.default] for name, spec in VARIABLES.items() if spec.default is not None or spec.optional}
BASE.update({"need_critic": [False], "need_ref": [False], "group_estimator": [True], "num_heads": [12],
             "num_kv_heads": [2], "max_position_embeddings": [4096], "max_prompt_length": [512],
             "max_response_length": [1024], "actor_micro_per_gpu": [1], "logprob_micro_per_gpu": [1],
             "cluster_gpus": [8]})


@pytest.mark.parametrize("space", [
    {"async_mode": [0, 2, 3, 4], "gpus_per_node": [2, 4], "rollout_nnodes": [0, 1, 2], "rollout_gpus_per_node": [None, 2, 3],
     "hybrid_engine": [False, True], "rollout_tp": [1, 2, 4], "cluster_gpus": [6, 8, 12]},
    {"async_mode": [0, 2, 3, 4], "sync_steps": [1, 2, 4], "train_batch_size": [4, 6, 8], "actor_mini": [2, 4],
     "require_batches": [1, 2], "ckpt_naive": [False, True], "fa_train_batch": [0, 8], "rollout_nnodes": [1],
     "hybrid_engine": [False], "staleness_permille": [-100, 0, 500], "gpus_per_node": [2, 3]},
])
def test_split_rules_solver_equals_checker(space):
    domains = {**BASE, **space}
    assert_enumerate_equals_checker(RULESET, domains)


# ---------------------------------------------------------------------------------------------- cost
def split_scenario(**kw):
    fixed = {"trainer.v1.trainer_mode": "separate_async", f"{AR}.rollout.nnodes": 1,
             f"{AR}.rollout.n_gpus_per_node": 2, f"{AR}.hybrid_engine": False,
             f"{AR}.rollout.checkpoint_engine.backend": "nccl", **kw.pop("fixed", {})}
    return Scenario(framework="verl", gpu="a100-80gb", gpus_per_node=2, nnodes=1, model="qwen2.5-0.5b",
                    algorithm="grpo", n=4, prompt_length=512, response_length=1024, fixed=fixed,
                    search={"trainer.v1.separate_async.parameter_sync_step": [1, 2, 4, 8], **kw.pop("search", {})},
                    **kw)


def test_split_tables_equal_the_cost_model_and_the_objective_is_the_pipelined_step():
    _, _, _, space, spec, terms, ruleset = prepare(split_scenario())
    assert_tables_match_cost_model(space, spec, ruleset, configs=30, seed=5, label="verl-split", terms=terms)


def test_a_split_step_is_the_slower_pool_plus_the_weight_sync():
    report = rb.check(SEPARATE, model="qwen2.5-0.5b", gpu="h100")
    mem = report.memory
    stages = dict((n, s) for n, s, _ in mem.stages)
    train = sum(t for p, t in mem.seconds.items() if p not in ("rollout", "weight_sync"))
    assert stages["rollout"] == pytest.approx(mem.seconds["rollout"], abs=2e-3)  # the report rounds to ms
    assert stages["trainer"] == pytest.approx(train, abs=5e-3)
    assert mem.step_s == pytest.approx(max(stages.values()) + mem.seconds["weight_sync"], abs=5e-3)
    idle = {n: i for n, _, i in mem.stages}
    slow = max(stages, key=stages.get)
    assert idle[slow] == pytest.approx(mem.seconds["weight_sync"] / mem.step_s, abs=1e-3)


def test_fully_async_at_staleness_zero_does_not_overlap_its_pools():
    """With staleness_threshold 0 the rollouter may not generate ahead of its weights: the stages add up (the
    recipe's own ablation: 231 s against 128 s of generation wait and 99 s of update)."""
    ahead = rb.check(FULLY_ASYNC, model="qwen2.5-0.5b", gpu="h100").memory
    zero = rb.check(with_(FULLY_ASYNC, **{"async_training.staleness_threshold": 0}), model="qwen2.5-0.5b",
                    gpu="h100").memory
    assert ahead.stages and not zero.stages
    assert zero.step_s == pytest.approx(sum(zero.seconds.values()), rel=1e-3)
    assert ahead.step_s < zero.step_s


def test_a_rollout_pool_holds_the_engine_alone_and_streams_without_the_tail():
    fw = get_framework("verl")
    spec = fw.cost_spec(load_model("qwen2.5-0.5b"), load_gpu("h100"))
    split = fw.to_values(fw.parse(with_(SEPARATE, **{f"{AR}.hybrid_engine": False}))[0], gpus=None,
                         model=load_model("qwen2.5-0.5b"))
    mem, seconds = full_reports(spec, split)
    assert not any("resident" in t for t in mem["rollout"].phases["rollout"])
    hybrid = dict(split, hybrid_engine=True)
    mem_h, _ = full_reports(spec, hybrid)
    assert mem_h["rollout"].peak("rollout") > mem["rollout"].peak("rollout")  # trainer states beside the engine
    plan = spec.plan(split, "rollout")
    assert plan.rollout_gpus == 4 and plan.rollout_streaming
    from rlbatch_solver.costmodel.time import estimate_time

    tail = estimate_time(plan.replace(rollout_streaming=False)).phases["rollout"]
    assert estimate_time(plan).phases["rollout"] < tail


def test_separate_async_decoupled_ppo_copies_the_old_policy_to_the_host():
    fw = get_framework("verl")
    card = load_model("qwen2.5-0.5b")
    spec = fw.cost_spec(card, load_gpu("h100"))
    values = fw.to_values(fw.parse(SEPARATE)[0], gpus=None, model=card)
    assert spec.plan(values, "offload").actor_param_host_copies == 1 + 3 * 3
    bypass = dict(values, bypass_logprob=True)
    assert spec.plan(bypass, "offload").actor_param_host_copies == 0
    assert "old_log_prob" not in spec.phases_run(bypass)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(["rollout", "old_log_prob", "ref", "actor_update", "weight_sync", "offload"]),
                       st.floats(min_value=0, max_value=1e4), min_size=2),
       st.sampled_from([0, 2, 3]), st.sampled_from([0, 100]))
def test_property_a_step_is_between_its_slowest_pool_and_the_sum(seconds, mode, staleness):
    spec = get_framework("verl").cost_spec(load_model("qwen2.5-0.5b"), load_gpu("h100"))
    values = {"async_mode": mode, "staleness_permille": staleness}
    step = step_seconds(spec, values, seconds)
    assert step <= sum(seconds.values()) + 1e-6
    stages = stage_seconds(spec, values, seconds)
    if stages:
        assert step >= max(s for _, s, _ in stages) - 1e-6
        assert all(0.0 <= i <= 1.0 for _, _, i in stages)
    else:
        assert step == pytest.approx(sum(seconds.values()))


# ---------------------------------------------------------------------------------------------- recommend
def test_split_layouts_use_every_gpu_and_mark_the_quarters():
    lays = split_layouts(4, 8)
    assert all(tn * tg + rn * rg == 32 for tn, tg, rn, rg, _ in lays)
    assert [l[0] * l[1] for l in lays] == sorted(l[0] * l[1] for l in lays)
    coarse = {(tn * tg, tn) for tn, tg, _, _, c in lays if c}
    assert coarse == {(8, 1), (16, 2), (24, 3), (8, 4), (16, 4), (24, 4)}
    assert split_layouts(1, 1) == []


def test_recommend_split_returns_a_valid_split_with_its_pools():
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=4096, placement="split")
    report = recommend(sc, time_limit_s=20)
    best = report.best
    assert best is not None and best.values["async_mode"] == 2 and not best.values["hybrid_engine"]
    assert best.values["nnodes"] * best.values["gpus_per_node"] + best.values["rollout_nnodes"] * best.values[
        "rollout_gpus_per_node"] == 8
    assert [n for n, *_ in best.stages] == ["rollout", "trainer"]
    assert "trainer.v1.trainer_mode=separate_async" in best.native
    fw = get_framework("verl")
    for option in report.placement.options:  # each layout's answers, judged by the plain checker
        for c in option.report.choices:
            assert fw.ruleset.check(c.values).valid
    assert report.scenario.placement == "split" and report.placement.winner.placement == "split"


def test_the_placement_answer_says_the_job_notes_once_and_no_layout_solve_says_its_own(monkeypatch):
    """recommend --placement: the notes on the keys given and on the printed command (the release that judges it, what
    the command's reading assumes) are the whole job's, said once by the answer; a layout's own solve neither looks
    its keys up nor reads its printed command back (each did both, and the answer replaced what they said). The
    answer says what it said before."""
    from rlbatch_solver.commands import recommend as module

    calls = {"set_keys": 0, "answer_notes": 0}
    for name in calls:
        def counted(*args, _real=getattr(module, name), _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    sc = Scenario(framework="swift==3.8.0", gpu="h100", gpus=8, model="qwen2.5-7b", placement="auto")
    report = recommend(sc, top=2, time_limit_s=30)
    assert [o.placement for o in report.placement.options] == ["colocate", "split"]
    assert report.key_notes == [
        "ms-swift 3.8.0 is checked with the rules of 3.10.3, whose checks the 3.8.x releases share",
        "no --train_type: ms-swift 3.8.0 trains LoRA by default (BaseArguments.train_type 'lora'), rank 8, and so it "
        "is priced; to train every weight give --train_type full (recommend: --set train_type=full)"]
    assert calls == {"set_keys": 1, "answer_notes": 1}


def test_recommend_auto_compares_the_best_of_each_kind_and_says_why():
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=4096, placement="auto")
    report = recommend(sc, time_limit_s=20)
    summary = report.placement
    kinds = {o.placement for o in summary.ranked}
    assert kinds == {"colocate", "split"}
    win, fastest = summary.winner, summary.fastest
    assert fastest.objective == min(o.objective for o in summary.ranked)
    assert report.best.objective == win.objective
    text = summary.verdict()
    assert win.label in text and ("x the throughput of the best" in text or "a tie" in text)
    assert ("generation is" in text) and ("bottleneck" in text)


def test_each_layout_of_auto_trains_the_jobs_batch_and_solved_on_its_own_gives_autos_answer():
    """The algorithm's batch is settled on the whole job before the layouts are made (``placement_layouts``): asked
    of the bare job, OpenRLHF's split layout searched train_batch_size (and took 1024: one update per step, not the
    kept 128's eight) and ms-swift's counted its completions per optimizer step on the split's trainer GPUs (56, not
    the job's 32), so benchmarks/bench_placement.py's per-layout baseline beat the command's split option."""
    from rlbatch_solver.commands.placement import placement_layouts

    common = dict(gpu="h100", gpus=32, model="qwen2.5-7b", algorithm="grpo", n=8, prompt_length=1024,
                  response_length=4096, placement="auto")
    split = next(lay for lay in placement_layouts(Scenario(framework="openrlhf", **common), [])
                 if lay.placement == "split")
    assert split.scenario.fixed["train.batch_size"] == 128 and split.scenario.fixed["rollout.batch_size"] == 1024
    assert "train.batch_size" not in split.scenario.search
    sc = Scenario(framework="swift", **common)
    layouts = placement_layouts(sc, [])
    assert [lay.scenario.kept_totals for lay in layouts] == [{"opt_batch": 32}] * 2
    auto = {o.placement: o for o in recommend(sc, top=1, time_limit_s=30).placement.options}
    for lay in layouts:
        alone = recommend(lay.scenario, top=1, time_limit_s=30).best
        assert alone.proven and auto[lay.placement].best.proven
        assert (alone.samples, alone.objective) == (auto[lay.placement].samples, auto[lay.placement].best.objective)


def test_a_split_that_wins_inside_the_models_error_is_a_tie_the_colocated_config_wins():
    """The model's colocated/split ratio is off the published one by a median factor (docs/async.md's comparisons,
    placement_accuracy.yaml): a split predicted faster by less than that is a tie, and the simpler colocated config
    is the answer, said with both numbers."""
    from rlbatch_solver.costmodel.accuracy import placement_error

    error, points = placement_error()
    assert points >= 7 and error > 0
    # batch sizes free: each layout's own best batch, where a split is predicted a little faster
    # (20K responses: with the refit of docs/accuracy.md item 9 a 4K step's update costs more, and colocate wins
    # outright; since item 14's lower train_scale an 8K one does too, since item 15's a 12K one, and a 16K one is too
    # close to call within the solver's time limit; since docs/accuracy.md item 19's lower rollout scale a 20K one
    # does too (8-14K as well), and a 28K one is a split predicted 6% faster; since item 21's lower fixed seconds a 28K
    # one is colocated too, and a 31K one (the model's 32K context less the prompt) a split predicted 2% faster; since
    # item 29's lower rollout scale the 1.5B is colocated at any limit, and Qwen2.5-0.5B on 16 GPUs at 31K is a split
    # predicted 9% faster); the default length profile named, since the GSM8K data of the printed example (the profile
    # otherwise) answers in ~232 tokens at any limit
    sc = Scenario(framework="verl", gpu="h100", gpus=16, model="qwen2.5-0.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=31744, placement="auto", free_batch=True,
                  response_profile="default")
    report = recommend(sc, time_limit_s=20)
    summary = report.placement
    fastest, colocated = summary.fastest, summary.best_of("colocate")
    assert fastest.placement == "split" and fastest.objective * math.exp(error) >= colocated.objective  # a tie
    assert summary.winner is colocated and report.best is colocated.best
    assert "a tie" in summary.verdict() and "colocated config is kept" in summary.verdict()


def test_placement_cli_prints_the_comparison_and_json_carries_it():
    out = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--n", "8",
              "--prompt-len", "1024", "--response-len", "4096", "--placement", "auto", "--time-limit", "20", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["placement"]["winner"] and {o["placement"] for o in data["placement"]["options"]} == {"colocate",
                                                                                                       "split"}
    bad = run("recommend", "--placement", "spilt")
    assert bad.returncode == 2 and "did you mean" in (bad.stdout + bad.stderr).lower()
    trl = run("recommend", "--framework", "trl", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b",
              "--placement", "split", "--json")
    assert trl.returncode == 0, trl.stderr  # TRL's vllm-serve server, in turn (no async generation)
    assert json.loads(trl.stdout)["placement"]["winner"].startswith("server:")


def test_openrlhf_async_split_puts_vllm_on_its_own_gpus_and_pipelines():
    sc = Scenario(framework="openrlhf", gpu="a100-80gb", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=2048, placement="auto")
    report = recommend(sc, time_limit_s=20)
    split = report.placement.best_of("split")
    assert split is not None and split.best.values["async_train"]
    assert split.best.stages and split.label.startswith("async:")
    spec = get_framework("openrlhf").cost_spec(load_model("qwen2.5-1.5b"), load_gpu("a100-80gb"))
    values = dict(split.best.values, colocate_all=True)  # async: colocate_all places the DeepSpeed models only
    assert spec.plan(values, "rollout").colocated is False


def test_openrlhf_async_tables_equal_the_cost_model():
    sc = Scenario(framework="openrlhf", gpu="a100-80gb", gpus=4, model="qwen2.5-1.5b", algorithm="grpo", n=4,
                  prompt_length=512, response_length=1024, fixed={"train.async_enable": True},
                  search={"train.colocate_all": [True, False], "rollout.batch_size": [32], "train.batch_size": [32],
                          "vllm.num_engines": [1, 2]})
    _, _, _, space, spec, terms, ruleset = prepare(sc)
    assert_tables_match_cost_model(space, spec, ruleset, configs=30, seed=3, label="openrlhf-async", terms=terms)


def test_a_sweep_varies_the_placement(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("framework: verl\ngpu: h100\ngpus: 8\nmodel: qwen2.5-1.5b\nalgorithm: grpo\nn: 8\n"
                    "prompt_length: 1024\nresponse_length: 2048\nplacement: [colocate, split]\ntime_limit_s: 20\n")
    out = tmp_path / "out.jsonl"
    res = run("sweep", str(grid), "--out", str(out))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["point"]["placement"] for r in rows} == {"colocate", "split"}
    split = next(r for r in rows if r["point"]["placement"] == "split")
    assert split["placement"]["winner"] and split["pipeline"]
    summary = run("sweep", "--summary", str(out))
    assert "split:" in summary.stdout


def test_the_published_comparison_table_is_current():
    """docs/async.md's table of our ranking against published runs is what the model predicts today (regenerate it
    with `python tests/async_evidence.py`); every compared config is valid under our rules."""
    import async_evidence as ev

    data = ev.rows()
    doc = (Path(__file__).resolve().parents[1] / "docs" / "async.md").read_text()
    assert marked(doc, ev.BEGIN, ev.END) == ev.table(data), "docs/async.md is stale: run python tests/async_evidence.py"
    # the ablation whose two configs are both split, we rank as published
    assert next(r for r in data if "staleness" in r["name"])["agree"]


def test_a_fully_async_scenario_splits_with_the_recipes_keys_and_entry_point():
    """A scenario with the recipe's keys stays the recipe: its layouts are written in its keys, run by its module."""
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="dapo", n=8,
                  prompt_length=1024, response_length=2048, placement="split",
                  fixed={"async_training.staleness_threshold": 0.5, "async_training.partial_rollout": True})
    report = recommend(sc, time_limit_s=20)
    best = report.best
    assert best.values["async_mode"] == 3 and "data.train_batch_size=0" in best.native
    assert any(a.startswith("async_training.trigger_parameter_sync_step=") for a in best.native)
    assert get_framework("verl").entry_point(best.values).endswith("fully_async_policy.fully_async_main")
    again = rb.check(best.native)
    assert again.valid and again.values["async_mode"] == 3, [v.message for v in again.errors]


def test_ms_swift_split_is_a_rollout_server_with_async_generate():
    """ms-swift's split: a `swift rollout` server on GPUs of its own (--vllm_mode server) and --async_generate, one
    batch ahead (rollout_mixin.py): the step is pipelined; Megatron GRPO has no async_generate, its server mode runs
    in turn."""
    sc = Scenario(framework="swift", gpu="a100-80gb", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=2048, placement="split")
    report = recommend(sc, time_limit_s=20)
    best = report.best
    assert best.values["vllm_server"] and best.values["async_generate"] and best.stages
    assert report.placement.winner.label.startswith("async:")
    assert "--async_generate true" in best.native
    assert rb.check(best.native, framework="swift").valid
    fw = get_framework("swift-megatron")
    (lay,) = fw.placements(Scenario(framework="swift-megatron", gpu="a100-80gb", gpus=8, model="qwen2.5-1.5b",
                                    placement="split"), [])
    assert "async_generate" not in lay.scenario.fixed and lay.scenario.fixed["vllm_mode"] == "server"


def test_the_placement_is_not_searched_key_by_key():
    out = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--search",
              "trainer.v1.trainer_mode=sync,separate_async")
    assert out.returncode == 2 and "--placement" in out.stdout + out.stderr


# ------------------------------------------------------------------------------------------ review findings
def test_placement_takes_the_time_objective_only():
    out = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--placement", "auto",
              "--objective", "gpus")
    assert out.returncode == 2 and "--objective time" in out.stdout + out.stderr


def test_odd_gpu_counts_search_batches_they_divide_and_colocate_answers_at_24():
    sc = Scenario(framework="verl", gpu="h100", gpus=24, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024)
    best = recommend(sc, time_limit_s=20).best
    assert best is not None and best.values["train_batch_size"] % 3 == 0
    assert best.samples == best.values["train_batch_size"] * best.values["n"]


def test_a_fixed_mode_that_contradicts_the_placement_is_an_input_error_and_auto_says_what_it_left_out():
    base = ["recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--time-limit", "20"]
    out = run(*base, "--placement", "split", "--set", "trainer.v1.trainer_mode=colocate_async")
    assert out.returncode == 2 and "separate_async" in out.stdout + out.stderr
    out = run(*base, "--placement", "auto", "--set", "trainer.v1.trainer_mode=colocate_async", "--json")
    data = json.loads(out.stdout)
    assert {o["placement"] for o in data["placement"]["options"]} == {"colocate"}
    assert any("no split layout was solved" in n for n in data["placement"]["notes"])
    out = run(*base, "--placement", "split", "--framework", "verl==0.8.0")
    assert out.returncode == 2 and "0.9.1" in out.stdout + out.stderr


def test_a_fixed_rollout_pool_keeps_its_layouts_and_fixed_keys_win():
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024, placement="split",
                  fixed={f"{AR}.rollout.n_gpus_per_node": 2, f"{AR}.rollout.nnodes": 1, f"{AR}.hybrid_engine": True})
    layouts = get_framework("verl").placements(sc, [])
    assert [lay.label for lay in layouts] == ["6 trainer (1x6) + 2 rollout (1x2) GPUs"]
    assert layouts[0].scenario.fixed[f"{AR}.hybrid_engine"] is True


def test_fix_keeps_the_fully_async_recipes_batch_as_its_keys_say():
    script = SCRIPTS / "verl" / "fully_async_dapo_7b_math_fsdp2_4_12.sh"
    rep = rb.fix(read_launch_script(script).args, framework="verl")
    changed = {k for k, _old, _new in rep.native_changes}
    assert "data.train_batch_size" not in changed and f"{AR}.actor.ppo_mini_batch_size" not in changed


def test_a_replica_larger_than_the_pool_is_an_error_even_with_the_hybrid_engine():
    """separate_async serves its generation from the standalone pool only (get_llm_client)."""
    broken = rules_broken(with_(SEPARATE, **{f"{AR}.rollout.tensor_model_parallel_size": 8}))
    assert "verl.async.replica_fits_rollout_pool" in broken


def test_check_on_a_split_without_gpus_says_what_it_did_not_check():
    report = rb.check(SEPARATE)
    assert any("need 8 GPUs" in n and "--gpus" in n for n in report.notes)
    assert not any("need" in n and "--gpus" in n for n in rb.check(SEPARATE, gpus=8).notes)


def test_recipe_exports_write_each_pool_key_once_and_colocate_async_no_pool():
    fw = get_framework("verl")
    sc = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024, placement="split",
                  fixed={"rollout.nnodes": 1, "rollout.n_gpus_per_node": 2})  # the one_step_off recipe
    best = recommend(sc, time_limit_s=20).best
    assert sum(a.startswith("rollout.nnodes=") for a in best.native) == 1
    coloc = solution_to_overrides(fw.to_values(fw.parse(with_(SEPARATE, **{"trainer.v1.trainer_mode":
                                                                           "colocate_async"}))[0], gpus=None, model=None))
    assert "trainer.v1.trainer_mode=colocate_async" in coloc
    assert not any("rollout.nnodes" in a or "checkpoint_engine" in a or "parameter_sync_step" in a for a in coloc)


def test_the_placement_error_is_the_published_comparisons():
    """placement_accuracy.yaml holds the median error of docs/async.md's colocated/split rows (regenerate both with
    `python tests/async_evidence.py`)."""
    import yaml

    import async_evidence as ev

    assert yaml.safe_load(ev.PLACEMENT_ACCURACY.read_text()) == ev.placement_error(ev.rows())


def test_every_placement_layout_trains_the_same_kept_batch():
    """The algorithm's batch is kept once for the whole job (16 GPUs, n 5: 1024 prompts, 256 per update), not per
    layout from each trainer pool's GPU count, so layouts are compared on the same training."""
    sc = Scenario(framework="verl", gpu="h100", gpus=16, model="qwen2.5-1.5b", algorithm="grpo", n=5,
                  prompt_length=1024, response_length=1024, placement="auto")
    report = recommend(sc, time_limit_s=20)
    batches = {(o.best.values["train_batch_size"], o.best.values["actor_mini"])
               for o in report.placement.options if o.best is not None}
    assert batches == {(1024, 256)} and report.batch_kept


def test_a_split_asked_of_a_framework_without_one_names_every_framework_that_has_one():
    """--placement split for slime named only "verl / openrlhf / swift / trl", though verl-megatron, swift-megatron,
    unsloth and skyrl model split layouts too; the list now comes from the frameworks that define them."""
    from rlbatch_solver.errors import InputError
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework="slime", gpu="h100", gpus=8, model="qwen2.5-7b", placement="split")
    try:
        get_framework("slime").placements(sc, [])
    except InputError as e:
        fix = e.fix
    else:
        raise AssertionError("slime has no split layouts: an input error was expected")
    for name in ("verl", "verl-megatron", "openrlhf", "swift", "swift-megatron", "trl", "unsloth", "skyrl"):
        assert f" {name} " in f" {fix.replace('/', ' ')} ", fix
    assert " slime " not in f" {fix} " and "easyr1" not in fix

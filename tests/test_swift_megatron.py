"""ms-swift 4.6.0, Megatron GRPO path (``megatron rlhf``): the published example scripts pass on the
GPUs they are written for, the runtime-only rule and megatron-core's layout checks fire with the
right stage, enumerate equals the checker, the CLI speaks ``megatron rlhf`` arguments."""

import json
from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.rules.base import Stage
from rlbatch_solver.frameworks.swift.rules_megatron import RULESET, VARIABLES
from rlbatch_solver.scenario import Scenario

from bruteforce import assert_enumerate_equals_checker
from clirun import run
from test_swift import rules_of, tokens

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "swift"
EXAMPLES = yaml.safe_load((DATA / "megatron_examples.yaml").read_text())


def check(flags, gpus=None, **kw):
    return rb.check(tokens(flags) if isinstance(flags, dict) else flags, framework="swift-megatron", gpus=gpus, **kw)


BASE_FLAGS = {"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "colocate"}


# ----------------------------------------------------------------------------- examples
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_published_examples_are_valid(name):
    ex = EXAMPLES[name]
    report = check(ex["flags"], gpus=ex["gpus"], model=ex.get("model"))
    assert report.valid and not report.violations, [(v.rule, v.message) for v in report.violations]


def test_dense_colocate_numbers_and_the_doc_only_note():
    """dense_colocate.sh: dp 8, generation 128*4 = 512, 64 prompts, 8 per DP rank, micro 4.

    The Megatron GRPO docs also ask global_batch_size / G / dp = 128/8/8 = 2 to be a multiple of
    micro_batch_size 4; no code checks it and the example runs, so nothing is reported."""
    report = check(EXAMPLES["megatron/grpo/dense_colocate"]["flags"], gpus=8)
    env = RULESET.full_env(report.values)
    assert (env["dp"], env["gen"], env["rollout_prompts"], env["prompts_per_dp"]) == (8, 512, 64, 8)
    assert env["global_batch_size"] // 8 // 8 % env["micro_batch_size"] != 0
    assert not report.violations


def test_runtime_rule_passes_argument_checks():
    flags = {**BASE_FLAGS, "tensor_model_parallel_size": 2, "micro_batch_size": 1, "num_generations": 3,
             "global_batch_size": 12}
    r = check(flags, model="qwen2.5-7b")
    assert rules_of(r) == {"swift_megatron.runtime.generation_divisible_by_world"}
    assert r.violations[0].stage == Stage.RUNTIME
    assert not [v for v in r.violations if v.stage == Stage.DRIVER]
    # 24 completions (steps_per_generation 2) cover the 8 ranks
    assert check({**flags, "steps_per_generation": 2}, model="qwen2.5-7b").valid


def test_megatron_core_layout_rules_need_the_model():
    moe = {**BASE_FLAGS, "tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2,
           "expert_model_parallel_size": 4, "global_batch_size": 8, "num_generations": 8}
    assert check(moe, model="qwen3-30b-a3b").valid
    # EP 3: 128 experts do not split, and 3*2 does not divide 8 ranks
    r = check({**moe, "expert_model_parallel_size": 3}, model="qwen3-30b-a3b")
    assert {"swift_megatron.mcore.experts_divisible_by_ep",
            "swift_megatron.mcore.world_divisible_by_expert_parallel"} <= rules_of(r)
    stages = {v.rule: v.stage for v in r.violations}
    assert stages["swift_megatron.mcore.experts_divisible_by_ep"] == Stage.WORKER_INIT
    assert stages["swift_megatron.mcore.world_divisible_by_expert_parallel"] == Stage.DRIVER
    # Qwen2.5-7B: 28 heads, 4 KV heads, 28 layers
    dense = {**BASE_FLAGS, "tensor_model_parallel_size": 8, "global_batch_size": 8, "num_generations": 8}
    # TP 8 is a multiple of the 4 query groups, but 28 heads do not split 8 ways
    assert rules_of(check(dense, model="qwen2.5-7b")) == {"swift_megatron.mcore.heads_divisible_by_tp"}
    assert check(dense).valid  # without a model the head counts are unknown
    tp7 = {**dense, "NPROC_PER_NODE": 7, "tensor_model_parallel_size": 7, "global_batch_size": 56}
    assert rules_of(check(tp7, model="qwen2.5-7b")) == {"swift_megatron.mcore.query_groups_vs_tp"}
    pp8 = {**BASE_FLAGS, "pipeline_model_parallel_size": 8, "global_batch_size": 8, "num_generations": 8}
    assert rules_of(check(pp8, model="qwen2.5-7b")) == {"swift_megatron.mcore.layers_divisible_by_pp"}


def test_uneven_pipeline_and_vpp():
    flags = {**BASE_FLAGS, "pipeline_model_parallel_size": 4, "global_batch_size": 16, "num_generations": 8,
             "beta": 0}
    # 28 layers over 4 stages: 7 each
    assert check(flags, model="qwen2.5-7b").valid
    # first 6, last 6: 16 middle layers over 2 stages
    uneven = {**flags, "decoder_first_pipeline_num_layers": 6, "decoder_last_pipeline_num_layers": 6}
    assert check(uneven, model="qwen2.5-7b").valid
    bad = {**uneven, "decoder_first_pipeline_num_layers": 5}
    assert rules_of(check(bad, model="qwen2.5-7b")) == {"swift_megatron.mcore.uneven_pp_layers"}
    # VPP 2 needs an even count per stage; 7 is odd
    assert rules_of(check({**flags, "virtual_pipeline_model_parallel_size": 7}, model="qwen2.5-7b")) == set()
    r = check({**flags, "virtual_pipeline_model_parallel_size": 2}, model="qwen2.5-7b")
    assert rules_of(r) == {"swift_megatron.mcore.stage_layers_divisible_by_vpp"}
    assert rules_of(check({**uneven, "virtual_pipeline_model_parallel_size": 2}, model="qwen2.5-7b")) == set()
    assert rules_of(check({**uneven, "virtual_pipeline_model_parallel_size": 4}, model="qwen2.5-7b")) \
        == {"swift_megatron.mcore.uneven_pp_vpp"}
    # first/last layers and VPP need PP > 1; VPP 1 means none
    one = {**BASE_FLAGS, "global_batch_size": 64, "num_generations": 8, "beta": 0}
    assert rules_of(check({**one, "decoder_first_pipeline_num_layers": 4})) == {
        "swift_megatron.args.first_last_layers_need_pp"}
    assert rules_of(check({**one, "virtual_pipeline_model_parallel_size": 2})) == {"swift_megatron.mcore.vpp_needs_pp"}
    assert check({**one, "virtual_pipeline_model_parallel_size": 1}).valid


def test_vpp_with_kl_fails_in_the_first_step():
    flags = {**BASE_FLAGS, "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2,
             "global_batch_size": 32, "num_generations": 8}
    r = check(flags)  # beta defaults to 0.04 for GRPO
    assert rules_of(r) == {"swift_megatron.step.vpp_needs_beta_zero"}
    assert r.violations[0].stage == Stage.FIRST_STEP
    assert check({**flags, "beta": 0.0}).valid


def test_unsupported_options_and_rollout():
    base = {**BASE_FLAGS, "global_batch_size": 64, "num_generations": 8}
    assert rules_of(check({**base, "num_iterations": 2})) == {"swift_megatron.args.num_iterations_unsupported"}
    assert rules_of(check({**base, "async_generate": True})) == {"swift_megatron.args.async_generate_unsupported"}
    assert rules_of(check({**base, "sync_ref_model": True})) == {"swift_megatron.args.sync_ref_model_unsupported"}
    assert rules_of(check({**base, "use_vllm": False, "vllm_mode": None})) == {
        "swift_megatron.args.use_vllm_required"}
    r = check({k: v for k, v in base.items() if k != "vllm_mode"})
    assert rules_of(r) == {"swift_megatron.rollout.vllm_mode_required"} and r.violations[0].stage == Stage.WORKER_INIT
    r = check({**base, "vllm_tensor_parallel_size": 3})
    assert rules_of(r) == {"swift.rollout.colocate_tp_divides_world"}
    real = {**base, "loss_type": "real", "micro_batch_size": 2}
    assert "swift_megatron.args.real_loss_micro_divisible_by_num_generations" in rules_of(check(real))


def test_eval_runtime_rules():
    flags = {**BASE_FLAGS, "global_batch_size": 32, "steps_per_generation": 2, "num_generations": 8,
             "split_dataset_ratio": 0.01}
    # training: 64 completions, 8 prompts, one per DP rank; eval: global 32 // dp 8 // G 8 = 0 prompts
    r = check(flags)
    assert rules_of(r) == {"swift_megatron.runtime.eval_rollout_prompts", "swift_megatron.runtime.eval_rollout_slice"}
    assert {v.stage for v in r.violations} == {Stage.RUNTIME}
    assert check({**flags, "global_batch_size": 64, "steps_per_generation": 1}).valid
    assert check({**flags, "num_generations_eval": 4}).valid
    assert check({**flags, "eval_iters": 0}).valid  # no eval


def test_one_generation_is_advice_only():
    r = check({**BASE_FLAGS, "global_batch_size": 16, "num_generations": 1})
    assert r.valid and rules_of(r) == {"swift_megatron.advice.num_generations_at_least_two"}
    assert check({**BASE_FLAGS, "global_batch_size": 16, "num_generations": 1, "teacher_model": "T"}).valid


@pytest.mark.parametrize("bad,field", [
    ({"global_batch_size": 0}, "global_batch_size"),
    ({"tensor_model_parallel_size": "two"}, "tensor_model_parallel_size"),
    ({"beta": "high"}, "beta"),
    ({"use_ray": True}, "use_ray"),
    ({"vllm_mode": "hybrid"}, "vllm_mode"),
])
def test_bad_input_names_the_field(bad, field):
    with pytest.raises(rb.InputError) as exc:
        check({**BASE_FLAGS, **bad})
    assert exc.value.field == field


# ----------------------------------------------------------------------------- solver
BASE = {name: [spec.default] for name, spec in VARIABLES.items() if spec.default is not None or spec.optional}
BASE.update({"num_heads": [28], "num_kv_heads": [4], "num_layers": [28], "num_experts": [0],
             "vllm_mode_given": [True], "kl_on": [False]})

SPACES = {
    "batch alignment": {
        "gpus_per_node": [2, 4, 8], "tp": [1, 2], "micro_batch_size": [1, 2, 3], "global_batch_size": [4, 8, 12, 16],
        "num_generations": [1, 2, 3, 4], "generation_batch_size": [None, 24, 32], "steps_per_generation": [None, 2],
    },
    "parallel layout": {
        "gpus_per_node": [4, 6, 8], "tp": [1, 2, 4], "pp": [1, 2, 4], "cp": [1, 2], "ep": [1, 2, 4],
        "num_experts": [0, 6], "vpp": [None, 2], "kl_on": [False, True], "global_batch_size": [16],
        "num_generations": [2],
    },
    "uneven pipeline": {
        "pp": [1, 2, 3, 4], "first_pp_layers": [None, 4, 6], "last_pp_layers": [None, 4, 14], "vpp": [None, 2],
        "num_layers": [28, 30], "gpus_per_node": [12], "global_batch_size": [24], "num_generations": [2],
    },
    "eval, rollout and options": {
        "gpus_per_node": [2, 4], "eval_on": [False, True], "num_generations_eval": [None, 1, 4],
        "global_batch_size": [8, 16], "num_generations": [2, 4], "vllm_server": [False, True],
        "server_host_given": [False, True], "vllm_tp": [1, 3], "cluster_num_gpus": [None, 4], "loss_real": [False, True],
        "num_iterations": [1, 2], "teacher": [False, True],
    },
}


@pytest.mark.parametrize("space_name", list(SPACES))
def test_enumerate_equals_checker(space_name):
    assert_enumerate_equals_checker(RULESET, {**BASE, **SPACES[space_name]})


def test_enumerate_scenario_round_trips():
    sc = Scenario(framework="swift-megatron", gpus=8, algorithm="gspo", n=8, model="qwen3-30b-a3b",
                  search={"global_batch_size": [32, 64], "micro_batch_size": [1, 2]})
    res = rb.enumerate(sc)
    assert res.complete and res.count > 0
    assert any(s["ep"] > 1 for s in res.solutions)  # MoE: expert parallel is searched
    for native in res.native[:40]:
        assert native[0] == "NPROC_PER_NODE=8" and "--importance_sampling_level sequence" in native
        assert rb.check(native, framework="swift-megatron", gpus=8, model="qwen3-30b-a3b").valid, native


# ----------------------------------------------------------------------------- CLI
GOOD = ["NPROC_PER_NODE=8", "megatron", "rlhf", "--rlhf_type", "grpo", "--tensor_model_parallel_size", "2",
        "--micro_batch_size", "1", "--global_batch_size", "16", "--num_generations", "4", "--use_vllm", "true",
        "--vllm_mode", "colocate"]


def test_cli_check_exit_codes():
    assert run("check", "--framework", "swift-megatron", "--", *GOOD).returncode == 0
    bad = GOOD[:-6] + ["--num_generations", "3", "--global_batch_size=12", "--use_vllm", "true", "--vllm_mode",
                       "colocate"]
    proc = run("check", "--framework", "swift-megatron", "--json", "--", *bad)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert [(v["rule"], v["stage"]) for v in data["violations"]] == [
        ("swift_megatron.runtime.generation_divisible_by_world", "runtime")]
    proc = run("check", "--framework", "swift-megatron", "--", *GOOD, "--use_ray", "true")
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].startswith("error: use_ray")


def test_cli_enumerate_exit_codes():
    proc = run("enumerate", "--framework", "swift-megatron", "--gpus", "4", "--n", "4", "--json",
               "--search", "global_batch_size=16,32")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["complete"] and lines[-1]["count"] == len(lines) - 1 > 0
    toks = [f"{k}={v}" if k.isupper() else f"--{k} {v}" for k, v in lines[0].items()]
    assert run("check", "--framework", "swift-megatron", "--", *toks).returncode == 0
    proc = run("enumerate", "--framework", "swift-megatron", "--gpus", "8", "--n", "3",
               "--set", "global_batch_size=12", "--set", "micro_batch_size=1", "--set", "tensor_model_parallel_size=2",
               "--set", "pipeline_model_parallel_size=1")
    assert proc.returncode == 1 and "swift_megatron" in proc.stdout
    proc = run("enumerate", "--framework", "swift-megatron", "--gpus", "0")
    assert proc.returncode == 2 and proc.stderr.startswith("error: gpus")


def test_rules_doc_is_in_sync():
    proc = run("rules", "--framework", "swift-megatron", "--markdown")
    assert proc.stdout == (ROOT / "docs" / "rules-swift-megatron.md").read_text()


def test_framework_names():
    assert get_framework("swift-megatron").version == "4.6.0"
    assert get_framework("Swift").name == "swift"


def test_recompute_modules_reach_the_memory_model():
    """--recompute_modules (MegatronArguments default ['core_attn'], copied into megatron-core's TransformerConfig by
    name): with ms-swift's default selective recompute, "moe" on a MoE model drops each MoE layer's block, and a name
    megatron-core does not know is refused."""
    flags = tokens(BASE_FLAGS) + ["--micro_batch_size", "2", "--expert_model_parallel_size", "8"]

    def update(*extra):
        r = check(flags + list(extra), model="qwen3-30b-a3b", gpu="h100")
        return r.memory.phases["actor_update"]["activations"]

    default = update()
    assert update("--recompute_modules", "core_attn") == default
    assert update("--recompute_modules", "core_attn", "moe") < 0.5 * default
    with pytest.raises(rb.InputError) as exc:
        update("--recompute_modules", "attention")
    assert exc.value.field == "recompute_modules"

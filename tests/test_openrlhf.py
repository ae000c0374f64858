"""OpenRLHF 0.11.2: the published launch scripts pass, known failures fail with the right rule,
bad input names the field, enumerate equals the checker, the CLI speaks train_ppo_ray flags."""

import json
from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.openrlhf.framework import LEGACY_FLAGS, config_to_values, normalize_flags
from rlbatch_solver.rules.base import Severity, Stage
from rlbatch_solver.frameworks.openrlhf.rules import RULESET, VARIABLES

from bruteforce import assert_enumerate_equals_checker
from clirun import run

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "openrlhf"
EXAMPLES = yaml.safe_load((DATA / "examples.yaml").read_text())
BROKEN = yaml.safe_load((DATA / "broken.yaml").read_text())


def tokens(flags: dict) -> list[str]:
    """Flag values as pasted from a launch script: ``--key value``, switches bare."""
    out: list[str] = []
    for key, value in flags.items():
        if value is True:
            out.append(f"--{key}")
        elif value is not False:
            out += [f"--{key}", str(value)]
    return out


def check(flags, gpus=None, **kw):
    return rb.check(tokens(flags) if isinstance(flags, dict) else flags, framework="openrlhf", gpus=gpus, **kw)


def rules_of(report, severity=None):
    return {v.rule for v in report.violations if severity is None or v.severity.value == severity}


# ----------------------------------------------------------------------------- examples
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_published_examples_are_valid(name):
    ex = EXAMPLES[name]
    report = check(ex["flags"], gpus=ex["gpus"])
    assert report.valid and not report.violations, [(v.rule, v.message) for v in report.violations]


@pytest.mark.parametrize("name", [n for n in EXAMPLES if EXAMPLES[n]["gpus"] > 4])
def test_examples_need_their_gpus(name):
    """The GPU budget is what the script is written for: one GPU fewer leaves Ray waiting."""
    ex = EXAMPLES[name]
    report = check(ex["flags"], gpus=ex["gpus"] - 1)
    assert rules_of(report) == {"openrlhf.ray.gpu_budget"}
    v = report.violations[0]
    assert v.stage == Stage.TRAINER_INIT and f"need {ex['gpus']} GPUs" in v.message


def test_examples_with_a_model_card():
    ex = EXAMPLES["train_ppo_ray_hybrid_engine"]
    assert check(ex["flags"], gpus=8, model="llama3.1-8b").valid
    # vLLM TP 3 does not divide Llama-3.1-8B's 32 heads (and 3 engines x 3 != 8 actor GPUs)
    bad = {**ex["flags"], "vllm.num_engines": 3, "vllm.tensor_parallel_size": 3}
    r = check(bad, gpus=9, model="llama3.1-8b")
    assert {"openrlhf.vllm.heads_divisible_by_tp", "openrlhf.colocate.vllm_matches_actor"} <= rules_of(r)
    long = {**ex["flags"], "data.max_len": 200_000}
    assert "openrlhf.vllm.max_len_le_positions" in rules_of(check(long, gpus=8, model="llama3.1-8b"))


# ----------------------------------------------------------------------------- known failures
@pytest.mark.parametrize("name", list(BROKEN))
def test_known_failures(name):
    case = BROKEN[name]
    report = rb.check(tokens(case["flags"]), framework=case.get("framework", "openrlhf"), gpus=case["gpus"])
    assert rules_of(report, "error") == set(case["errors"]), [(v.rule, v.message) for v in report.violations]
    assert report.valid == (not case["errors"])
    if "expect" in case:
        want = case["expect"]
        v = next(v for v in report.violations if v.rule == want["rule"])
        assert v.stage.value == want["stage"]
        assert want["message"] in v.message
        assert v.source


def test_32_vs_1_10_3_without_dynamic_batch_breaks_actor_too():
    flags = {k: v for k, v in BROKEN["grpo_3gpu"]["flags"].items() if k != "train.dynamic_batch_enable"}
    flags["ds.zero_stage"] = 2
    report = check(flags, gpus=4)
    assert {"openrlhf.deepspeed.actor_batch", "openrlhf.deepspeed.ref_batch"} <= rules_of(report, "error")
    msg = next(v.message for v in report.violations if v.rule == "openrlhf.deepspeed.actor_batch")
    assert "32 != 1 * 10 * 3" in msg


def test_ring_attention_multiplies_deepspeed_batch():
    """train_batch_size handed to DeepSpeed is train.batch_size*ring*tp; the world is all ranks."""
    flags = {"actor.num_gpus_per_node": 4, "ref.num_gpus_per_node": 4, "train.colocate_all": True,
             "vllm.num_engines": 4, "algo.advantage.estimator": "group_norm", "rollout.n_samples_per_prompt": 8,
             "reward.remote_url": "RM", "train.batch_size": 6, "train.micro_batch_size": 3, "rollout.batch_size": 96,
             "rollout.micro_batch_size": 4, "ds.ring_attn_size": 2}
    # dp = 2: 6 = 3 * 1 * 2 works, although 6 is not a multiple of micro*world = 12
    assert check(flags, gpus=4).valid
    r = check({**flags, "ds.ring_attn_size": 3}, gpus=4)  # 4 ranks do not form (dp, 3, 1)
    assert {"openrlhf.deepspeed.actor_mesh", "openrlhf.deepspeed.ref_mesh"} <= rules_of(r)
    tp = {**flags, "ds.ring_attn_size": 1, "ds.tensor_parallel_size": 2}
    assert check(tp, gpus=4).valid
    r = check({**tp, "ds.param_dtype": "fp16"}, gpus=4)
    assert rules_of(r) == {"openrlhf.deepspeed.tp_needs_bf16"}


def test_driver_rules():
    base = dict(EXAMPLES["train_dapo_ray_hybrid_engine"]["flags"])
    r = check({**base, "rollout.n_samples_per_prompt": 1}, gpus=8)
    assert {"openrlhf.driver.group_estimator_needs_n", "openrlhf.driver.dynamic_filtering_needs_n"} <= rules_of(r)
    assert all(v.stage == Stage.DRIVER for v in r.violations if v.rule.startswith("openrlhf.driver."))
    r = check({**base, "vllm.num_engines": 0}, gpus=8)
    assert "openrlhf.driver.packing_needs_vllm" in rules_of(r)
    r = check({**base, "rollout.vllm_generate_batch_size": 256}, gpus=8)
    assert rules_of(r) == {"openrlhf.driver.generate_batch_needs_async"}
    r = check({**base, "rollout.micro_batch_size": 256}, gpus=8)  # 8*128//256 = 4 batches < 8 ranks
    assert "openrlhf.driver.sample_batches_cover_actor" in rules_of(r)
    r = check({**base, "train.async_enable": True}, gpus=12)
    assert "openrlhf.driver.async_forbids_vllm_sleep" in rules_of(r)


def test_colocation_rules():
    base = dict(EXAMPLES["train_ppo_ray_slurm"]["flags"])
    r = check({**base, "ref.num_gpus_per_node": 2}, gpus=16)
    assert "openrlhf.colocate.actor_ref_same_size" in rules_of(r)
    r = check({**base, "reward.num_gpus_per_node": 2}, gpus=16)
    assert "openrlhf.colocate.critic_reward_same_size" in rules_of(r)
    hybrid = dict(EXAMPLES["train_ppo_ray_hybrid_engine"]["flags"])
    r = check({**hybrid, "vllm.num_engines": 2}, gpus=8)
    assert rules_of(r) == {"openrlhf.colocate.vllm_matches_actor"}
    r = check({**hybrid, "critic.num_nodes": 2}, gpus=8)
    assert "openrlhf.colocate.critic_fits_actor_bundles" in rules_of(r)
    # with async, colocate_all leaves vLLM on its own GPUs: no equality, but 8 more GPUs
    r = check({**hybrid, "train.async_enable": True, "vllm.enable_sleep": False, "vllm.num_engines": 2}, gpus=8)
    assert rules_of(r) == {"openrlhf.ray.gpu_budget"}
    assert check({**hybrid, "train.async_enable": True, "vllm.enable_sleep": False, "vllm.num_engines": 2},
                 gpus=12).valid


def test_seed_70b_layout_needs_more_than_48_gpus():
    """The seed's 48xA100 70B layout leaves ref and reward at their defaults (1 node x 8 GPUs each)."""
    seed = ("--actor_num_nodes 2 --actor_num_gpus_per_node 8 --critic_num_nodes 2 --critic_num_gpus_per_node 8 "
            "--vllm_num_engines 4 --vllm_tensor_parallel_size 4 --zero_stage 3")
    r = check([seed], gpus=48)
    assert "openrlhf.ray.gpu_budget" in rules_of(r, "error")
    msg = next(v.message for v in r.violations if v.rule == "openrlhf.ray.gpu_budget")
    assert "need 64 GPUs" in msg and "ref 8" in msg and "reward 8" in msg
    # a remote reward model and no KL term: valid from 0.6.2; the flags date it 0.4.0, whose reference model is
    # always built (8 more GPUs)
    remote = [seed + " --remote_rm_url RM --init_kl_coef 0"]
    assert rules_of(check(remote, gpus=48), "error") == {"openrlhf.ray.gpu_budget"}
    assert rb.check(remote, framework="openrlhf==0.6.2", gpus=48).valid


def test_seed_hybrid_engine_with_old_flag_names():
    """The seed's 8xA100 hybrid engine flags (underscore names): valid numbers, checked by 0.6.2 (the oldest release
    with those flags: --vllm_enable_sleep, --deepspeed_enable_sleep) with the upgrade note; named 0.11.2 (or
    0.10.4), an error: their train_ppo_ray.py's argparse stops at the first underscore name (unrecognized
    arguments), the run never starts."""
    seed = ("--actor_num_gpus_per_node 8 --critic_num_gpus_per_node 8 --ref_num_gpus_per_node 8 "
            "--reward_num_gpus_per_node 8 --vllm_num_engines 4 --vllm_tensor_parallel_size 2 --colocate_all_models "
            "--vllm_gpu_memory_utilization 0.5 --vllm_enable_sleep --deepspeed_enable_sleep")
    r = check([seed], gpus=8)
    assert r.valid and r.version == "0.6.2" and r.violations == []
    assert any("upgrade: on OpenRLHF 0.11.2 --actor_num_gpus_per_node" in n for n in r.notes)
    assert r.values["gmu_permille"] == 500 and r.values["colocate_all"] is True and r.values["vllm_num_engines"] == 4
    for release in ("0.11.2", "0.10.4"):
        r = rb.check([seed], framework=f"openrlhf=={release}", gpus=8)
        assert not r.valid, release
        assert [(v.rule, v.severity) for v in r.violations] == [("openrlhf.driver.legacy_flag_names", Severity.ERROR)]
        assert "argparse rejects them" in r.violations[0].message
    # the releases whose own flags these are accept them: no such rule there
    assert rb.check([seed], framework="openrlhf==0.9.10", gpus=8).valid


def test_old_and_new_names_give_the_same_values():
    for name, ex in EXAMPLES.items():
        new = config_to_values(ex["flags"], gpus=ex["gpus"])
        reverse = {v: k for k, v in LEGACY_FLAGS.items()}
        old_flags = {reverse.get(k, k): v for k, v in ex["flags"].items()}
        old = config_to_values(old_flags, gpus=ex["gpus"])
        assert old.pop("legacy_flag_names") and not new.pop("legacy_flag_names")
        assert old == new, name
    flat, legacy = normalize_flags({"prompt_max_len": 1024, "generate_max_len": 2048, "ref_reward_offload": True})
    assert legacy and flat == {"rollout.max_new_tokens": 2048, "data.max_len": 3072, "ref.offload": True,
                               "reward.offload": True}
    # either length flag alone: the other at its default of 0.4.0 to 0.8.11 (1024); --max_len, when given, is the total
    assert normalize_flags({"prompt_max_len": 256})[0] == {"rollout.max_new_tokens": 1024, "data.max_len": 1280}
    assert normalize_flags({"generate_max_len": 512})[0] == {"rollout.max_new_tokens": 512, "data.max_len": 1536}
    assert normalize_flags({"prompt_max_len": 256, "generate_max_len": 512, "max_len": 4096})[0] == {
        "rollout.max_new_tokens": 512, "data.max_len": 4096}


def test_yaml_config_nested_and_flat(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    flags = EXAMPLES["train_dapo_ray_hybrid_engine"]["flags"]
    tree: dict = {}
    for key, value in flags.items():
        node = tree
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    cfg.write_text(yaml.safe_dump(tree))
    assert rb.check(cfg, framework="openrlhf", gpus=8).valid
    flat = tmp_path / "flat.yaml"
    flat.write_text(yaml.safe_dump({**flags, "train.batch_size": 100}))
    assert "openrlhf.deepspeed.actor_batch" in rules_of(rb.check(flat, framework="openrlhf", gpus=8))


def test_every_rule_has_id_stage_source_and_numbers():
    for rule in RULESET.rules:
        assert rule.id.startswith("openrlhf.")
        assert rule.source and isinstance(rule.stage, Stage)
        reads_numbers = any(n not in VARIABLES or VARIABLES[n].kind == "int" for n in rule.reads()
                            if not n.endswith("_set"))
        if reads_numbers:  # switch-only rules have no numbers to show
            assert "{" in rule.message, rule.id
    stages = {r.stage for r in RULESET.rules}
    assert {Stage.DRIVER, Stage.TRAINER_INIT, Stage.WORKER_INIT, Stage.FIRST_STEP, Stage.RUNTIME} <= stages


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad,field", [
    (["--algo.advantage.estimator", "grpoo"], "algo.advantage.estimator"),
    (["--train.batch_size", "-8"], "train.batch_size"),
    (["--ring_attn_size", "0"], "ds.ring_attn_size"),
    (["--rollout.micro_batch_size", "0"], "rollout.micro_batch_size"),
    (["--train.batch_size", "$BS"], "train.batch_size"),
    (["--ds.zero_stage", "4"], "ds.zero_stage"),
    (["--vllm.gpu_memory_utilization", "1.5"], "vllm.gpu_memory_utilization"),
    (["--vllm.num_engines", "-1"], "vllm.num_engines"),
    (["--algo.kl.init_coef", "abc"], "algo.kl.init_coef"),
    (["--actor.num_gpus_per_node", "two"], "actor.num_gpus_per_node"),
    (["--ds.param_dtype", "fp32"], "ds.param_dtype"),
    # OpenRLHF's argparse reads the LoRA rank as an int (type=int): a word or a fraction stops it
    (["--ds.lora.rank", "abc"], "ds.lora.rank"),
    (["--ds.lora.rank", "8.5"], "ds.lora.rank"),
])
def test_bad_input_names_the_field(bad, field):
    with pytest.raises(rb.InputError) as exc:
        check(tokens(EXAMPLES["train_dapo_ray_hybrid_engine"]["flags"]) + bad, gpus=8)
    assert exc.value.field == field


def test_unknown_algorithm_and_bad_gpus():
    with pytest.raises(rb.InputError) as exc:
        rb.enumerate(rb.Scenario(framework="openrlhf", gpus=8, algorithm="grpoo"))
    assert exc.value.field == "algo"
    with pytest.raises(rb.InputError) as exc:
        check(["--train.batch_size", "8"], gpus=0)
    assert exc.value.field == "gpus"


# ----------------------------------------------------------------------------- brute force
BASE = {name: [spec.default] for name, spec in VARIABLES.items()
        if spec.default is not None or spec.optional}
BASE.update({"need_critic": [False], "need_ref": [True], "need_reward_model": [False], "group_estimator": [True],
             "num_heads": [12], "num_kv_heads": [4], "max_position_embeddings": [4096], "cluster_num_gpus": [8],
             "vllm_num_engines": [2], "vllm_tp": [2], "colocate_all": [True], "actor_gpus_per_node": [4],
             "ref_gpus_per_node": [4], "critic_gpus_per_node": [4], "reward_gpus_per_node": [4], "n": [4],
             "rollout_batch_size": [8], "train_batch_size": [8], "micro_rollout_batch_size": [2]})

SPACES = {
    "batch sizes": {
        "actor_gpus_per_node": [2, 3, 4], "ref_gpus_per_node": [2, 4], "vllm_num_engines": [1, 2],
        "train_batch_size": [4, 6, 8, 12], "micro_train_batch_size": [1, 2, 4], "n": [1, 2, 3],
        "rollout_batch_size": [1, 2, 4], "micro_rollout_batch_size": [1, 3, 8], "dynamic_batch": [False, True],
        "zero_stage": [2, 3],
    },
    "layout": {
        "colocate_all": [False, True], "colocate_actor_ref": [False, True], "colocate_critic_reward": [False, True],
        "async_train": [False, True], "need_critic": [False, True], "need_reward_model": [False, True],
        "need_ref": [False, True], "actor_gpus_per_node": [2, 4], "critic_gpus_per_node": [2, 4],
        "reward_gpus_per_node": [2, 4], "vllm_num_engines": [None, 0, 1, 2, 4], "vllm_tp": [1, 2],
        "cluster_num_gpus": [8, 12],
    },
    "parallel sizes": {
        "actor_nnodes": [1, 2], "actor_gpus_per_node": [2, 3, 4, 6], "ref_gpus_per_node": [2, 4, 6],
        "ring_attn_size": [1, 2, 3], "ds_tp": [1, 2], "train_batch_size": [6, 8, 12],
        "micro_train_batch_size": [1, 2], "colocate_all": [False, True], "zero_stage": [0, 3],
        "cluster_num_gpus": [None], "enable_ema": [False, True], "fp16": [False, True],
    },
    "switches": {
        "packing_samples": [False, True], "dynamic_batch": [False, True], "ring_attn_size": [1, 2],
        "vllm_num_engines": [None, 0, 2], "vllm_generate_batch_size": [None, 4, 8, 16], "async_train": [False, True],
        "partial_rollout": [False, True], "vllm_sleep": [False, True], "dynamic_filtering": [False, True],
        "group_estimator": [False, True], "n": [1, 2], "legacy_flag_names": [False, True],
        "need_reward_model": [False, True],
    },
    "critic and reward": {
        "need_critic": [False, True], "need_reward_model": [False, True], "critic_gpus_per_node": [2, 3, 4],
        "reward_gpus_per_node": [2, 3], "ring_attn_size": [1, 2], "train_batch_size": [2, 6, 8],
        "micro_rollout_batch_size": [1, 4, 16], "dynamic_batch": [False, True], "zero_stage": [2, 3],
        "colocate_all": [False, True], "colocate_critic_reward": [False, True], "cluster_num_gpus": [None],
    },
    "model limits": {
        "vllm_tp": [1, 2, 4], "vllm_num_engines": [1, 2, 4], "num_heads": [12, 14], "max_len": [2048, 8192],
        "max_position_embeddings": [4096, 32768], "actor_gpus_per_node": [2, 4, 8], "cluster_num_gpus": [8, 16],
        "colocate_all": [False, True],
    },
}


@pytest.mark.parametrize("space_name", list(SPACES))
def test_enumerate_equals_checker(space_name):
    domains = {k: v for k, v in {**BASE, **SPACES[space_name]}.items()
               if v != [None]}  # unknown: rules reading it are skipped
    assert_enumerate_equals_checker(RULESET, domains)


# ----------------------------------------------------------------------------- enumerate / export
@pytest.mark.parametrize("algo,gpus,nnodes", [("grpo", 8, 1), ("ppo", 8, 1), ("dapo", 4, 1), ("rloo", 16, 2),
                                              ("reinforce++", 6, 1)])
def test_enumerated_configs_pass_the_checker_and_read_back(algo, gpus, nnodes):
    sc = rb.Scenario(framework="openrlhf", gpus=gpus, nnodes=nnodes, algorithm=algo, model="qwen2.5-7b",
                     prompt_length=1024, response_length=2048)
    res = rb.enumerate(sc, limit=400, time_limit_s=30)
    assert res.count > 0
    fw = get_framework("openrlhf")
    for sol, native in zip(res.solutions[::7], res.native[::7]):
        assert fw.ruleset.check(sol).valid
        back = rb.check(native, framework="openrlhf", gpus=gpus, model="qwen2.5-7b")
        assert back.valid, (native, [v.message for v in back.violations])
        assert all(not a.startswith("--") or " " in a or a.count("--") == 1 for a in native)


def test_enumerate_covers_colocated_and_split_layouts():
    sc = rb.Scenario(framework="openrlhf", gpus=8, algorithm="grpo", n=8,
                     search={"train.batch_size": [128], "rollout.batch_size": [128],
                             "train.micro_batch_size": [4], "rollout.micro_batch_size": [16]})
    res = rb.enumerate(sc)
    assert res.complete and res.count > 0
    hybrid = [s for s in res.solutions if s["colocate_all"]]
    split = [s for s in res.solutions if not s["colocate_all"]]
    assert hybrid and split
    for s in hybrid:  # the hybrid engine: vLLM engines x TP = actor GPUs = all 8
        assert s["actor_gpus_per_node"] == 8 and s["vllm_num_engines"] * s["vllm_tp"] == 8
    for s in split:
        env = RULESET.full_env(s)
        assert env["gpus_needed"] == 8


def test_export_is_paste_ready():
    fw = get_framework("openrlhf")
    values = config_to_values(EXAMPLES["train_ppo_with_reward_fn"]["flags"], gpus=8)
    flags = fw.export(values)
    assert "--train.colocate_actor_ref" in flags and "--actor.num_gpus_per_node 2" in flags
    assert "--reward.num_gpus_per_node 8" not in flags  # the reward is remote: no reward group
    assert not any(f.endswith(" True") or f.endswith(" False") for f in flags)
    assert fw.assignment("colocate_all", True) == "--train.colocate_all"
    assert fw.assignment("gmu_permille", 600) == "--vllm.gpu_memory_utilization 0.6"


# ----------------------------------------------------------------------------- CLI
def test_cli_check_exit_codes():
    ex = EXAMPLES["train_dapo_ray_hybrid_engine"]
    ok = run("check", "--framework", "openrlhf", "--gpus", "8", "--", "python3", "-m", "openrlhf.cli.train_ppo_ray",
             *tokens(ex["flags"]))
    assert ok.returncode == 0, ok.stdout
    assert "openrlhf 0.11.2" in ok.stdout
    case = BROKEN["grpo_3gpu"]
    bad = run("check", "--framework", "openrlhf", "--gpus", "4", "--json", "--", *tokens(case["flags"]))
    assert bad.returncode == 1
    data = json.loads(bad.stdout)
    v = next(v for v in data["violations"] if v["rule"] == "openrlhf.deepspeed.ref_batch")
    assert v["stage"] == "worker_init" and "32 != 1 * 10 * 3" in v["message"]
    wrong = run("check", "--framework", "openrlhf", "--gpus", "8", "--", "--train.batch_size", "-4")
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: train.batch_size") and "Fix:" in wrong.stderr
    est = run("check", "--framework", "openrlhf", "--", "--algo.advantage.estimator", "grpo_x")
    assert est.returncode == 2 and est.stderr.startswith("error: algo.advantage.estimator")


def test_cli_enumerate_json():
    proc = run("enumerate", "--framework", "openrlhf", "--gpus", "8", "--algo", "grpo", "--n", "8",
               "--search", "train.batch_size=128,256", "--search", "rollout.batch_size=64,128",
               "--set", "train.micro_batch_size=4", "--set", "rollout.micro_batch_size=16", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    summary = lines[-1]
    assert summary["complete"] is True and summary["count"] == len(lines) - 1 > 0
    assert summary["framework"] == "openrlhf" and summary["rules_version"] == "0.11.2"
    for cfg in lines[:-1][::25]:
        back = [t for k, v in cfg.items() for t in ([f"--{k}"] if v is True else [f"--{k}", str(v)])]
        assert run("check", "--framework", "openrlhf", "--gpus", "8", "--", *back).returncode == 0


def test_cli_enumerate_table_and_infeasible():
    proc = run("enumerate", "--framework", "openrlhf", "--gpus", "8", "--algo", "ppo", "--show", "3")
    assert proc.returncode == 0 and "valid configs for openrlhf 0.11.2" in proc.stdout
    assert "--actor.num_gpus_per_node" in proc.stdout
    none = run("enumerate", "--framework", "openrlhf", "--gpus", "8", "--algo", "grpo", "--n", "1")
    assert none.returncode == 1 and "openrlhf.driver.group_estimator_needs_n" in none.stdout


def test_rules_doc_is_in_sync():
    proc = run("rules", "--framework", "openrlhf", "--markdown")
    assert proc.stdout == (ROOT / "docs" / "rules-openrlhf.md").read_text()


def test_idle_cluster_gpus_are_warned_and_counted_as_waste():
    """A layout that asks Ray for fewer GPUs than the cluster has runs, with the rest idle for the whole run: check
    warns with the numbers, and fix/recommend count the idle share as waste (solver/costs.py)."""
    from rlbatch_solver.frameworks.openrlhf.rules import RULESET as ORL
    from rlbatch_solver.launch_script import read_launch_script
    from rlbatch_solver.solver.costs import waste_of

    s = read_launch_script(ROOT / "tests/data/scripts/openrlhf/train_grpo_ray_hybrid_engine.sh")
    args = s.args + ["--rollout.n_samples_per_prompt", "4"]
    idle = rb.check(args, framework="openrlhf", gpus=16)
    [w] = [v for v in idle.violations if v.rule == "openrlhf.advice.gpus_idle"]
    assert "use 8 of the cluster's 16 GPUs: 8 stay idle" in w.message and "50%" in w.message
    assert waste_of(ORL, idle.values) == 500
    full = rb.check(args, framework="openrlhf", gpus=8)
    assert not [v for v in full.violations if v.rule == "openrlhf.advice.gpus_idle"]
    assert waste_of(ORL, full.values) == 0


def test_list_flag_survives_to_the_recommended_command(tmp_path):
    """OpenRLHF's --target_modules is nargs='*' (openrlhf/cli/train_ppo_ray.py): 'v_proj' was read as a stray token
    and the command recommend printed kept --target_modules q_proj alone."""
    script = tmp_path / "run.sh"
    script.write_text("python3 -m openrlhf.cli.train_ppo_ray --pretrain Qwen/Qwen2.5-7B-Instruct "
                      "--actor_num_gpus_per_node 8 --vllm_num_engines 4 --colocate_all_models --lora_rank 16 "
                      "--target_modules q_proj v_proj --micro_train_batch_size 2 --train_batch_size 128 "
                      "--rollout_batch_size 128 --n_samples_per_prompt 8 --micro_rollout_batch_size 4\n")
    checked = run("check", script, "--gpu", "h100", "--model", "qwen2.5-7b")
    assert "not key=value" not in checked.stdout + checked.stderr
    out = run("recommend", "--from", script, "--gpu", "h100", "--model", "qwen2.5-7b").stdout
    assert "--target_modules q_proj v_proj \\\n" in out


_QLORA = ["--train.batch_size", "128", "--train.micro_batch_size", "8", "--rollout.batch_size", "128",
          "--algo.advantage.estimator", "reinforce_baseline", "--algo.kl.init_coef", "0.01", "--train.colocate_all",
          "--vllm.num_engines", "8", "--vllm.gpu_memory_utilization", "0.5", "--ds.zero_stage", "2"]


def _phases(extra):
    return rb.check([*_QLORA, *extra], framework="openrlhf", gpus=8, model="qwen2.5-7b", gpu="a100-80gb").memory.phases


def test_lora_trains_the_adapter_states_only():
    """--ds.lora.rank (models/actor.py get_peft_model, all-linear by default) was priced as full-parameter training
    (138 GiB of offloaded actor optimizer states for an 8B LoRA): the actor's optimizer now holds the adapter's ZeRO-2
    states, its frozen base stays bf16."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.memory import deepspeed_states

    lora = load_model("qwen2.5-7b").lora_params(64)
    update = _phases(["--ds.lora.rank", "64"])["actor_update"]
    assert update["optimizer states (sharded)"] * 2**20 == pytest.approx(deepspeed_states(lora, 8, 2)[2], rel=1e-6)
    full = _phases([])["actor_update"]
    assert full["optimizer states (sharded)"] > 20 * update["optimizer states (sharded)"]


def test_4bit_loading_prices_every_deepspeed_model_at_nf4_and_leaves_vllm_in_bf16():
    """--ds.load_in_4bit (models/actor.py Actor.__init__ and models/model.py get_llm_for_sequence_regression:
    BitsAndBytesConfig nf4 with double quantization) loads the actor's base, the reference and the reward model at
    NF4_BYTES per decoder weight; the vLLM engines get no quantization (trainer/ray/vllm_engine.py) and keep bf16."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.costmodel.memory import model_consts

    mc = model_consts(load_model("qwen2.5-7b"))
    saved = (C.BF16 - C.NF4_BYTES) * (mc.params - mc.embed - mc.lm_head)
    bf16, nf4 = _phases(["--ds.lora.rank", "64"]), _phases(["--ds.lora.rank", "64", "--ds.load_in_4bit"])
    update, update4 = bf16["actor_update"], nf4["actor_update"]
    for term in ("params (sharded)", "ref params (resident)", "reward model params (resident)"):
        assert (update[term] - update4[term]) * 2**20 == pytest.approx(saved, rel=0.01), term
    engine = [k for k in bf16["rollout"] if k.startswith("vLLM weights")]
    assert engine and all(bf16["rollout"][k] == nf4["rollout"][k] for k in engine)


@pytest.mark.parametrize("flags, said", [
    (["--lora_rank", "64", "--load_in_4bit"], "the critic's LoRA and 4-bit base (--algo.advantage.estimator gae) is "
                                              "not modelled for OpenRLHF"),
    (["--ds.lora.rank", "16"], "the critic's LoRA (--algo.advantage.estimator gae) is not modelled for OpenRLHF"),
    (["--ds.load_in_4bit"], "--ds.load_in_4bit without LoRA: a 4-bit model trained in full is not modelled"),
    (["--ds.lora.rank", "16", "--algo.advantage.estimator", "reinforce_baseline"], None),
    (["--lora_rank", "0"], None)])
def test_what_of_lora_and_4bit_is_not_priced_is_said(flags, said):
    """The critic (gae, the default estimator) gets the actor's LoRA and 4-bit base (trainer/ray/ppo_critic.py) but is
    priced as a full bf16 model; a 4-bit model without LoRA is priced in bf16: each said. The flags stay accepted."""
    res = run("check", "--framework", "openrlhf", "--gpus", "8", "--", "--train_batch_size", "128",
              "--micro_train_batch_size", "8", *flags)
    text = " ".join((res.stdout + res.stderr).split())
    assert "unknown_key" not in text
    if said:
        assert said in text, text
    else:
        assert "not modelled for OpenRLHF" not in text


@pytest.mark.parametrize("version", ["0.4.0", "0.8.11", "0.11.2"])
def test_4bit_loading_with_vllm_engines_stops_at_the_first_weight_sync(version):
    """OpenRLHF #1150 (GRPO with --load_in_4bit, 1 vLLM engine): "AssertionError: mismatch dtype: src torch.uint8, dst
    torch.bfloat16". _broadcast_to_vllm sends param.dtype, and WorkerWrap.update_weight asserts the engine's dtype
    (read in the 0.4.0.post2, 0.5.9, 0.6.2, 0.7.5, 0.8.11 and 0.11.2 wheels); the flag itself stays accepted, and
    without engines (0.4.0's own generate) nothing is sent."""
    rid = "openrlhf.vllm.load_in_4bit_weight_sync"
    engines = "vllm.num_engines" if version == "0.11.2" else "vllm_num_engines"
    four = "ds.load_in_4bit" if version == "0.11.2" else "load_in_4bit"
    flags = {engines: 1, four: True}
    report = rb.check(flags, framework=f"openrlhf=={version}", gpus=8)
    assert rid in {v.rule for v in report.violations}
    assert rid not in {v.rule for v in rb.check({engines: 1}, framework=f"openrlhf=={version}", gpus=8).violations}
    if version == "0.4.0":
        quiet = rb.check({engines: 0, four: True}, framework="openrlhf==0.4.0", gpus=8)
        assert rid not in {v.rule for v in quiet.violations}


@pytest.mark.parametrize("release,flag", [("openrlhf", "ds.lora.rank"), ("openrlhf==0.8.11", "lora_rank")])
def test_fix_writes_its_lora_way_out_in_the_releases_flag(release, flag):
    # the LoRA rank is a cost input no rule reads: fix's "LoRA instead of full fine-tuning" way out wrote it with
    # a rule variable's key and stopped with a KeyError; it is --ds.lora.rank from 0.10.2, --lora_rank before
    from rlbatch_solver.commands.fix_report import diff_rows
    from rlbatch_solver.solver.repair import Change

    fw = get_framework(release)
    assert "lora_rank" not in fw.ruleset.variables
    native, diff, _ = diff_rows(fw, [Change("lora_rank", 0, 16)])
    assert native == [(flag, 0, 16)] and diff[0][2] == f"--{flag} 16"


@pytest.mark.parametrize("release", ["openrlhf==0.5.9", "openrlhf==0.6.2"])
def test_fix_compiles_the_engines_dividing_the_actor_with_no_engine_searched(release):
    # _validate_args's actor_world_size % vllm_num_engines: the search spans 0 engines (no vLLM), and fix stopped with
    # a CompileError (divisor engines may be 0) on the releases whose check is one-sided
    out = run("fix", "-f", release, "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-7b", "--time-limit", "0.3",
              "--", "--train_batch_size", "64", "--rollout_batch_size", "64", "--micro_train_batch_size", "4",
              "--n_samples_per_prompt", "8")
    assert out.returncode in (0, 1), out.stdout


def test_critic_value_forward_runs_with_the_experience_forwards():
    """make_experience (trainer/ppo_utils/experience_maker.py) dispatches the actor's log-prob, the critic's value
    and the reference's forwards as Ray calls and waits on one before the next only where it shares GPUs, in the
    release's order (cost.py ``concurrency``): the value forward is a phase of its own beside the other two. Pinned
    on the OpenRLHF benchmark's Ray row (Llama-2-7B on 8 A800s, reference 1 : reward 1 : actor 4 : critic 2 GPUs;
    measured/points.yaml), whose derived forwards take 29.9 s (actor's log-prob on its 4 GPUs), 58.8 s (critic's
    value on 2) and 119.6 s (reference on 1; 29.9 on the actor's GPUs with --colocate_actor_ref): the experience
    forwards' share of the step, by release and flags."""
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.efficiency import DERIVED_EFFICIENCY
    from rlbatch_solver.costmodel.phase import Phase as P
    from rlbatch_solver.costmodel.tables import phases_seconds

    points = yaml.safe_load((Path(__file__).parent / "data" / "measured" / "points.yaml").read_text())
    point = next(p for p in points if p["name"] == "openrlhf_bench_llama2_7b_ray_nonvllm_8xa800")
    forwards = (P.OLD_LOG_PROB, P.CRITIC_VALUES, P.REF)

    def share(release, *flags):
        run = make_run(f"openrlhf=={release}", point["args"] + list(flags), gpu=point["gpu"], model=point["model"],
                       gpus=point["gpus"])
        s = run.predict(DERIVED_EFFICIENCY).seconds
        return [round(s[p], 1) for p in forwards], round(phases_seconds(run.spec, run.values, s, forwards), 1)

    ar, cr = "--colocate_actor_ref", "--colocate_critic_reward"
    assert share("0.4.0") == ([29.9, 58.8, 119.6], 119.6)  # all three side by side
    assert share("0.4.0", ar)[0] == [29.9, 58.8, 29.9]
    # 0.4.0: reference and critic dispatched, the colocated one waited on, then the actor's own forward
    assert share("0.4.0", ar)[1] == 59.8  # the reference, then the actor's, beside the critic's
    assert share("0.4.0", cr)[1] == 119.6  # the critic's, then the actor's, beside the reference's
    assert share("0.4.0", ar, cr)[1] == 88.7  # the critic's beside the reference's, then the actor's
    # 0.6.2: the reference first (waited on with colocate_actor_ref), then the critic's, then the actor's
    assert share("0.6.2", ar)[1] == 88.7
    assert share("0.6.2", cr)[1] == 119.6
    assert share("0.6.2", ar, cr)[1] == 118.6  # one after another
    # 0.7.5 on: the actor's, the critic's, the reference's as remote calls
    assert share("0.7.5", ar)[1] == 88.7  # the actor's, then the critic's beside the reference's
    assert share("0.7.5", cr)[1] == 178.3  # the critic's then the reference's, beside the actor's
    assert share("0.7.5", ar, cr)[1] == 118.6
    # one set of GPUs: every forward one after another
    assert share("0.7.5", "--colocate_all_models")[1] == pytest.approx(sum(share("0.7.5", "--colocate_all_models")[0]),
                                                                        abs=0.11)

"""``fix`` for every framework: known-broken configs are repaired to configs that pass the checker
once pasted back, changing only movable keys; the repair is minimal by brute force on small spaces;
infeasible repairs name a minimal conflict with numbers and relaxations that were solved; the CLI's
exit codes (0 fixed, 1 no repair with the conflict printed, 2 bad input naming the field)."""

import itertools
import json
import shlex
from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb
from rlbatch_solver.api import fix
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.repair_policies import policy_for
from rlbatch_solver.solver.model import build_model
from rlbatch_solver.solver.repair import _warnings_cost, candidate_cost, repair

import test_openrlhf
from clirun import run
import test_swift

DATA = Path(__file__).resolve().parent / "data"
SWIFT_BROKEN = yaml.safe_load((DATA / "swift" / "broken.yaml").read_text())
OPENRLHF_BROKEN = yaml.safe_load((DATA / "openrlhf" / "broken.yaml").read_text())
VERL_MEGATRON = [c for c in yaml.safe_load((DATA / "verl" / "megatron_examples.yaml").read_text())
                 if c["expect"] != "valid"]
FRAMEWORKS = ("verl", "verl-megatron", "swift", "swift-megatron", "openrlhf")


def pasted_over(framework, tokens, report):
    """The user's config with the repair's arguments pasted over it (dropped keys removed)."""
    fw = get_framework(framework)
    flat, _ = fw.parse(list(tokens))
    given = [a for a in report.native_after if not a.startswith("(")]
    new, _ = fw.parse(shlex.split(" ".join(given)))
    flat.update(new)
    for key, _, new_arg in report.diff:
        if new_arg.startswith("("):  # (drop --key): the framework's default / unset
            for k in (key, f"--{key}"):
                flat.pop(k, None)
    return flat


def assert_repaired(framework, tokens, report, gpus=None, model=None):
    assert report.after is not None, (report.status, report.conflict_text, report.relaxations)
    fw = get_framework(framework)
    policy = policy_for(fw.name, fw.ruleset, report.before)
    movable = set(policy.rules) | set(policy.memory)
    assert {c.name for c in report.changes} <= movable - set(policy.algorithm) - set(policy.hardware)
    after = rb.check(pasted_over(framework, tokens, report), framework=framework, gpus=gpus, model=model)
    assert after.valid, [v.message for v in after.violations if v.severity.value == "error"]
    # only what it must: every changed key is read by a rule the config broke, and few keys change
    broken = {v.rule for v in report.before_violations}
    assert 0 < len(report.diff) <= 2 * len(broken)
    assert any(report.satisfies.get(k) for k, _, _ in report.diff), report.satisfies


# ----------------------------------------------------------------------------- known-broken configs
@pytest.mark.parametrize("name", [n for n, ex in SWIFT_BROKEN.items() if ex["errors"] and n != "hf_one_generation"])
def test_swift_known_failures_are_repaired(name):
    ex = SWIFT_BROKEN[name]
    fw = ex.get("framework", "swift")
    tokens = test_swift.tokens(ex["flags"])
    r = fix(tokens, framework=fw, gpus=ex.get("gpus"), model=ex.get("model"))
    assert r.proven
    assert_repaired(fw, tokens, r, gpus=ex.get("gpus"), model=ex.get("model"))
    assert all(a.startswith(("--", "NPROC_PER_NODE=", "NNODES=", "(")) for a in r.native_after)  # swift syntax


@pytest.mark.parametrize("name", [n for n, ex in OPENRLHF_BROKEN.items() if ex["errors"]])
def test_openrlhf_known_failures_are_repaired(name):
    ex = OPENRLHF_BROKEN[name]
    tokens = test_openrlhf.tokens(ex["flags"])
    r = fix(tokens, framework="openrlhf", gpus=ex.get("gpus"), model=ex.get("model"))
    assert r.proven
    assert_repaired("openrlhf", tokens, r, gpus=ex.get("gpus"), model=ex.get("model"))
    # in the names of the release the flags date the config to: dotted from 0.10.2 on, underscore before
    # (issue_346's 2024 flags: 0.8.11, the newest release that reads them all)
    dotted = r.version.split("==")[-1] in ("0.11.2", "0.10.4")
    assert all((k.count(".") >= 1) == dotted for k, _, _ in r.diff), (r.version, r.diff)


def test_openrlhf_deepspeed_32_vs_1_10_3_changes_the_train_batch_only():
    ex = OPENRLHF_BROKEN["grpo_3gpu"]
    r = fix(test_openrlhf.tokens(ex["flags"]), framework="openrlhf", gpus=ex["gpus"])
    assert [k for k, _, _ in r.diff] == ["train.batch_size"]
    assert r.after["train_batch_size"] % 3 == 0  # the user's own fix was 30
    assert "openrlhf.deepspeed.ref_batch" in r.satisfies["train.batch_size"]


@pytest.mark.parametrize("framework", ["verl", "verl-megatron"])
@pytest.mark.parametrize("case", VERL_MEGATRON, ids=[c["name"] for c in VERL_MEGATRON])
def test_verl_megatron_known_failures_are_repaired(case, framework):
    # a generous limit: the proof takes 2-4 s, more on a loaded machine (the solve stops when it is proven)
    r = fix(case["overrides"], framework=framework, model=case["model"], time_limit_s=60)
    assert r.status == "optimal"
    assert_repaired(framework, case["overrides"], r, model=case["model"])
    assert all("=" in a for a in r.native_after)  # Hydra overrides
    if case["name"] == "ppo_qwen2_7b_math_gsm8k_megatron":  # the critic copies the actor's layout (v0.9 examples)
        assert {k for k, _, _ in r.diff} == {"critic.megatron.tensor_model_parallel_size",
                                             "critic.megatron.pipeline_model_parallel_size"}


def test_every_framework_has_an_explicit_policy_that_never_moves_algorithm_or_gpus():
    for name in FRAMEWORKS:
        fw = get_framework(name)
        policy = policy_for(name, fw.ruleset)
        assert policy is fw.policy
        assert set(policy.rules) <= set(fw.ruleset.variables), name
        assert not set(policy.rules) & {"n", "num_generations", "gpus_per_node", "nnodes", "cluster_num_gpus",
                                        "actor_gpus_per_node", "actor_nnodes"}, name
        assert policy.algorithm and policy.hardware, name
    with pytest.raises(Exception):
        policy_for("no-such-framework")


def test_the_gpu_counts_fix_tries_stay_bounded_for_a_huge_count():
    # NPROC_PER_NODE=999999999: the other counts tried when nothing fits were every count up to it (a list of a
    # billion; fix did not end); they stop at the searched keys' bound, the current count first
    from rlbatch_solver.frameworks.repair_policies import DIRECT_SEARCH_MAX_VALUES, hardware_candidates

    policy = get_framework("swift").policy
    tried = hardware_candidates(policy, {"gpus_per_node": 999_999_999, "nnodes": 10**9, "cluster_num_gpus": 8})
    assert tried["gpus_per_node"][0] == 999_999_999 and len(tried["gpus_per_node"]) == DIRECT_SEARCH_MAX_VALUES + 1
    assert len(tried["nnodes"]) == DIRECT_SEARCH_MAX_VALUES + 1
    assert tried["cluster_num_gpus"] == [8, *range(1, 8), *range(9, 33)]  # a usual count: fewer and up to 4x, as before
    out = run("fix", "-f", "swift", "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-7b", "--time-limit", "0.3",
              "--", "NPROC_PER_NODE=999999999", "swift", "rlhf", "--rlhf_type", "grpo",
              "--per_device_train_batch_size", "4", "--num_generations", "8")
    assert out.returncode in (1, 2), out.stdout


# ----------------------------------------------------------------------------- hardware()
@pytest.mark.parametrize("framework,tokens,gpus,total", [
    ("verl", ["trainer.n_gpus_per_node=4", "trainer.nnodes=2"], None, 8),
    ("verl-megatron", ["trainer.n_gpus_per_node=8", "trainer.nnodes=2", "model_engine=megatron"], None, 16),
    ("swift", ["NPROC_PER_NODE=4", "NNODES=2", "--rlhf_type", "grpo"], None, 8),
    ("swift", ["NPROC_PER_NODE=6", "--use_vllm", "true", "--vllm_mode", "server", "--vllm_server_host", "h"], 8, 8),
    ("swift-megatron", ["NPROC_PER_NODE=8", "--use_vllm", "true", "--vllm_mode", "colocate"], None, 8),
    ("openrlhf", ["--actor.num_gpus_per_node", "4", "--ref.num_gpus_per_node", "2", "--vllm.num_engines", "2",
                  "--algo.advantage.estimator", "group_norm", "--reward.remote_url", "http://rm"], None, 8),
    ("openrlhf", ["--actor.num_gpus_per_node", "4", "--vllm.num_engines", "2"], 12, 12),
])
def test_hardware_is_the_gpu_count_of_the_config(framework, tokens, gpus, total):
    fw = get_framework(framework)
    flat, _ = fw.parse(tokens)
    assert fw.hardware(fw.to_values(flat, gpus=gpus, model=None))[0] == total


# ----------------------------------------------------------------------------- minimal by brute force
def brute_nearest(ruleset, domains, current, ranks):
    names = [n for n, d in domains.items() if len(d) > 1]
    best = None
    for combo in itertools.product(*(domains[n] for n in names)):
        cand = dict(current, **dict(zip(names, combo)))
        if ruleset.check(cand).valid:  # the full cost: changes, waste and the advice warnings it breaks
            c = candidate_cost(ruleset, current, cand, ranks)
            best = c if best is None else min(best, c)
    return best


SMALL_SPACES = {
    "swift": (["NPROC_PER_NODE=8", "--num_generations", "6", "--per_device_train_batch_size", "3",
               "--generation_batch_size", "40", "--use_vllm", "true", "--vllm_mode", "colocate",
               "--vllm_tensor_parallel_size", "3"],
              {"per_device_train_batch_size": [1, 2, 3, 4, 6], "generation_batch_size": [None, 24, 40, 48, 96],
               "steps_per_generation": [None, 1, 2, 3], "vllm_tp": [1, 2, 3, 4, 8]}),
    "swift-megatron": (["NPROC_PER_NODE=8", "--num_generations", "3", "--global_batch_size", "12",
                        "--micro_batch_size", "2", "--tensor_model_parallel_size", "3", "--use_vllm", "true",
                        "--vllm_mode", "colocate"],
                       {"micro_batch_size": [1, 2, 3, 4], "global_batch_size": [6, 12, 16, 24, 48],
                        "steps_per_generation": [None, 1, 2, 4], "tp": [1, 2, 3, 4], "pp": [1, 2]}),
    "openrlhf": (test_openrlhf.tokens(OPENRLHF_BROKEN["grpo_3gpu"]["flags"]),
                 {"train_batch_size": [16, 30, 32, 33, 48], "micro_train_batch_size": [1, 2, 4],
                  "ring_attn_size": [1, 3], "rollout_batch_size": [12, 15, 16], "ref_gpus_per_node": [1, 2, 3]}),
}


@pytest.mark.parametrize("framework", list(SMALL_SPACES))
def test_repair_is_minimal_by_brute_force_for_each_framework(framework):
    tokens, small = SMALL_SPACES[framework]
    fw = get_framework(framework)
    flat, _ = fw.parse(tokens)
    current = fw.to_values(flat, gpus=4 if framework == "openrlhf" else None, model=None)
    policy = policy_for(framework, fw.ruleset, current)
    domains = {n: [v] for n, v in current.items()}
    for n, vals in small.items():
        domains[n] = [current[n]] + [v for v in vals if v != current[n]]
    res = repair(fw.ruleset, domains, current, ranks=policy.ranks, time_limit_s=20)
    expected = brute_nearest(fw.ruleset, domains, current, policy.ranks)
    assert expected is not None and res.proven
    assert res.objective == expected == candidate_cost(fw.ruleset, current, res.solution, policy.ranks)
    assert fw.ruleset.check(res.solution).valid


def test_the_advice_warnings_cost_adds_no_variable_or_constraint():
    # a broken advice warning costs through its rule's literal negated (an objective term of its own), not through a
    # new Boolean tied to it by two clauses; the brute-force test above holds the costs equal
    tokens, small = SMALL_SPACES["openrlhf"]
    fw = get_framework("openrlhf")
    current = fw.to_values(fw.parse(tokens)[0], gpus=4, model=None)
    domains = {n: [v] for n, v in current.items()}
    domains.update({n: [current[n]] + [v for v in vals if v != current[n]] for n, vals in small.items()})
    built = build_model(fw.ruleset, domains)
    assert any(r.severity.value == "warning" and not isinstance(built.rule_lits[r.id], bool) for r in built.rules)
    proto = built.model.Proto()
    before = (len(proto.variables), len(proto.constraints))
    _warnings_cost(built)
    assert (len(proto.variables), len(proto.constraints)) == before


# ----------------------------------------------------------------------------- infeasible: conflict + relaxations
AR = "actor_rollout_ref"
MEGATRON_TP3 = ["model_engine=megatron", "trainer.n_gpus_per_node=8", "data.train_batch_size=64",
                f"{AR}.rollout.n=4", f"{AR}.actor.ppo_mini_batch_size=16", f"{AR}.actor.ppo_micro_batch_size_per_gpu=2",
                f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=2", f"{AR}.actor.megatron.tensor_model_parallel_size=3",
                "algorithm.adv_estimator=grpo"]
INFEASIBLE = {
    "verl": (["trainer.n_gpus_per_node=4", "data.train_batch_size=65", f"{AR}.rollout.n=1",
              f"{AR}.actor.ppo_mini_batch_size=13", f"{AR}.actor.ppo_micro_batch_size_per_gpu=1",
              f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=1", "algorithm.adv_estimator=grpo"],
             None, ["data.train_batch_size", f"{AR}.actor.use_dynamic_bsz"],
             "verl.driver.batch_divisible_by_gpus", {"unpin", "algorithm", "gpus"}),
    "verl-megatron": (MEGATRON_TP3, None, [f"{AR}.actor.megatron.tensor_model_parallel_size"],
                      "verl.megatron.driver_gpus_divisible_by_model_parallel", {"unpin", "gpus"}),
    "swift": (test_swift.tokens(SWIFT_BROKEN["hf_one_generation"]["flags"]), SWIFT_BROKEN["hf_one_generation"]["gpus"],
              [], "swift.args.num_generations_at_least_two", {"algorithm"}),
    "swift-megatron": (["NPROC_PER_NODE=8", "--tensor_model_parallel_size", "3", "--use_vllm", "true",
                        "--vllm_mode", "colocate"], None, ["--tensor_model_parallel_size"],
                       "swift_megatron.mcore.world_divisible_by_model_parallel", {"unpin", "gpus"}),
    "openrlhf": (test_openrlhf.tokens(OPENRLHF_BROKEN["grpo_3gpu"]["flags"]), 4,
                 ["train.batch_size", "ds.ring_attn_size", "ds.tensor_parallel_size", "train.micro_batch_size",
                  "train.colocate_actor_ref"],
                 "openrlhf.deepspeed.ref_batch", {"unpin", "gpus"}),
}


@pytest.mark.parametrize("framework", list(INFEASIBLE))
def test_infeasible_repair_names_a_minimal_conflict_and_solved_relaxations(framework):
    tokens, gpus, keep, rule, feasible_kinds = INFEASIBLE[framework]
    r = fix(tokens, framework=framework, gpus=gpus, keep=keep)
    assert r.after is None and r.status == "infeasible"
    assert rule in r.conflict.ids and r.conflict.proven_minimal
    texts = dict(r.conflict_text)
    assert any(ch.isdigit() for ch in texts[rule]) and "{" not in texts[rule]  # in words, with numbers
    assert r.pinned_in_conflict
    worked = {t["kind"] for t in r.relaxations_tried if t["feasible"]}
    assert feasible_kinds <= worked, r.relaxations_tried
    assert r.relaxations and all(isinstance(t, str) for t in r.relaxations)
    for t in r.relaxations_tried:  # each feasible relaxation says what to set
        assert not t["feasible"] or t["changes"] or "enough" in t["text"]


def test_memory_conflict_offers_a_bigger_gpu_and_shorter_responses():
    cfg = ["trainer.n_gpus_per_node=1", "data.train_batch_size=8", f"{AR}.rollout.n=2",
           f"{AR}.actor.ppo_mini_batch_size=8", f"{AR}.actor.ppo_micro_batch_size_per_gpu=1",
           f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=1", f"{AR}.rollout.tensor_model_parallel_size=1",
           "data.max_prompt_length=512", "data.max_response_length=1024", "algorithm.adv_estimator=grpo"]
    r = fix(cfg, model="qwen2.5-7b", gpu="rtx4090", keep=["trainer.n_gpus_per_node"], time_limit_s=5)
    assert r.after is None
    assert any(".memory." in i for i in r.conflict.ids)
    kinds = {t["kind"] for t in r.relaxations_tried}
    assert {"bigger_gpu", "shorter"} <= kinds
    assert any("GPU" in t or "gpu" in t for t in r.relaxations)


def test_more_gpus_are_asked_of_the_node_before_another_node():
    # a full fine-tune of 1.5B on one 4090: one more GPU in the box shards it as well as a second node would
    cfg = ["trainer.n_gpus_per_node=1", "trainer.nnodes=1", "data.train_batch_size=32", f"{AR}.rollout.n=5",
           f"{AR}.actor.ppo_mini_batch_size=16", f"{AR}.actor.ppo_micro_batch_size_per_gpu=4",
           f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=8", f"{AR}.rollout.tensor_model_parallel_size=1",
           f"{AR}.actor.fsdp_config.param_offload=True", f"{AR}.actor.fsdp_config.optimizer_offload=True",
           "data.max_prompt_length=512", "data.max_response_length=1024", "algorithm.adv_estimator=grpo"]
    r = fix(cfg, model="qwen2.5-1.5b", gpu="rtx4090", time_limit_s=10)
    gpus = [t for t in r.relaxations_tried if t["kind"] == "gpus"]
    assert len(gpus) == 1 and gpus[0]["feasible"], r.relaxations_tried
    assert gpus[0]["changes"] == ["trainer.n_gpus_per_node=2"], gpus


# ----------------------------------------------------------------------------- CLI
def run_cli(*args):
    return run(*args)


def test_cli_fix_for_flag_frameworks():
    ex = SWIFT_BROKEN["hf_generation_batch_500"]
    p = run_cli("fix", "--framework", "swift", "--gpus", str(ex["gpus"]), "--", *test_swift.tokens(ex["flags"]))
    assert p.returncode == 0, p.stderr
    assert "- --generation_batch_size 500" in p.stdout and "+ --generation_batch_size" in p.stdout
    ex = OPENRLHF_BROKEN["grpo_3gpu"]
    p = run_cli("fix", "--framework", "openrlhf", "--gpus", "4", "--json", "--", *test_openrlhf.tokens(ex["flags"]))
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["changes"][0]["key"] == "train.batch_size" and data["changes"][0]["old_arg"] == "--train.batch_size 32"
    stuck = run_cli("fix", "--framework", "swift", "--gpus", "8", "--",
                    *test_swift.tokens(SWIFT_BROKEN["hf_one_generation"]["flags"]))
    assert stuck.returncode == 1 and "num_generations_at_least_two" in stuck.stdout and "what would help" in stuck.stdout
    bad = run_cli("fix", "--framework", "swift-megatron", "--", "NPROC_PER_NODE=8", "--micro_batch_size", "two")
    assert bad.returncode == 2 and "micro_batch_size" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("fix", "--framework", "openrlhf", "--keep", "train.batch_sise", "--", "--train.batch_size", "8")
    assert bad.returncode == 2 and "keep" in bad.stderr and "Traceback" not in bad.stderr


def test_openrlhf_memory_repair_on_512_gpus_keeps_deepspeed_tp_in_a_node_and_zero_stages_real():
    """A 70B PPO job on 64 nodes of 8 GPUs under ZeRO-2: the repair may raise the ZeRO stage (only to one
    DeepSpeed has) and AutoTP only up to the node's 8 GPUs (it proposed ZeRO stage 4 and AutoTP 64 before)."""
    args = ["--actor.num_nodes", "64", "--actor.num_gpus_per_node", "8", "--ref.num_nodes", "64",
            "--ref.num_gpus_per_node", "8", "--vllm.num_engines", "100", "--vllm.tensor_parallel_size", "4",
            "--train.colocate_all", "--train.batch_size", "1000", "--rollout.batch_size", "1000",
            "--rollout.n_samples_per_prompt", "8"]
    rep = fix(args, framework="openrlhf", gpus=512, gpu="a100-80gb", model="llama3.1-70b")
    assert rep.after is not None, rep.status
    changed = {k: new for k, _old, new in rep.native_changes}
    assert changed.get("ds.zero_stage", 2) in (0, 1, 2, 3)
    assert changed.get("ds.tensor_parallel_size", 1) <= 8
    again = rb.check(args + [t for a in rep.native_after for t in shlex.split(a)], framework="openrlhf", gpus=512,
                     gpu="a100-80gb", model="llama3.1-70b")
    assert again.valid, [v.message for v in again.violations]


def test_a_flag_to_drop_is_said_in_words_not_quoted_into_the_paste_line():
    """fix on an OpenRLHF config whose repair drops --train.colocate_all printed 'paste over yours:
    "(drop --train.colocate_all)" --ds.tensor_parallel_size 4': pasted, the quoted note is an argument argparse
    refuses. Now the line holds only arguments, the drop follows in words, and the diff shows the note unquoted."""
    flags = ("--actor.num_nodes 1 --actor.num_gpus_per_node 8 --ref.num_nodes 1 --ref.num_gpus_per_node 8 "
             "--vllm.num_engines 3 --vllm.tensor_parallel_size 2 --train.colocate_all --rollout.batch_size 100 "
             "--rollout.n_samples_per_prompt 8 --train.batch_size 128 --train.micro_batch_size 4 "
             "--rollout.micro_batch_size 16 --algo.advantage.estimator group_norm --reward.remote_url r.py "
             "--data.max_len 4096 --rollout.max_new_tokens 3072").split()
    p = run_cli("fix", "--framework", "openrlhf", "--gpu", "h100", "--model", "qwen2.5-7b", "--", *flags)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "+ (drop --train.colocate_all)" in p.stdout
    paste = p.stdout.split("paste over yours:\n", 1)[1].splitlines()
    assert '"(' not in paste[0] and "(drop" not in paste[0] and paste[0].strip().startswith("--")
    assert paste[1] == "  and in yours: drop --train.colocate_all"


@pytest.mark.parametrize("name, lora", [
    ("trl_3456_qwen3_4b_grpo_1xa100_80gb", "--use_peft true --lora_r 32 --lora_target_modules all-linear"),
    # its --vllm_mode with --num_infer_workers date it 3.5: 3.x switches LoRA on with --train_type (4.0: --tuner_type)
    ("swift_example_v3.4.0_multinode_qwen2_5_32b_full_server_ref_10x80g", "--train_type lora --lora_rank 32"),
])
def test_a_full_fine_tune_that_fits_nowhere_is_offered_lora_in_the_frameworks_flags(name, lora):
    """TRL and ms-swift price LoRA as a cost input, no rule variable: fix's LoRA relaxation stopped with a KeyError
    traceback ('lora_rank') on 13 corpus configs. Now it says the flags that switch LoRA on."""
    import memory_corpus as mc

    case = next(c for c in mc.cases() if c.name == name)
    r = fix(case.args, framework=case.framework, gpus=case.gpus, model=case.model, gpu=case.gpu)
    texts = [t["text"] for t in r.relaxations_tried if t["kind"] == "lora"]
    assert texts and f"): {lora}" in texts[0]


def test_trl_fix_out_of_memory_names_bf16_and_zero3_not_an_offload_it_never_tried():
    """A 7B TRL command launched without DeepSpeed and without --dtype (fp32 weights under plain DDP) fits no value fix
    may change: what would help names the 16-bit weights and ZeRO-3 in TRL's and accelerate's flags (it said "CPU
    offload ... fix already tried the offload switches it may move", though TRL has none fix moves), and the command
    with them checks back valid and fitting."""
    command = ["accelerate", "launch", "--num_processes", "4", "-m", "trl.scripts.grpo", "--model_name_or_path",
               "Qwen/Qwen2.5-7B", "--per_device_train_batch_size", "3", "--num_generations", "8",
               "--gradient_accumulation_steps", "2", "--use_vllm", "true", "--vllm_mode", "colocate"]
    stuck = run("fix", "--framework", "trl", "--gpu", "h100", "--", *command)
    helps = stuck.stdout.split("what would help:")[1]
    assert stuck.returncode == 1 and "--dtype bfloat16" in helps and "--use_deepspeed --zero_stage 3" in helps
    assert "fix already tried the offload switches" not in helps, helps
    fixed = command[:4] + ["--use_deepspeed", "--zero_stage", "3"] + command[4:] + ["--dtype", "bfloat16"]
    checked = run("check", "--framework", "trl", "--gpu", "h100", "--json", "--", *fixed)
    data = json.loads(checked.stdout)
    assert data["valid"] and data["memory"]["verdict"] != "no", checked.stdout[:500]

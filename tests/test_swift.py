"""ms-swift 4.6.0, HF/DeepSpeed GRPO path (``swift rlhf``): the published example scripts pass on the
GPUs they are written for, known failures fail with the right rule and stage, bad input names the
field, enumerate equals the checker, the CLI speaks ``swift rlhf`` arguments. The known failures of
both paths (tests/data/swift/broken.yaml) are checked here."""

import json
from pathlib import Path

import pytest
import yaml

import rlbatch_solver as rb
from rlbatch_solver import api
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.swift.framework import parse_swift_args
from rlbatch_solver.rules.base import Stage
from rlbatch_solver.frameworks.swift.rules import RULESET, VARIABLES
from rlbatch_solver.frameworks.swift.rules_megatron import RULESET as MEGATRON_RULESET
from rlbatch_solver.scenario import Scenario

from bruteforce import assert_enumerate_equals_checker
from clirun import run

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "swift"
SCRIPTS = ROOT / "tests" / "data" / "scripts" / "swift"
EXAMPLES = yaml.safe_load((DATA / "hf_examples.yaml").read_text())
BROKEN = yaml.safe_load((DATA / "broken.yaml").read_text())


def tokens(flags: dict) -> list[str]:
    """Flag values as pasted from a launch script: ``NPROC_PER_NODE=8 swift rlhf --key value``."""
    env = [f"{k}={v}" for k, v in flags.items() if k.isupper()]
    out = env + ["swift", "rlhf"]
    for key, value in flags.items():
        if key.isupper():
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        out += [f"--{key}", str(value)]
    return out


def check(flags, gpus=None, framework="swift", **kw):
    return rb.check(tokens(flags) if isinstance(flags, dict) else flags, framework=framework, gpus=gpus, **kw)


def rules_of(report, severity=None):
    return {v.rule for v in report.violations if severity is None or v.severity.value == severity}


# ----------------------------------------------------------------------------- examples
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_published_examples_are_valid(name):
    ex = EXAMPLES[name]
    report = check(ex["flags"], gpus=ex["gpus"], model=ex.get("model"))
    assert report.valid and not report.violations, [(v.rule, v.message) for v in report.violations]


@pytest.mark.parametrize("name", [n for n in EXAMPLES if EXAMPLES[n]["gpus"] and
                                  EXAMPLES[n]["flags"].get("vllm_mode") == "server"])
def test_server_examples_need_their_rollout_gpus(name):
    """Server mode takes GPUs away from training: without the rollout server's GPUs the budget fails."""
    ex = EXAMPLES[name]
    flags = ex["flags"]
    world = flags.get("NPROC_PER_NODE", 1) * flags.get("NNODES", 1)
    server = flags.get("rollout.vllm_tensor_parallel_size", 1) * flags.get("rollout.vllm_data_parallel_size", 1)
    report = check(flags, gpus=world + server - 1)
    assert rules_of(report) == {"swift.gpus.budget"}
    assert report.violations[0].stage == Stage.DRIVER
    assert f"needs {world + server} GPUs" in report.violations[0].message


def test_gspo_example_numbers():
    """internal/gspo.sh: 2 per GPU x 8 GPUs x 32 steps = 512 completions, 32 prompts of 16."""
    values = check(EXAMPLES["train/grpo/internal/gspo"]["flags"]).values
    env = RULESET.full_env(values)
    assert env["W"] == 8 and env["gen_base"] == 16 and env["spg"] == 32 and env["gen"] == 512


def test_completions_of_a_prompt_may_span_ranks():
    """external/moe_full.sh: 7 ranks, groups of 14; the code needs gen % G, not gen % (b*W*G)."""
    ex = EXAMPLES["train/grpo/external/moe_full"]
    env = RULESET.full_env(check(ex["flags"]).values)
    assert env["gen"] == 28 and env["W"] == 7


# ----------------------------------------------------------------------------- known failures
@pytest.mark.parametrize("name", list(BROKEN))
def test_known_failures(name):
    case = BROKEN[name]
    report = check(case["flags"], gpus=case["gpus"], framework=case["framework"], model=case.get("model"))
    assert rules_of(report, "error") == set(case["errors"]), [(v.rule, v.message) for v in report.violations]
    if "expect" in case:
        want = case["expect"]
        v = next(v for v in report.violations if v.rule == want["rule"])
        assert v.stage.value == want["stage"]
        assert want["message"] in v.message, v.message
        assert v.source and ("swift/" in v.source or "megatron/" in v.source)
    else:
        assert report.valid


def test_vllm_mode_without_use_vllm():
    r = check({"NPROC_PER_NODE": 8, "vllm_mode": "colocate"})
    assert rules_of(r) == {"swift.args.vllm_mode_needs_use_vllm"}


def test_a_config_written_for_3_4_has_the_vllm_mode_that_release_decided():
    """ms-swift 3.4.0 had no --vllm_mode: GRPOArguments._check_grpo ran vLLM colocated when the visible GPUs equal
    num_infer_workers, else in "async mode" on GPUs of its own, and refused async_generate only when colocated
    (examples/train/grpo/internal/full_vllm_qwenvl.sh at v3.4.0: 8 GPUs, 6 training ranks, async_generate)."""
    legacy = ["NPROC_PER_NODE=6", "--rlhf_type", "grpo", "--use_vllm", "true", "--num_infer_workers", "2",
              "--per_device_train_batch_size", "4", "--num_generations", "24", "--async_generate", "true"]
    r = api.check(legacy, framework="swift", gpus=8)
    assert r.valid, rules_of(r)
    colocated = [t.replace("NPROC_PER_NODE=6", "NPROC_PER_NODE=8").replace("24", "16") for t in legacy]
    colocated[colocated.index("--num_infer_workers") + 1] = "8"
    # dated by --num_infer_workers (3.2-3.5), the release's own check refuses it
    assert rules_of(api.check(colocated, framework="swift", gpus=8)) == {"swift.legacy.async_generate_needs_async_mode"}
    stale = [t for t in legacy if t not in ("--num_infer_workers", "2")]  # no key dates it: 3.12's rule
    assert "swift.args.vllm_mode_required" in rules_of(api.check(stale, framework="swift", gpus=8))
    # its async-mode engines were the trainer's own (no `swift rollout` server): they took its memory share
    values = get_framework("swift").to_values(parse_swift_args(legacy + ["--vllm_gpu_memory_utilization", "0.5"])[0],
                                              gpus=8, model=None)
    assert values["vllm_server"] and values["server_gmu_permille"] == 500


def test_async_generate_needs_server():
    r = check({"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "colocate", "async_generate": True})
    assert rules_of(r) == {"swift.args.async_generate_needs_server"}
    ok = check({"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "server", "vllm_server_host": "h",
                "async_generate": True})
    assert ok.valid


def test_server_needs_host():
    r = check({"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "server"})
    assert rules_of(r) == {"swift.rollout.server_needs_host"}
    assert r.violations[0].stage == Stage.DRIVER


def test_teacher_allows_one_generation():
    flags = {"NPROC_PER_NODE": 4, "num_generations": 1, "use_vllm": True, "vllm_mode": "colocate"}
    assert not check(flags).valid
    assert check({**flags, "teacher_model": "T"}).valid


def test_eval_needs_a_validation_set():
    flags = {"NPROC_PER_NODE": 4, "per_device_train_batch_size": 2, "use_vllm": True, "vllm_mode": "colocate",
             "eval_strategy": "steps"}
    assert check(flags).valid  # no val_dataset and split_dataset_ratio 0: eval_strategy becomes 'no'
    assert "swift.args.eval_batch_divisible_by_num_generations_eval" in rules_of(check({**flags, "val_dataset": "v"}))
    assert check({**flags, "val_dataset": "v", "num_generations_eval": 4}).valid
    assert check({**flags, "val_dataset": "v", "eval_strategy": "no"}).valid


def test_sequence_parallel():
    base = {"NPROC_PER_NODE": 6, "per_device_train_batch_size": 4, "use_vllm": True, "vllm_mode": "colocate",
            "vllm_tensor_parallel_size": 2}
    r = check({**base, "sequence_parallel_size": 4})
    assert rules_of(r) == {"swift.sp.world_divisible_by_sp"}
    assert r.violations[0].stage == Stage.WORKER_INIT
    # Qwen2.5-7B has 4 KV heads: sp 8 runs 4-way Ulysses x 2-way ring attention, which needs padding_free
    ring = {**base, "NPROC_PER_NODE": 8, "sequence_parallel_size": 8}
    assert rules_of(check(ring, model="qwen2.5-7b")) == {"swift.sp.ring_attention_needs_padding_free"}
    assert check({**ring, "padding_free": True}, model="qwen2.5-7b").valid
    assert check({**ring, "packing": True}, model="qwen2.5-7b").valid
    assert check(ring).valid  # without a model the KV heads are unknown: the rule is skipped
    env = RULESET.full_env(check({**ring, "gradient_accumulation_steps": 2}).values)
    assert env["effective_ga"] == 16


def test_vllm_heads_need_model():
    flags = {"NPROC_PER_NODE": 6, "per_device_train_batch_size": 4, "use_vllm": True, "vllm_mode": "colocate",
             "vllm_tensor_parallel_size": 3}
    assert check(flags).valid
    # Qwen2.5-7B: 28 heads, not divisible by 3
    assert rules_of(check(flags, model="qwen2.5-7b")) == {"swift.vllm.heads_divisible_by_tp"}


def test_every_rule_has_id_stage_source_and_numbers_in_message():
    for ruleset, prefixes in ((RULESET, ("swift.",)), (MEGATRON_RULESET, ("swift.", "swift_megatron."))):
        for rule in ruleset.rules:
            assert rule.id.startswith(prefixes), rule.id
            assert rule.source
            assert isinstance(rule.stage, Stage)
            assert "{" in rule.message, rule.id  # every message shows the actual values


def test_shared_rules_are_one_definition():
    """The rules both paths enforce have one id and one message in both rule sets."""
    shared = {r.id for r in RULESET.rules} & {r.id for r in MEGATRON_RULESET.rules}
    assert {"swift.args.gen_divisible_by_num_generations", "swift.args.gen_equals_base_times_spg",
            "swift.args.gen_divisible_by_base", "swift.rollout.colocate_tp_divides_world", "swift.gpus.budget",
            "swift.rollout.server_needs_host", "swift.vllm.heads_divisible_by_tp"} == shared
    assert MEGATRON_RULESET.rule("swift.gpus.budget").message == RULESET.rule("swift.gpus.budget").message


# ----------------------------------------------------------------------------- parsing
def test_parses_pasted_script_forms():
    text = ("export NPROC_PER_NODE=4\nexport NNODES=2\nCUDA_VISIBLE_DEVICES=0,1,2,3 \\\n swift rlhf --rlhf_type grpo "
            "--per_device_train_batch_size=2 --num-generations 8 --use_vllm true --vllm_mode colocate "
            "--reward_funcs accuracy format --finetune --system 'You are a helpful assistant'")
    flat, ignored = parse_swift_args([text])
    assert flat["NPROC_PER_NODE"] == 4 and flat["NNODES"] == 2 and flat["per_device_train_batch_size"] == 2
    # the visible devices are read (3.2-3.4 place vLLM by their count); 4.6.0 counts its GPUs from NPROC_PER_NODE
    assert flat["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and "CUDA_VISIBLE_DEVICES=0,1,2,3" not in ignored
    values = get_framework("swift").to_values(flat, gpus=None, model=None)
    assert values["cluster_num_gpus"] is None
    assert values["gpus_per_node"] == 4 and values["nnodes"] == 2 and values["num_generations"] == 8
    assert values["vllm_mode_given"] and not values["vllm_server"]
    # --reward_funcs is nargs='+' (ms-swift 4.6.0 swift/arguments/rlhf_args.py reward_funcs: List[str]): both kept
    assert flat["reward_funcs"] == ["accuracy", "format"] and "format" not in ignored


@pytest.mark.parametrize("script", ["internal_transformers_1gpu.sh", "vllm_72b_4gpu.sh"])
def test_list_flags_of_an_example_script_reach_the_exported_command(script):
    """ms-swift's own examples write --reward_funcs accuracy format: check read 'format' as a stray token, and the
    command recommend printed kept --reward_funcs accuracy alone (pasting it dropped the format reward)."""
    path = SCRIPTS / script
    checked = run("check", path, "--gpu", "a100-80gb", "--model", "qwen2.5-7b")
    assert "not key=value" not in checked.stdout + checked.stderr
    out = run("recommend", "--from", path, "--gpu", "a100-80gb", "--model", "qwen2.5-7b").stdout
    # the command one argument a line, or the user's own line where the answer is to keep it
    assert "--reward_funcs accuracy format --" in " ".join(out.replace("\\\n", " ").split())


def test_list_flag_exports_one_shell_word_per_item():
    from rlbatch_solver.render import shell_word

    fw = get_framework("swift")
    flat, ignored = parse_swift_args(["--dataset a#100 'my data/b.jsonl' --reward_weights 1.0 0.5 --lora_rank 8"])
    assert flat["dataset"] == ["a#100", "my data/b.jsonl"] and flat["reward_weights"] == [1.0, 0.5] and not ignored
    assert shell_word(fw._flag("dataset", flat["dataset"])) == '--dataset a#100 "my data/b.jsonl"'
    assert shell_word(fw._flag("reward_weights", flat["reward_weights"])) == "--reward_weights 1.0 0.5"
    assert shell_word(fw._flag("target_modules", ["all-linear"])) == "--target_modules all-linear"
    # a list ends where the command does: its output redirected or piped is no item of the last flag
    flat, ignored = parse_swift_args(["--reward_funcs", "accuracy", "format", "--vllm_mode", "colocate", "2>&1", "|",
                                      "tee", "train.log"])
    assert flat["reward_funcs"] == ["accuracy", "format"] and flat["vllm_mode"] == "colocate"
    assert ignored == ["2>&1", "|", "tee", "train.log"]


def test_gpus_replaces_the_prefix():
    flags = {"per_device_train_batch_size": 1, "use_vllm": True, "vllm_mode": "colocate"}
    assert check(flags, gpus=8).values["gpus_per_node"] == 8
    # with the prefix, --gpus is the machine's budget
    r = check({**flags, "NPROC_PER_NODE": 8}, gpus=4)
    assert rules_of(r) == {"swift.gpus.budget"}


def test_yaml_config(tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("NPROC_PER_NODE: 8\nrlhf_type: grpo\nper_device_train_batch_size: 2\nnum_generations: 16\n"
                   "use_vllm: true\nvllm_mode: colocate\n")
    assert rb.check(str(cfg), framework="swift").valid
    cfg.write_text("NPROC_PER_NODE: 8\nper_device_train_batch_size: 3\nnum_generations: 16\n")
    assert not rb.check(str(cfg), framework="swift").valid


@pytest.mark.parametrize("bad,field", [
    ({"per_device_train_batch_size": 0}, "per_device_train_batch_size"),
    ({"per_device_train_batch_size": -2}, "per_device_train_batch_size"),
    ({"num_generations": "$G"}, "num_generations"),
    ({"use_vllm": "maybe"}, "use_vllm"),
    ({"vllm_mode": "colocated"}, "vllm_mode"),
    ({"rlhf_type": "dpo"}, "rlhf_type"),
    ({"generation_batch_size": 2.5}, "generation_batch_size"),
])
def test_bad_input_names_the_field(bad, field):
    with pytest.raises(rb.InputError) as exc:
        check({"NPROC_PER_NODE": 8, **bad})
    assert exc.value.field == field


def test_world_size_must_be_known():
    with pytest.raises(rb.InputError) as exc:
        check({"per_device_train_batch_size": 2})
    assert exc.value.field == "gpus" and "NPROC_PER_NODE" in str(exc.value)


# ----------------------------------------------------------------------------- solver
BASE = {name: [spec.default] for name, spec in VARIABLES.items() if spec.default is not None or spec.optional}
BASE.update({"num_heads": [28], "num_kv_heads": [4], "use_vllm": [True], "vllm_mode_given": [True]})

SPACES = {
    "generation batch": {
        "gpus_per_node": [1, 2, 3, 4, 6], "per_device_train_batch_size": [1, 2, 3],
        "gradient_accumulation_steps": [1, 2], "num_generations": [1, 2, 3, 4],
        "generation_batch_size": [None, 4, 6, 12], "steps_per_generation": [None, 1, 2, 3], "teacher": [False, True],
    },
    "eval and rollout": {
        "gpus_per_node": [2, 3, 4], "eval_on": [False, True], "per_device_eval_batch_size": [1, 2],
        "num_generations_eval": [None, 2, 3], "use_vllm": [False, True], "vllm_mode_given": [False, True],
        "vllm_server": [False, True], "server_host_given": [False, True], "async_generate": [False, True],
        "num_generations": [2, 4],
    },
    "layout": {
        "gpus_per_node": [1, 2, 4, 6, 8], "nnodes": [1, 2], "cluster_num_gpus": [None, 8, 9], "vllm_tp": [1, 2, 3, 4],
        "vllm_server": [False, True], "server_tp": [1, 2], "server_dp": [1, 2], "sequence_parallel_size": [1, 2, 3, 8],
        "padding_free": [False, True], "num_generations": [2], "per_device_train_batch_size": [2],
    },
    "liger": {
        "gpus_per_node": [2, 4], "sequence_parallel_size": [1, 2], "padding_free": [False, True],
        "liger_no_sp": [False, True], "liger_no_padding_free": [False, True], "liger_grpo_only": [False, True],
        "advantage_grpo": [False, True], "num_generations": [2], "per_device_train_batch_size": [2],
    },
}


@pytest.mark.parametrize("space_name", list(SPACES))
def test_enumerate_equals_checker(space_name):
    assert_enumerate_equals_checker(RULESET, {**BASE, **SPACES[space_name]})


@pytest.mark.parametrize("framework,refused", [
    ("swift", {"padding_free", "sequence_parallel", "advantage"}),
    ("swift==3.10.0", {"padding_free", "sequence_parallel", "advantage"}),
    ("swift==3.9.0", {"padding_free", "sequence_parallel"}), ("swift==3.6.0", {"padding_free", "sequence_parallel"}),
    ("swift==3.5.3", {"sequence_parallel"}), ("swift==3.5.0", set()),
])
def test_liger_refusals_follow_the_release_that_runs(framework, refused):
    """RLHFArguments._check_grpo refuses, beside --use_liger_kernel (Liger's GRPO loss), sequence parallelism from
    3.5.3, padding_free from 3.6.0, another advantage estimator from 3.10.0: the 3.10.3 pack judges 3.5-3.10, so the
    release named (or dated) decides; without --use_liger_kernel nothing is refused."""
    base = ["NPROC_PER_NODE=4", "swift", "rlhf", "--rlhf_type", "grpo", "--num_generations", "4",
            "--per_device_train_batch_size", "4"]
    cases = {"padding_free": (["--padding_free", "true"], "swift.liger.no_padding_free"),
             "sequence_parallel": (["--sequence_parallel_size", "2"], "swift.liger.no_sequence_parallel"),
             "advantage": (["--advantage_estimator", "rloo"], "swift.liger.grpo_advantage_only")}
    for name, (extra, rule) in cases.items():
        report = api.check(base + extra + ["--use_liger_kernel", "true"], framework=framework, gpus=4)
        assert (rule in rules_of(report)) == (name in refused), (name, rules_of(report))
        assert rule not in rules_of(api.check(base + extra, framework=framework, gpus=4))
    r = api.check(base + ["--packing", "true", "--use_liger_kernel", "true"], framework=framework, gpus=4)
    violation = next((v for v in r.violations if v.rule == "swift.liger.no_padding_free"), None)
    assert (violation is not None) == ("padding_free" in refused)
    if violation is not None:
        assert "padding_free = True" in violation.message and "rlhf_args.py" in violation.source


def test_a_search_beside_liger_keeps_what_the_release_refuses_out():
    """The model agrees with the checker: with --use_liger_kernel, no answer takes sequence parallelism."""
    sc = Scenario(framework="swift", gpus=4, algorithm="grpo", n=4, model="qwen2.5-1.5b",
                  fixed={"use_liger_kernel": True}, search={"sequence_parallel_size": [1, 2],
                                                             "per_device_train_batch_size": [1, 2]})
    res = rb.enumerate(sc)
    assert res.complete and res.count > 0
    assert {s["sequence_parallel_size"] for s in res.solutions} == {1}
    sc.fixed = {}
    assert {s["sequence_parallel_size"] for s in rb.enumerate(sc).solutions} == {1, 2}


def test_enumerate_scenario_exports_paste_ready_flags():
    sc = Scenario(framework="swift", gpus=8, algorithm="gspo", n=16, model="qwen2.5-7b",
                  search={"per_device_train_batch_size": [1, 2, 4]})
    res = rb.enumerate(sc)
    assert res.complete and res.count > 0
    fw = get_framework("swift")
    for sol, native in zip(res.solutions, res.native):
        assert native[0] == "NPROC_PER_NODE=8"
        assert "--importance_sampling_level sequence" in native and "--vllm_mode colocate" in native
        again = rb.check(native, framework="swift", gpus=8, model="qwen2.5-7b")
        assert again.valid, (native, again.violations)
        assert fw.ruleset.check(sol).valid


def test_enumerate_server_mode_splits_the_gpus():
    sc = Scenario(framework="swift", gpus=8, n=8, fixed={"vllm_mode": "server", "per_device_train_batch_size": 1})
    res = rb.enumerate(sc)
    assert res.complete and res.count > 0
    for sol, native in zip(res.solutions, res.native):
        assert "--vllm_mode server" in native and "--vllm_server_host ROLLOUT_HOST" in native
        assert sol["gpus_per_node"] + sol["server_tp"] * sol["server_dp"] == 8
        assert RULESET.full_env(sol)["gen"] % 8 == 0


def test_recommend_has_a_cost_model():
    """ms-swift has a cost model now (frameworks/swift/cost.py; tests/test_cost_frameworks.py)."""
    sc = Scenario(framework="swift", gpu="h100", gpus=8, model="qwen2.5-7b")
    rep = rb.recommend(sc, top=1)
    assert rep.best is not None and rep.best.native[0] == "NPROC_PER_NODE=8"


@pytest.mark.parametrize("framework,key", [("swift", "tuner_type"), ("swift==3.4.1", "train_type")])
def test_an_answer_on_the_default_tuner_says_it_is_lora_and_how_to_train_every_weight(framework, key):
    """`swift rlhf` trains LoRA unless --tuner_type (3.x: --train_type) says otherwise (BaseArguments' default
    'lora'): an answer priced as LoRA says so, with the --set recommend takes for full fine-tuning; check of a config
    without the flag says the same. Given, or on Megatron-SWIFT (default 'full'), nothing is said."""
    def notes(sc: Scenario) -> list[str]:
        return [n for n in rb.recommend(sc, top=1).key_notes if "LoRA" in n]

    sc = Scenario(framework=framework, gpu="h100", gpus=8, model="qwen2.5-7b")
    said = notes(sc)
    assert len(said) == 1 and f"--set {key}=full" in said[0] and f"BaseArguments.{key} 'lora'" in said[0]
    assert notes(Scenario(framework=framework, gpu="h100", gpus=8, model="qwen2.5-7b", fixed={key: "full"})) == []
    assert notes(Scenario(framework="swift-megatron", gpu="h100", gpus=8, model="qwen2.5-7b")) == []
    checked = api.check([*GOOD, "--model", "Qwen/Qwen2.5-7B"], framework="swift")
    assert [n for n in checked.notes if "trains LoRA by default" in n]
    assert not [n for n in api.check([*GOOD, "--tuner_type", "full"], framework="swift").notes if "LoRA" in n]


def test_an_answer_says_the_config_notes_check_says_of_its_command():
    """recommend printed `--quant_bits 4` (no --quant_method) and priced bf16 without a word, while check of the same
    config says ms-swift loads the model unquantized: the answer carries check's notes of the command it prints."""
    sc = Scenario(framework="swift", gpu="rtx4090", gpus=4, model="qwen2.5-7b", fixed={"quant_bits": 4})
    rep = rb.recommend(sc, top=1)
    assert "--quant_bits 4" in rep.best.native
    said = [n for n in rep.key_notes if n.startswith("--quant_bits 4 without --quant_method")]
    checked = api.check(GOOD + ["--quant_bits", "4"], framework="swift", gpu="rtx4090", model="qwen2.5-7b")
    assert said and said[0] in checked.notes  # both priced (check without --gpu claims no pricing)
    out = run("recommend", "--framework", "swift", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-7b",
              "--set", "quant_bits=4", "--top", "1").stdout
    assert "note: --quant_bits 4 without --quant_method: ms-swift loads the model unquantized" in out


def test_fix_says_the_config_notes_its_changes_bring():
    """The fixed config's notes as check would say them: a repair that turns --vllm_mode server says where the
    `swift rollout` server's memory share comes from, as check of the fixed config does; a drop brings none."""
    from rlbatch_solver.commands.fix import fixed_notes
    from rlbatch_solver.commands.fix_job import read_job

    job = read_job(GOOD, "swift", None, None, None, [], None, 1.0, None)
    server = [n for n in fixed_notes(job, [("vllm_mode", "--vllm_mode colocate", "--vllm_mode server")])
              if n not in job.notes]
    checked = api.check([t if t != "colocate" else "server" for t in GOOD], framework="swift")
    assert len(server) == 1 and "`swift rollout` server's GPU" in server[0] and server[0] in checked.notes
    assert fixed_notes(job, [("vllm_mode", "--vllm_mode colocate", "(drop --vllm_mode)")]) == job.notes


# ----------------------------------------------------------------------------- CLI
GOOD = ["NPROC_PER_NODE=8", "swift", "rlhf", "--rlhf_type", "grpo", "--per_device_train_batch_size", "2",
        "--num_generations", "16", "--use_vllm", "true", "--vllm_mode", "colocate"]


def test_cli_check_exit_codes():
    assert run("check", "--framework", "swift", "--", *GOOD).returncode == 0
    stale = [t for t in GOOD if t not in ("--vllm_mode", "colocate")]
    proc = run("check", "--framework", "swift", "--", *stale)
    assert proc.returncode == 1 and "swift.args.vllm_mode_required" in proc.stdout
    proc = run("check", "--framework", "swift", "--json", "--", *[t.replace("16", "12") for t in GOOD])
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["violations"][0]["rule"] == "swift.args.gen_divisible_by_num_generations"
    proc = run("check", "--framework", "swift", "--", *GOOD, "--per_device_train_batch_size", "0")
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].startswith("error: per_device_train_batch_size")
    proc = run("check", "--framework", "swift", "--", "--num_generations", "8")
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].startswith("error: gpus")
    # the whole command pasted is read as its script is: no NPROC_PER_NODE/NNODES, `swift rlhf` runs one process
    proc = run("check", "--framework", "swift", "--", "swift", "rlhf", "--num_generations", "8")
    assert proc.returncode == 1 and "runs one training process" in proc.stderr


def test_cli_enumerate_exit_codes():
    proc = run("enumerate", "--framework", "swift", "--gpus", "4", "--n", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["complete"] and lines[-1]["count"] == len(lines) - 1 > 0
    first = lines[0]
    toks = [f"{k}={v}" if k.isupper() else f"--{k} {v}" for k, v in first.items()]
    assert run("check", "--framework", "swift", "--", *toks).returncode == 0
    proc = run("enumerate", "--framework", "swift", "--gpus", "4", "--n", "3",
               "--set", "per_device_train_batch_size=1", "--set", "gradient_accumulation_steps=1")
    assert proc.returncode == 1 and "swift.args.gen_divisible_by_num_generations" in proc.stdout
    proc = run("enumerate", "--framework", "swift", "--gpus", "4", "--search", "per_device_train_batchsize=1,2")
    assert proc.returncode == 2 and "search.per_device_train_batchsize" in proc.stderr


def test_rules_doc_is_in_sync():
    proc = run("rules", "--framework", "swift", "--markdown")
    assert proc.stdout == (ROOT / "docs" / "rules-swift.md").read_text()


# ----------------------------------------------------------------------------- fix and explain
def test_fix_adds_the_missing_vllm_mode_first():
    case = BROKEN["qwen3_8b_best_practice"]
    r = api.fix(tokens(case["flags"]), framework="swift", gpus=case["gpus"])
    assert r.after is not None and r.native_after == ["--vllm_mode colocate"]
    r = api.fix(tokens({**case["flags"], "num_generations": 12}), framework="swift", gpus=8)
    assert "--vllm_mode colocate" in r.native_after and not any("use_vllm" in x for x in r.native_after)


def test_explain_maps_swift_messages_to_rules():
    case = BROKEN["qwen3_8b_best_practice"]
    r = api.explain("ValueError: vllm_mode is required when use_vllm is true", framework="swift",
                   config=tokens(case["flags"]), gpus=8)
    assert [x.rule for x in r.rules] == ["swift.args.vllm_mode_required"]
    assert r.fix is not None and r.fix.native_after == ["--vllm_mode colocate"]
    m = BROKEN["megatron_w8_tp2_g3_gbs12"]
    trace = ('  File "swift/megatron/trainers/grpo_trainer.py", line 1357, in get_local_rollout_batch\n'
             "    assert rollout_group_size * per_device_batch_size == len(global_rollout_batch)\nAssertionError\n")
    r = api.explain(trace, framework="swift-megatron", config=tokens(m["flags"]))
    assert [x.rule for x in r.rules] == ["swift_megatron.runtime.generation_divisible_by_world"]
    assert r.fix.after is not None



def test_lora_is_ms_swift_default_and_full_trains_every_weight():
    """ms-swift 4.6.0 trains LoRA unless --tuner_type full (BaseArguments.tuner_type default 'lora'): its update
    holds a bf16 base and the adapter's states, and no reference model; --train_type (older scripts' name) reads
    the same way (checked as 4.0.4, the newest release that takes it: a config dated by it alone is priced as 3.1.0,
    whose LoRA forward keeps every position's logits, tests/test_swift_whole_sequence_logits.py)."""
    from rlbatch_solver.frameworks.swift.cost import cost_values

    base = ["--rlhf_type", "grpo", "--per_device_train_batch_size", "2", "--num_generations", "8", "--beta", "0.04"]
    assert cost_values({}, megatron=False)["lora_rank"] == 8
    assert cost_values({"tuner_type": "full"}, megatron=False)["lora_rank"] == 0
    assert cost_values({"train_type": "lora", "lora_rank": "64"}, megatron=False)["lora_rank"] == 64
    assert cost_values({}, megatron=True)["lora_rank"] == 0
    full = rb.check(["swift", "rlhf", *base, "--tuner_type", "full"], framework="swift", gpus=8, model="qwen2.5-7b",
                    gpu="a100-80gb")
    lora = rb.check(["swift", "rlhf", *base], framework="swift", gpus=8, model="qwen2.5-7b", gpu="a100-80gb")
    old_name = rb.check(["swift", "rlhf", *base, "--train_type", "lora"], framework="swift==4.0.4", gpus=8,
                        model="qwen2.5-7b", gpu="a100-80gb")
    f, l_, o = (r.memory.peaks for r in (full, lora, old_name))  # MiB per phase
    # (--train_type dates the config to a 3.x release, whose trainer skips the old log-probs at num_iterations 1;
    # 4.0.4's forward-only passes also hold the temperature's out-of-place copy of the logits, 4.6.0 divides in place:
    # tests/test_temperature_copy.py)
    forward = ("ref", "old_log_prob")
    assert {p: l_[p] for p in o if p not in forward} == {p: v for p, v in o.items() if p not in forward}
    assert all(o[p] > l_[p] for p in forward if p in o)
    # without DeepSpeed a full fine-tune keeps 8 B/param (bf16 weights, grads and two Adam moments) and a 2 B/param
    # reference model; LoRA keeps the 2 B/param base and 20M adapter parameters' states, and no reference model
    assert f["actor_update"] - l_["actor_update"] > (6 + 2) * 7.5e9 / 2**20  # 7.6B params, less the adapter
    assert f["ref"] - l_["ref"] > 6 * 7.5e9 / 2**20


def test_server_mode_keeps_the_reference_beside_the_policy():
    """With vLLM on a server of its own, the reference model still lives on the training GPUs (ms-swift prepares it on
    the training ranks, ZeRO-3 partitioned here): the actor update counts its params, and the sleeping engine is not
    counted there (memory._colocated_extra). ms-swift's v3.4.0 multi-node 32B script warns that beta != 0 may OOM."""
    flags = {"NPROC_PER_NODE": 8, "rlhf_type": "grpo", "model": "Qwen/Qwen2.5-32B-Instruct", "use_vllm": True,
             "vllm_mode": "server", "vllm_server_host": "127.0.0.1", "train_type": "full", "torch_dtype": "bfloat16",
             "max_completion_length": 2048, "per_device_train_batch_size": 1, "num_generations": 8,
             "deepspeed": "zero3"}
    with_ref = check({**flags, "beta": 0.04}, model="qwen2.5-32b", gpu="a100-80gb").memory
    no_ref = check({**flags, "beta": 0.0}, model="qwen2.5-32b", gpu="a100-80gb").memory
    update = with_ref.phases["actor_update"]
    assert update["ref params (resident)"] == pytest.approx(2 * 32.76e9 / 8 / 2**20, rel=0.01)  # MiB: bf16 / 8 ranks
    assert not any("engine" in t for t in update)
    assert with_ref.verdict("actor_update") != "yes" and no_ref.verdict("actor_update") == "yes"


def _qlora(extra, framework="swift==4.6.0", mode="colocate"):
    flags = ["NPROC_PER_NODE=1", "swift", "rlhf", "--rlhf_type", "grpo", "--tuner_type", "lora",
             "--per_device_train_batch_size", "4", "--num_generations", "4", "--use_vllm", "true", "--vllm_mode", mode,
             "--vllm_gpu_memory_utilization", "0.4", "--sleep_level", "1", *extra]
    return rb.check(flags, framework=framework, model="qwen2.5-7b", gpu="a100-80gb")


def test_a_bitsandbytes_base_is_priced_at_its_bytes_per_weight():
    """`swift rlhf ... --tuner_type lora --quant_method bnb --quant_bits 4` (QLoRA) was priced with a bf16 base.
    QuantizeArguments (arguments/base_args/quant_args.py): bnb NF4 with double quantization by default, LLM.int8 for 8
    bits; the embedding and lm_head stay in torch_dtype (bf16). The frozen base the update holds moves by exactly
    those bytes per decoder weight."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.costmodel.memory import model_consts

    mc = model_consts(load_model("qwen2.5-7b"))
    decoder = mc.params - mc.embed - mc.lm_head
    peak = {}
    for name, extra in {"bf16": [], "nf4": ["--quant_method", "bnb", "--quant_bits", "4"],
                        "nf4-plain": ["--quant_method", "bnb", "--quant_bits", "4", "--bnb_4bit_use_double_quant",
                                      "false"],
                        "int8": ["--quant_method", "bnb", "--quant_bits", "8"]}.items():
        peak[name] = _qlora(extra).memory.peaks["actor_update"] * 2**20
    assert peak["bf16"] - peak["nf4"] == pytest.approx((C.BF16 - C.NF4_BYTES) * decoder, rel=0.01)
    assert peak["nf4-plain"] - peak["nf4"] == pytest.approx((C.NF4_PLAIN_BYTES - C.NF4_BYTES) * decoder, rel=0.01)
    assert peak["bf16"] - peak["int8"] == pytest.approx((C.BF16 - C.INT8_BYTES) * decoder, rel=0.01)


def test_the_colocated_engine_quantizes_its_own_copy_from_4_1_on():
    """ms-swift 4.1+ builds its colocated vLLM with quantization='bitsandbytes' for a bnb 4-bit model
    (rlhf_trainers/rollout_mixin.py ``_prepare_vllm``); vLLM quantizes each linear to NF4 and undoes the double
    quantization while loading (bitsandbytes_loader.py ``dequantize_dq``): NF4_PLAIN_BYTES, and the KV cache gets what
    the weights no longer take. 3.x's and 4.0.x's engine gets no quantization: its weights and KV cache stay as in
    bf16; an 8-bit base is not passed to vLLM either."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.costmodel.memory import model_consts

    mc = model_consts(load_model("qwen2.5-7b"))
    decoder = mc.params - mc.embed - mc.lm_head
    nf4 = ["--quant_method", "bnb", "--quant_bits", "4"]

    def engine(res):
        return {k: v for k, v in res.memory.phases["rollout"].items() if k.startswith("vLLM weights")}

    new_bf16, new_nf4 = engine(_qlora([])), engine(_qlora(nf4))
    full, quantized = new_bf16["vLLM weights (bf16, /TP)"], new_nf4["vLLM weights (NF4, /TP)"]
    assert (full - quantized) * 2**20 == pytest.approx((C.BF16 - C.NF4_PLAIN_BYTES) * decoder, rel=0.01)
    for older in ("swift==3.12.6", "swift==4.0.4"):  # 4.1.0 added vllm_quantization
        assert engine(_qlora(nf4, framework=older)) == engine(_qlora([], framework=older))
    assert "vLLM weights (NF4, /TP)" in engine(_qlora(nf4, framework="swift==4.3.2"))
    assert engine(_qlora(["--quant_method", "bnb", "--quant_bits", "8"])) == new_bf16


def test_a_bitsandbytes_engine_decodes_through_the_dequantizing_path():
    """The 4.1+ engine's decode reads its NF4 weights through bitsandbytes' matmul_4bit (time.decode_weight_bytes, as
    TRL's transformers generate): a slower rollout; a 16-bit engine (3.x) decodes as before, the other phases too."""
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.time import estimate_time

    nf4 = ["--quant_method", "bnb", "--quant_bits", "4"]

    def seconds(extra, framework):
        values = _qlora(extra, framework=framework).values
        spec = get_framework(framework).cost_spec(load_model("qwen2.5-7b"), load_gpu("a100-80gb"))
        return estimate_time(spec.plan(values, "rollout")).phases

    new, new4 = seconds([], "swift==4.6.0"), seconds(nf4, "swift==4.6.0")
    assert new4["rollout"] > 1.2 * new["rollout"]
    assert {k: v for k, v in new4.items() if k != "rollout"} == {k: v for k, v in new.items() if k != "rollout"}
    assert seconds(nf4, "swift==3.12.6")["rollout"] == seconds([], "swift==3.12.6")["rollout"]


def test_quantization_the_cost_model_does_not_price_is_said():
    """--quant_bits without --quant_method quantizes nothing (get_quantization_config needs a method); hqq, eetq,
    quanto and fp8 are not priced: each is said, and the flags are still accepted."""
    cmd = ["NPROC_PER_NODE=1", "swift", "rlhf", "--rlhf_type", "grpo", "--train_type", "lora",
           "--per_device_train_batch_size", "4", "--num_generations", "4"]
    res = run("check", "--framework", "swift", "--", *cmd, "--quant_bits", "4")
    assert "--quant_bits 4 without --quant_method: ms-swift loads the model unquantized" in " ".join(res.stdout.split())
    res = run("check", "--framework", "swift", "--", *cmd, "--quant_method", "hqq", "--quant_bits", "4")
    assert "--quant_method hqq: a hqq quantized base is not modelled" in " ".join(res.stdout.split())
    res = run("check", "--framework", "swift", "--", *cmd, "--quant_method", "bnb", "--quant_bits", "4")
    assert "quant" not in res.stdout.replace("--quant_method bnb --quant_bits 4", "")
    full = [c if c != "lora" else "full" for c in cmd]
    res = run("check", "--framework", "swift", "--", *full, "--quant_method", "bnb", "--quant_bits", "4")
    assert "a quantized model trained in full is not modelled" in " ".join(res.stdout.split())
    res = run("check", "--framework", "swift", "--", *cmd, "--quant_method", "bnb", "--quant_bits", "3")
    assert res.returncode == 2 and "quant_bits" in res.stdout + res.stderr
    # bnb without --quant_bits: get_quantization_config raises "Please set the quant_bits"; said so, not as 'None'
    res = run("check", "--framework", "swift", "--", *cmd, "--quant_method", "bnb")
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2 and "quant_bits" in said and "None" not in said and "--quant_bits 4" in said, said
    # QuantizeArguments.quant_method is a Literal: ms-swift's parser refuses another spelling
    res = run("check", "--framework", "swift", "--", *cmd, "--quant_method", "BNB", "--quant_bits", "4")
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2 and "quant_method" in said and "--quant_method bnb" in said, said


def test_a_rollout_server_is_priced_at_its_own_memory_share_not_the_trainers():
    """``--vllm_mode server``: the engine is the `swift rollout` process, sized by its own --vllm_gpu_memory_utilization
    (VllmArguments default 0.9; the trainer's applies in colocate mode only: rollout_mixin.py ``_prepare_vllm`` builds
    an engine in its colocate branch alone). The trainer's 0.4 dropped the rollout row's KV cache from 55.4 to 33.0
    GiB; the server's share, given as --rollout.vllm_gpu_memory_utilization, moves it."""
    flags = {"NPROC_PER_NODE": 6, "rlhf_type": "grpo", "model": "Qwen/Qwen2.5-7B-Instruct", "use_vllm": True,
             "vllm_mode": "server", "vllm_server_host": "127.0.0.1", "tuner_type": "full", "deepspeed": "zero2",
             "max_completion_length": 2048, "per_device_train_batch_size": 2, "num_generations": 8}
    kw = dict(gpus=8, model="qwen2.5-7b", gpu="a100-80gb")
    default = check(flags, **kw).memory
    trainer = check({**flags, "vllm_gpu_memory_utilization": 0.4}, **kw).memory
    given = check({**flags, "rollout.vllm_gpu_memory_utilization": 0.5}, **kw)
    server = given.memory
    assert not given.unknown_keys  # a flag of ours for the server's command, as --rollout.vllm_tensor_parallel_size
    kv = "vLLM KV cache"
    assert trainer.phases["rollout"] == default.phases["rollout"]
    assert server.phases["rollout"][kv] < default.phases["rollout"][kv] - 15 * 1024  # 0.5 of 80 GiB, not 0.9
    assert "server" in default.titles["rollout"]
    colocated = check({**flags, "vllm_mode": "colocate", "NPROC_PER_NODE": 8}, **kw).memory
    assert "rollout" not in colocated.titles
    assert "server's GPU" in " ".join(run("check", SCRIPTS / "external_grpo_7b.sh", "--gpu", "a100-80gb").stdout.split())


def test_recommend_from_a_server_mode_script_searches_no_trainer_side_vllm_share():
    """In server mode the trainer's --vllm_gpu_memory_utilization and --sleep_level move nothing: recommend --from
    neither lists them as free nor changes them (it chose 0.4 "for headroom" from a rollout row it priced with it)."""
    from rlbatch_solver.launch_script import read_launch_script

    s = read_launch_script(SCRIPTS / "external_grpo_7b.sh")
    flat, _ = get_framework("swift").parse(s.args)
    report = api.recommend_from("swift", flat, gpu="a100-80gb", model="qwen2.5-7b", gpus=8)
    assert not {"vllm_gpu_memory_utilization", "sleep_level"} & set(report.start.searched), report.start.searched
    for choice in report.choices:
        assert choice.values["gmu_permille"] == 900 and choice.values["sleep_level"] == 0, choice.native
        assert not any(w.startswith("--vllm_gpu_memory_utilization") or w.startswith("--sleep_level")
                       for w in choice.native), choice.native


def test_use_liger_kernel_prices_liger_grpo_loss_from_3_5():
    """ms-swift --use_liger_kernel is its GRPO trainer's Liger loss from 3.5.0 (cost.py LIGER_LOSS_FROM): the update
    holds one sequence's completion logits and the lm_head's gradients instead of every completion's logits; the old
    and reference log-probs keep theirs. 3.4.1 has no Liger loss: priced as without the flag."""
    args = ["--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B-Instruct", "--per_device_train_batch_size", "8",
            "--num_generations", "8", "--max_completion_length", "1024"]

    def phases(extra, framework="swift"):
        ph = rb.check(args + extra, framework=framework, model="qwen2.5-7b", gpu="h100", gpus=8).memory.phases
        # 3.4.1 runs no old log-prob forward at num_iterations 1 (swift/cost.py old_log_prob_runs)
        return ph["actor_update"]["logits"], ph.get("old_log_prob", {}).get("logits+entropy"), ph["ref"]["logits"]

    from rlbatch_solver.costmodel import constants as C

    plain, on = phases([]), phases(["--use_liger_kernel", "true"])
    vocab, hidden, rows = 152064, 3584, 8 * 1024  # qwen2.5-7b; 8 completions of 1,024 tokens per GPU
    liger = (1024 * vocab * C.LIGER_GRPO_BYTES_PER_LOGIT + C.LIGER_GRPO_WEIGHT_GRAD_COPIES * vocab * hidden * C.BF16
             + C.LIGER_GRPO_INPUT_GRAD_COPIES * rows * hidden * C.BF16) / 2**20
    assert on[0] == round(liger) < plain[0] / 3 and on[1:] == plain[1:]
    assert phases(["--use_liger_kernel", "true"], "swift==3.4.1") == phases([], "swift==3.4.1")


def test_without_vllm_the_answer_writes_no_vllm_flag():
    """--set use_vllm=false (ms-swift's own default) was 'No valid config fits': the search's --vllm_mode colocate
    stayed, which RLHFArguments refuses without use_vllm; and a vLLM share was written for an engine not built."""
    from rlbatch_solver.scenario import Scenario

    report = api.recommend(Scenario(framework="swift", gpu="rtx4090", gpus=1, model="qwen2.5-7b",
                                    fixed={"use_vllm": False}), time_limit_s=20)
    assert report.best is not None
    words = " ".join(report.best.native)
    assert "--use_vllm false" in words and "--vllm_" not in words and "--sleep_level" not in words


def test_a_tight_vllm_answer_searches_generation_without_vllm_too():
    """14B LoRA on one RTX 4090: vLLM alone is tight (its bf16 copy beside the trained model); ms-swift's default,
    generation without vLLM, is searched too, and answers with headroom. (7B there has headroom with vLLM alone since
    the update's error band narrowed to 19%.)"""
    from rlbatch_solver.scenario import Scenario

    report = api.recommend(Scenario(framework="swift", gpu="rtx4090", gpus=1, model="qwen2.5-14b"), time_limit_s=20)
    assert report.best.values["use_vllm"] is False and not report.margin_note.startswith("tight")
    assert any(n.startswith("use_vllm=false (transformers' generate, ms-swift's default) searched too")
               for n in report.key_notes), report.key_notes


def test_recommend_searches_both_engines_where_the_user_left_use_vllm_alone():
    """7B LoRA on one RTX 4090: the vLLM answer (52.9 s a step) has headroom, so the search of generation without vLLM
    (ms-swift's default), which ran only for a tight answer, never ran, and the faster config that fits without vLLM
    (48.6 s, with headroom too) was not shown. Both engines are searched in the same solve where the user did not set
    use_vllm; a use_vllm the user set stays."""
    from rlbatch_solver.scenario import Scenario

    def asked(**fixed):
        return api.recommend(Scenario(framework="swift", gpu="rtx4090", gpus=1, model="qwen2.5-7b", fixed=fixed),
                             time_limit_s=30)

    both, vllm = asked(), asked(use_vllm=True)
    assert vllm.best.values["use_vllm"] is True and not vllm.margin_note.startswith("tight")
    assert both.best.values["use_vllm"] is False and not both.margin_note.startswith("tight")
    assert both.best.step_time_s < vllm.best.step_time_s
    assert any(n.startswith("use_vllm=false (transformers' generate, ms-swift's default) searched too, beside "
                            "use_vllm=true") for n in both.key_notes), both.key_notes
    assert not any("searched too" in n for n in vllm.key_notes), vllm.key_notes


def test_a_vllm_only_flag_set_or_searched_asks_for_vllm_in_every_release():
    """A flag only vLLM reads asks for vLLM whether the user set it or searched it, in the release's own words
    (3.2-3.4: --tensor_parallel_size / --num_infer_workers; later --vllm_tensor_parallel_size): the search of
    generation without vLLM, which would drop it from the answer, is not run. A flag vLLM does not read leaves both
    engines searched."""
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.scenario import Scenario

    def without_vllm_searched(framework, fixed=None, search=None):
        sc = Scenario(framework=framework, gpu="rtx4090", gpus=2, model="qwen2.5-7b", fixed=fixed or {},
                      search=search or {})
        return any(not arm.chosen for arm in get_framework(framework).arms_left_out(sc))

    for release in ("swift", "swift==3.8.3", "swift==3.4.1"):
        assert not without_vllm_searched(release, search={"vllm_tensor_parallel_size": [1, 2]}), release
        assert not without_vllm_searched(release, fixed={"--vllm_gpu_memory_utilization": 0.5}), release
        assert without_vllm_searched(release, fixed={"move_model_batches": 4}), release
    for key in ("tensor_parallel_size", "num_infer_workers"):
        assert not without_vllm_searched("swift==3.4.1", fixed={key: 2})
        assert not without_vllm_searched("swift==3.4.1", search={key: [1, 2]})
    # ms-swift 4.x reads no --tensor_parallel_size for its engine
    assert without_vllm_searched("swift", fixed={"tensor_parallel_size": 2})

    report = api.recommend(Scenario(framework="swift", gpu="rtx4090", gpus=1, model="qwen2.5-7b",
                                    search={"vllm_tensor_parallel_size": [1]}), time_limit_s=30)
    assert report.best.values["use_vllm"] is True, report.best.values
    assert not any("searched too" in n for n in report.key_notes), report.key_notes


def test_check_without_memory_says_the_default_tuner_without_claiming_it_priced_anything():
    """check of an ms-swift config without --gpu (nothing priced) said the default LoRA tuner is 'and so it is priced';
    the note now claims pricing only where check evaluates memory (--gpu and a model), as fix's does."""
    model = ["--model", "Qwen/Qwen2.5-7B"]

    def lora_note(report) -> str:
        said = [n for n in report.notes if "trains LoRA by default" in n]
        assert len(said) == 1, report.notes
        return said[0]

    bare = lora_note(api.check([*GOOD, *model], framework="swift"))
    assert "priced" not in bare and "rank 8; to train every weight give --tuner_type full" in bare, bare
    assert "and so it is priced" in lora_note(api.check([*GOOD, *model], framework="swift", gpu="h100",
                                                               model="qwen2.5-7b"))
    assert "priced" not in lora_note(api.fix([*GOOD, *model], framework="swift"))


@pytest.mark.parametrize("framework, said", [("swift==3.8.0", "ms-swift 3.8.0"), ("swift==4.5.0", "ms-swift 4.5.0"),
                                             ("swift", "ms-swift 4.6.0")])
def test_the_default_tuner_note_names_the_release_named(framework, said):
    """swift==3.8.0, judged by 3.10.3's pack, said "ms-swift 3.10.3 trains LoRA by default" beside "ms-swift 3.8.0 is
    checked with the rules of 3.10.3": every release we follow defaults to LoRA (3.8.0's base_args.py
    train_type='lora'), so the note names the one named."""
    notes = api.check(["--rlhf_type", "grpo", "--per_device_train_batch_size", "4", "--num_generations", "8"],
                      framework=framework, gpus=8).notes
    (note,) = [n for n in notes if "trains LoRA by default" in n]
    assert f"{said} trains LoRA by default" in note, note


@pytest.mark.parametrize("framework,placed", [("swift==3.3.1", True), ("swift==3.4.1", True),
                                              ("swift==3.10.3", False), ("swift==4.6.0", False)])
def test_tuner_backend_unsloth_with_grpo_is_said_with_the_maintainers_word(framework, placed):
    """ms-swift #3183 (GRPO with --tuner_backend unsloth, OOM on 8 x A800; the maintainer: 'unsloth is not support in
    grpo'): every release accepts the flag (BaseArguments.tuner_backend) and no GRPO code reads it; before 3.7.0
    load_by_unsloth leaves Unsloth's device_map 'sequential', which starts every rank's copy on GPU 0 (3.7.0 on
    pass --device_map). check says so and prices it as peft (same peaks as without the flag); --tuner_backend peft
    says nothing."""
    cmd = ["NPROC_PER_NODE=4", "swift", "rlhf", "--rlhf_type", "grpo", "--train_type", "lora",
           "--per_device_train_batch_size", "4", "--num_generations", "4"]
    unsloth = api.check([*cmd, "--tuner_backend", "unsloth"], framework=framework, gpu="a800", model="qwen2.5-7b")
    said = [n for n in unsloth.notes if n.startswith("--tuner_backend unsloth with GRPO")]
    assert len(said) == 1 and "ms-swift issue #3183" in said[0]
    assert ("'sequential'" in said[0] and "GPU 0" in said[0]) is placed
    assert "is priced as with the default --tuner_backend peft" in said[0]
    peft = api.check([*cmd, "--tuner_backend", "peft"], framework=framework, gpu="a800", model="qwen2.5-7b")
    assert not [n for n in peft.notes if "unsloth" in n]
    assert unsloth.memory.peaks == peft.memory.peaks
    unpriced = api.check([*cmd, "--tuner_backend", "unsloth"], framework=framework)
    assert [n for n in unpriced.notes if "would be priced as with the default --tuner_backend peft" in n]


def test_an_explicit_bf16_lora_dtype_is_kept_from_4_5_and_upcast_before():
    """ms-swift's LoRA adapter is fp32 (peft's get_peft_model upcast): two fp32 AdamW moments without DeepSpeed.
    ``--lora_dtype bfloat16`` keeps it bf16 from 4.5.0 (tuners/peft.py _cast_adapter_dtype_hook); 4.4.2 and 3.x apply
    it inside LoraModel.__init__, before PeftModel.__init__ upcasts it again."""
    from rlbatch_solver.catalog.models import load_model

    args = ["--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B-Instruct", "--tuner_type", "lora",
            "--per_device_train_batch_size", "2", "--num_generations", "8", "--use_vllm", "false"]
    lora = load_model("qwen2.5-7b").lora_params(8, "all-linear")

    def moments(framework, extra=()):
        mem = rb.check([*args, *extra], framework=framework, gpus=1, model="qwen2.5-7b", gpu="a100-80gb").memory
        return mem.phases["actor_update"]["optimizer states (sharded)"] * 2**20 / lora

    assert moments("swift") == pytest.approx(8, rel=0.01)
    assert moments("swift", ["--lora_dtype", "bfloat16"]) == pytest.approx(4, rel=0.01)
    assert moments("swift==4.4.2", ["--lora_dtype", "bfloat16"]) == pytest.approx(8, rel=0.01)
    assert moments("swift", ["--lora_dtype", "float16"]) == pytest.approx(8, rel=0.01)


def test_a_script_without_nproc_keeps_its_visible_gpus_for_where_vllm_runs():
    """ms-swift's internal/lora_vllm.sh ("GPU memory: 2 * 80GiB"): CUDA_VISIBLE_DEVICES=0,1, no NPROC_PER_NODE, so one
    training process; 3.2-3.4 (its flags date it there) put vLLM on the visible GPU past the training rank ("async
    mode", rlhf_args.py _check_grpo). The visible GPUs were dropped with the process count: vLLM was priced on the
    training GPU, check said OOM (92 GiB actor update) and fix turned vLLM off."""
    path = SCRIPTS / "internal_lora_vllm.sh"
    proc = run("check", "--gpu", "h100", "--json", path)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["valid"], proc.stdout + proc.stderr
    assert "job's own vLLM GPU" in run("check", "--gpu", "h100", path).stdout
    # the same answer as the GPU count given by hand
    given = json.loads(run("check", "--gpu", "h100", "--gpus", "2", "--json", path).stdout)
    assert given["valid"] and given.get("memory") == data.get("memory")

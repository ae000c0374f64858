"""TRL 1.16.0 GRPO: its rules (one breaking case and one passing case each), accelerate's world size and backend,
the --config YAML, launch scripts, explain, fix, and the cost inputs (LoRA, vLLM sleep, beta)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlbatch_solver as rb
from clirun import run
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.trl.rules import RULESET
from rlbatch_solver.launch_script import parse_launch_script

ROOT = Path(__file__).resolve().parents[1]
BASE = ["--per_device_train_batch_size", "4", "--num_generations", "8", "--gradient_accumulation_steps", "2"]


def check(*flags, gpus=8, **kw):
    """TRL 1.16.0's verdict (named: a config with older fields would otherwise be dated to its release)."""
    return rb.check([*BASE, *flags], framework="trl==1.16.0", gpus=gpus, **kw)


def broken(result) -> set[str]:
    return {v.rule for v in result.violations}


def test_rules_doc_is_in_sync():
    proc = run("rules", "--framework", "trl", "--markdown")
    assert proc.stdout == (ROOT / "docs" / "rules-trl.md").read_text()


def test_every_rule_cites_trl_and_a_stage():
    for rule in RULESET.rules:
        assert rule.id.startswith("trl."), rule.id
        assert rule.source and ("trl/" in rule.source or "vLLM" in rule.source), rule.id


# (flags, gpus, the rule broken); the passing case is the same flags with the fix in `ok`
CASES = [
    (["--max_prompt_length", "512"], 8, "trl.config.removed_fields", ["--max_completion_length", "512"]),
    (["--auto_find_batch_size", "true"], 8, "trl.config.auto_find_batch_size_unsupported", ["--auto_find_batch_size", "false"]),
    (["--generation_batch_size", "64", "--steps_per_generation", "2"], 8, "trl.config.gen_and_spg_exclusive",
     ["--generation_batch_size", "64"]),
    (["--generation_batch_size", "40"], 8, "trl.config.gen_divisible_by_global_batch", ["--generation_batch_size", "64"]),
    (["--per_device_train_batch_size", "3", "--gradient_accumulation_steps", "1"], 6,
     "trl.config.gen_divisible_by_num_generations", ["--per_device_train_batch_size", "4"]),
    (["--num_generations", "1"], 8, "trl.config.num_generations_at_least_two", ["--num_generations", "2"]),
    (["--eval_strategy", "steps", "--per_device_eval_batch_size", "3"], 2,
     "trl.config.eval_batch_divisible_by_num_generations_eval", ["--eval_strategy", "steps", "--per_device_eval_batch_size", "4"]),
    (["--sync_ref_model", "true"], 8, "trl.trainer.sync_ref_model_needs_beta", ["--sync_ref_model", "true", "--beta", "0.04"]),
    (["--sync_ref_model", "true", "--beta", "0.04", "--use_peft"], 8, "trl.trainer.sync_ref_model_not_with_peft",
     ["--sync_ref_model", "true", "--beta", "0.04"]),
    (["--use_vllm", "--vllm_tensor_parallel_size", "3"], 6 * 1 + 2, "trl.vllm.colocate_tp_divides_world",
     ["--use_vllm", "--vllm_tensor_parallel_size", "2"]),
    # `trl grpo` builds GRPOConfig at world size 1 first: 2 completions per rollout there, not 16
    (["trl", "grpo", "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "1"], 8,
     "trl.frontend.gen_divisible_by_num_generations",
     ["trl", "grpo", "--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "1"]),
    (["trl", "grpo", "--eval_strategy", "steps", "--per_device_eval_batch_size", "2"], 8,
     "trl.frontend.eval_batch_divisible_by_num_generations_eval",
     ["trl", "grpo", "--eval_strategy", "steps", "--per_device_eval_batch_size", "8"]),
    (["--use_liger_kernel", "true", "--liger_kernel_config", '{"fused_linear_cross_entropy": true}'], 8,
     "trl.liger.no_fused_linear_cross_entropy",
     ["--use_liger_kernel", "true", "--liger_kernel_config", '{"rms_norm": true, "fused_linear_cross_entropy": false}']),
]


def test_do_eval_false_does_not_turn_off_the_eval_check_of_an_eval_strategy():
    """transformers' TrainingArguments turns do_eval back on whenever an eval strategy is set, so TRL checks the eval
    batch against num_generations_eval with --do_eval false too."""
    r = check("--eval_strategy", "steps", "--do_eval", "false", "--per_device_eval_batch_size", "3", gpus=2)
    assert "trl.config.eval_batch_divisible_by_num_generations_eval" in broken(r)


def test_the_same_flags_under_accelerate_launch_pass_where_trl_grpo_fails():
    flags = ["--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "1"]
    assert check("accelerate", "launch", "grpo.py", *flags).valid
    assert not check("trl", "grpo", *flags).valid
    notes = check(*flags).notes
    assert any("the command is not given: checked as `accelerate launch grpo.py`" in n for n in notes)


def test_flag_prefixes_are_read_as_trls_parser_reads_them_and_unknown_flags_are_named():
    r = check("--vllm_max_model_len", "4096", "--per_device_eval", "8")
    assert "trl.config.removed_fields" not in broken(r)  # vllm_max_model_len is a prefix of vllm_max_model_length
    assert any("--vllm_max_model_len read as --vllm_max_model_length" in n for n in r.notes)
    assert any("--per_device_eval read as --per_device_eval_batch_size" in n for n in r.notes)
    r = check("--my_reward_weight", "2")
    assert any("ignored" in n and "--my_reward_weight" in n for n in r.notes)
    with pytest.raises(rb.InputError, match="ambiguous"):
        check("--vllm_", "1")


def test_a_removed_field_in_a_config_file_is_ignored_by_grpo_py_but_stops_trl_grpo(tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("max_prompt_length: 512\nper_device_train_batch_size: 4\n")
    launched = check("accelerate", "launch", "grpo.py", "--config", str(cfg))
    assert "trl.config.removed_fields" not in broken(launched)
    assert any("ignores keys of a config file" in n for n in launched.notes)
    assert "trl.config.removed_fields" in broken(check("trl", "grpo", "--config", str(cfg)))
    assert "trl.config.removed_fields" in broken(check("--max_prompt_length", "512"))


@pytest.mark.parametrize("flags,gpus,rule,ok", CASES, ids=[c[2] for c in CASES])
def test_rule_breaks_and_holds(flags, gpus, rule, ok):
    assert rule in broken(check(*flags, gpus=gpus))
    assert rule not in broken(check(*ok, gpus=gpus))


def test_every_rule_has_a_case_or_needs_a_model_or_server():
    covered = {c[2] for c in CASES} | {"trl.vllm.heads_divisible_by_tp", "trl.gpus.budget"} | set(LIGER_CASES.values())
    assert covered == {r.id for r in RULESET.rules}


def test_model_and_server_rules():
    heads = rb.check([*BASE, "--use_vllm", "--vllm_tensor_parallel_size", "8"], framework="trl", gpus=8,
                     model="qwen2.5-7b")  # 28 heads
    assert "trl.vllm.heads_divisible_by_tp" in broken(heads)
    server = ["--use_vllm", "--vllm_mode", "server", "--server.tensor_parallel_size", "2", "--num_processes", "7"]
    assert "trl.gpus.budget" in broken(rb.check([*BASE, *server], framework="trl", gpus=8))
    assert "trl.gpus.budget" not in broken(rb.check([*BASE, *server[:-1], "6"], framework="trl", gpus=8))


def test_world_size_from_accelerate():
    fw = get_framework("trl")
    # --num_processes is the processes of all machines
    v = fw.to_values(fw.parse(["--num_processes", "16", "--num_machines", "2", *BASE])[0], gpus=None, model=None)
    assert (v["gpus_per_node"], v["nnodes"]) == (8, 2)
    # TRL's own accelerate configs by name: 8 processes, and their backend
    v = fw.to_values(fw.parse(["--config_file", "examples/accelerate_configs/deepspeed_zero3.yaml", *BASE])[0],
                     gpus=None, model=None)
    assert (v["gpus_per_node"], v["ds_stage"]) == (8, 3)
    v = fw.to_values(fw.parse(["--config_file", "recipes/accelerate_configs/zero2.yaml", "--num_processes=7", *BASE])[0],
                     gpus=None, model=None)
    assert (v["gpus_per_node"], v["ds_stage"]) == (7, 2)
    v = fw.to_values(fw.parse(["--config_file", "trl/accelerate_configs/fsdp2.yaml", *BASE])[0], gpus=None, model=None)
    assert v["ds_stage"] == 3  # FSDP full sharding is counted as ZeRO-3
    with pytest.raises(rb.InputError if hasattr(rb, "InputError") else Exception):
        fw.to_values(fw.parse(BASE)[0], gpus=None, model=None)  # no process count anywhere


def test_accelerate_config_file_and_grpo_config_yaml_are_read(tmp_path):
    accel = tmp_path / "my_accel.yaml"
    accel.write_text("distributed_type: DEEPSPEED\nnum_processes: 4\nnum_machines: 1\n"
                     "deepspeed_config:\n  zero_stage: 3\n  offload_optimizer_device: cpu\n")
    cfg = tmp_path / "config_demo.yaml"
    cfg.write_text("per_device_train_batch_size: 16\nnum_generations: 16\ngradient_accumulation_steps: 4\n"
                   "max_completion_length: 1024\n")
    fw = get_framework("trl")
    v = fw.to_values(fw.parse(["--config_file", str(accel), "--config", str(cfg), "--num_generations", "8"])[0],
                     gpus=None, model=None)
    assert (v["gpus_per_node"], v["ds_stage"], v["ds_offload"]) == (4, 3, True)
    assert (v["per_device_train_batch_size"], v["gradient_accumulation_steps"]) == (16, 4)
    assert v["num_generations"] == 8  # the flag overrides the YAML, as TrlParser does
    assert v["max_completion_length"] == 1024


def test_launch_scripts_are_read():
    s = parse_launch_script(
        "accelerate launch --config_file recipes/accelerate_configs/zero2.yaml --num_processes=7 \\\n"
        "  src/open_r1/grpo.py --per_device_train_batch_size 16 --num_generations 14 --use_vllm \\\n"
        "  --vllm_mode server --model_name_or_path Qwen/Qwen2.5-1.5B-Instruct\n")
    assert s.framework == "trl" and "--num_processes=7" in s.args and s.model == "Qwen/Qwen2.5-1.5B-Instruct"
    r = rb.check(s.args, framework="trl", gpus=8)
    assert r.valid and r.values["gpus_per_node"] == 7
    t = parse_launch_script("trl grpo --per_device_train_batch_size 2 --num_generations 4 --num_processes 4\n")
    assert t.framework == "trl"


def test_cost_inputs_follow_trl_defaults():
    fw = get_framework("trl")
    v = fw.to_values(fw.parse([*BASE, "--num_processes", "8"])[0], gpus=None, model=None)
    assert (v["kl_on"], v["lora_rank"], v["gmu_permille"], v["sleep_level"], v["grad_ckpt"]) == (False, 0, 300, 0, True)
    v = fw.to_values(fw.parse([*BASE, "--num_processes", "8", "--use_peft", "--beta", "0.04",
                               "--vllm_enable_sleep_mode", "true"])[0], gpus=None, model=None)
    assert (v["kl_on"], v["lora_rank"], v["lora_qv"], v["sleep_level"]) == (True, 16, True, 2)


def test_memory_uses_trl_names_and_lora_shrinks_the_update():
    full = check("--beta", "0.04", model="qwen2.5-7b", gpu="a100-80gb")
    lora = check("--beta", "0.04", "--use_peft", model="qwen2.5-7b", gpu="a100-80gb")
    assert any(v.rule.startswith("trl.memory.") for v in full.violations)
    # without DeepSpeed: bf16 AdamW keeps 8 B/param and beta loads a 2 B/param reference; LoRA keeps the 2 B/param
    # base, its q/v adapter's states, and no reference (7.6B params: about 57 GiB less)
    assert full.memory.peaks["actor_update"] - lora.memory.peaks["actor_update"] > 50 * 1024


def test_old_trl_message_is_explained_with_its_numbers():
    proc = run("explain", "ValueError: The global train batch size (3 x 4) must be evenly divisible by the number of "
               "generations per prompt (8).")
    assert proc.returncode == 0 and "trl.trainer.global_batch_divisible_by_num_generations" in proc.stdout
    assert "12 completions" in proc.stdout and "0.16.1 rules" in proc.stdout


def test_fix_repairs_a_bad_generation_batch_with_one_key():
    r = rb.fix([*BASE, "--generation_batch_size", "40"], framework="trl", gpus=8, time_limit_s=10)
    assert r.after is not None and r.proven and len(r.native_changes) == 1, r.native_changes
    key, _, new = r.native_changes[0]
    fixed = rb.check([*BASE, f"--{key}", str(new)] if new is not None else BASE, framework="trl", gpus=8)
    assert fixed.valid


def test_recommend_gives_a_valid_trl_config():
    proc = run("recommend", "--framework", "trl", "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-1.5b",
               "--n", "8", "--prompt-len", "512", "--response-len", "1024", "--time-limit", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--num_processes 8" in proc.stdout


def test_enumerate_equals_the_checker_on_small_spaces():
    """CP-SAT (enumerate) and the checker agree on every config of small spaces over every TRL rule."""
    from bruteforce import assert_enumerate_equals_checker

    base = {name: [spec.default] for name, spec in RULESET.variables.items()}
    base.update({"num_heads": [12], "num_kv_heads": [2], "cluster_num_gpus": [8]})
    spaces = [
        {"gpus_per_node": [2, 3, 4, 6], "per_device_train_batch_size": [1, 2, 3, 4],
         "gradient_accumulation_steps": [1, 2, 3], "num_generations": [1, 2, 4, 6],
         "generation_batch_size": [None, 8, 12, 24], "steps_per_generation": [None, 2]},
        {"gpus_per_node": [2, 4, 6, 8], "use_vllm": [False, True], "vllm_server": [False, True],
         "vllm_tp": [1, 2, 3, 4], "server_tp": [1, 2], "server_dp": [1, 2], "eval_on": [False, True],
         "per_device_eval_batch_size": [1, 3, 4], "num_generations_eval": [None, 4]},
        {"auto_find_batch_size": [False, True], "sync_ref_model": [False, True], "kl_on": [False, True],
         "use_peft": [False, True], "num_generations": [2, 3], "per_device_train_batch_size": [3, 4]},
        # the refusals beside the Liger flag, each gated by the release that runs (versions.LIGER_REFUSES)
        {"liger_peft_refused": [False, True], "use_peft": [False, True], "liger_bnpo_only": [False, True],
         "loss_bnpo": [False, True], "liger_no_two_sided": [False, True], "two_sided": [False, True],
         "liger_no_entropy_mask": [False, True], "entropy_mask": [False, True], "num_generations": [2, 3]},
        {"liger_token_level_only": [False, True], "token_level_is": [False, True],
         "liger_no_off_policy_mask": [False, True], "off_policy_mask": [False, True],
         "liger_no_fused_ce": [False, True], "liger_fused_ce": [False, True], "num_generations": [2, 3]},
    ]
    for space in spaces:
        assert_enumerate_equals_checker(RULESET, {**base, **space})


EXAMPLES = __import__("yaml").safe_load((ROOT / "tests/data/trl/examples.yaml").read_text())


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_published_examples_get_their_verdict_and_fit_their_gpus(ex):
    r = rb.check([*ex["args"], *(["--max_prompt_length", str(ex["prompt"])] if "prompt" in ex else [])],
                 framework="trl", gpus=ex["gpus"], model=ex["model"], gpu=ex["gpu"])
    rule_breaks = {v.rule for v in r.violations if ".memory." not in v.rule}
    if ex["expect"] == "valid":
        # a recipe that sets max_prompt_length is dated to the release it was written for (versions.detect): valid there
        assert not rule_breaks, rule_breaks
        if "prompt" in ex:
            assert any(n.startswith("checked with the TRL 0.18.2 rules") for n in r.notes), r.notes
    else:
        assert rule_breaks == set(ex["expect"]["invalid"]), rule_breaks
    # the training GPUs hold the update at the recipe's lengths (a published, working run)
    assert r.memory is not None and r.memory.peaks["actor_update"] <= r.memory.capacity_mib, r.memory.peaks
    assert not [v for v in r.violations if ".memory." in v.rule], [v.message for v in r.violations]


def test_enumerate_and_sweep_work_with_trl(tmp_path):
    proc = run("enumerate", "--framework", "trl", "--gpus", "4", "--n", "4", "--time-limit", "10")
    assert proc.returncode == 0 and "valid configs for trl 1.16.0 on 4 GPUs" in proc.stdout
    grid = tmp_path / "grid.yaml"
    grid.write_text("framework: trl\ngpu: [h100]\ngpus: [4, 8]\nmodel: qwen2.5-1.5b\nalgorithm: grpo\nn: 8\n"
                    "prompt_length: 512\nresponse_length: 1024\n")
    out = tmp_path / "out.jsonl"
    proc = run("sweep", str(grid), "-o", str(out), "--no-progress")
    assert proc.returncode == 0 and "2 ok" in proc.stdout + proc.stderr
    assert len(out.read_text().splitlines()) == 2


def test_recommend_prints_a_grpo_config_yaml():
    proc = run("recommend", "--framework", "trl", "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-1.5b",
               "--n", "8", "--prompt-len", "512", "--response-len", "1024", "--time-limit", "10", "--verbose")  # the YAML copy is a detail
    fragment = proc.stdout.split("or, in a YAML config file:")[1]
    assert "num_generations: 8" in fragment and "num_processes" not in fragment


def test_fix_drops_fields_older_trl_had():
    r = rb.fix([*BASE, "--max_prompt_length", "512"], framework="trl==1.16.0", gpus=8, time_limit_s=10)
    assert r.after is not None and r.proven and len(r.native_changes) == 1, r.native_changes
    assert "--max_prompt_length" in r.native_after[0] and r.native_after[0].startswith("(drop")


def test_a_launch_script_that_runs_trl_grpo_is_checked_at_world_size_1_too(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\ntrl grpo --num_processes 8 --per_device_train_batch_size 2 "
                      "--gradient_accumulation_steps 1 --num_generations 8\n")
    r = run("check", str(script), "--json")
    import json

    assert "trl.frontend.gen_divisible_by_num_generations" in {v["rule"] for v in json.loads(r.stdout)["violations"]}


def test_recommend_chooses_the_distribution_and_dtype_and_prints_them_as_flags():
    """A 7B on 8 H100 does not fit as TRL runs by default (plain DDP, fp32 weights: 16 B/param before activations);
    recommend searches accelerate's DeepSpeed stage and the weights' dtype and writes them as the flags that set
    them, which check reads back to the same memory."""
    from rlbatch_solver.scenario import Scenario

    # prompts of 512 tokens: what check assumes for TRL 1.16, whose config carries no prompt limit
    sc = Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo", prompt_length=512)
    report = rb.recommend(sc, time_limit_s=20)
    best = report.best
    assert best is not None and best.values["ds_stage"] in (2, 3) and best.values["weights_fp32"] is False
    assert "--use_deepspeed" in best.native and f"--zero_stage {best.values['ds_stage']}" in best.native
    assert "--dtype bfloat16" in best.native
    back = rb.check(best.native, framework="trl", gpu="h100", model="qwen2.5-7b")
    assert back.valid
    for phase, peak in back.memory.peaks.items():
        assert peak == pytest.approx(best.memory[phase].peak(phase) / 2**20, abs=1)  # check prints whole MiB


@pytest.mark.parametrize("key, value", [("vllm_enable_sleep_mode", True), ("zero_stage", 3), ("use_deepspeed", True),
                                        ("dtype", "bfloat16")])
def test_a_memory_switch_the_user_sets_is_printed_once(key, value):
    """recommend --framework trl --set zero_stage=3 (or vllm_enable_sleep_mode, use_deepspeed, dtype) printed the flag
    twice: written from the answer and again as the user's fixed key."""
    from rlbatch_solver.commands.recommend import best_command
    from rlbatch_solver.frameworks.overrides import exported_pair
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                  prompt_length=1024, response_length=1024, fixed={key: value})
    keys = [exported_pair(w)[0] for w in best_command(rb.recommend(sc, time_limit_s=20))[1:]]
    assert keys.count(key) == 1, keys


def test_list_flags_survive_to_the_recommended_command(tmp_path):
    """TRL's HfArgumentParser gives a List field nargs='+' (--reward_funcs a b, --lora_target_modules q v): the second
    item was read as a stray token and dropped from the command recommend printed."""
    script = tmp_path / "run.sh"
    script.write_text("accelerate launch --num_processes 8 -m trl.scripts.grpo --model_name_or_path Qwen/Qwen2.5-7B "
                      "--dataset_name trl-lib/DeepMath-103K --reward_funcs accuracy_reward think_format_reward "
                      "--use_peft --lora_target_modules q_proj v_proj --per_device_train_batch_size 4 "
                      "--num_generations 8 --use_vllm --vllm_mode colocate\n")
    checked = run("check", script, "--gpu", "h100", "--model", "qwen2.5-7b")
    assert "not key=value" not in checked.stdout + checked.stderr
    out = run("recommend", "--from", script, "--gpu", "h100", "--model", "qwen2.5-7b").stdout
    assert "--reward_funcs accuracy_reward think_format_reward \\\n" in out
    assert "--lora_target_modules q_proj v_proj \\\n" in out
    # the --config YAML recommend also writes: a YAML list, as TrlParser fills a List field from it
    from rlbatch_solver.frameworks.overrides import ListFlag

    fragment = get_framework("trl").export_yaml([ListFlag("--reward_funcs", ["accuracy_reward", "think_format_reward"])])
    assert "reward_funcs:\n- accuracy_reward\n- think_format_reward\n" in fragment


def test_a_script_under_accelerate_launch_is_not_told_its_command_is_missing(tmp_path):
    """An open-r1 script (`accelerate launch --config_file zero3.yaml --num_processes=7 src/open_r1/grpo.py ...`)
    was told "the command is not given: checked as `accelerate launch grpo.py` runs it ... paste the command":
    the reader dropped the launcher's words. Pasted flags alone still get the note."""
    script = tmp_path / "run.sh"
    script.write_text("accelerate launch --config_file recipes/accelerate_configs/zero3.yaml --num_processes=7 "
                      "src/open_r1/grpo.py --model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --per_device_train_batch_size 1 "
                      "--gradient_accumulation_steps 16 --num_generations 8 --max_completion_length 1024\n")
    res = run("check", str(script))
    assert res.returncode == 0 and "the command is not given" not in res.stdout + res.stderr, res.stdout
    res = run("check", "--framework", "trl", "--gpus", "8", "--", "--per_device_train_batch_size", "1",
              "--num_generations", "8")
    assert "the command is not given" in res.stdout



def test_a_4bit_base_under_lora_is_priced_at_bitsandbytes_bytes_and_dequantized_every_decode_step():
    """--load_in_4bit with --use_peft: the frozen decoder weights at NF4 bytes (0.5625 B without double
    quantization, 0.516 B with it), not the load dtype's 2 B; generate on that base moves the packed bytes plus a
    16-bit copy written and read each decode step of more than one sequence (bitsandbytes' MatMul4Bit), the packed
    bytes only for one sequence (gemv_4bit); an engine of its own (16-bit checkpoint) reads 2 B."""
    from types import SimpleNamespace

    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.costmodel.memory import model_consts
    from rlbatch_solver.costmodel.time import decode_weight_bytes

    args = ["--num_processes", "1", "--per_device_train_batch_size", "8", "--num_generations", "8",
            "--max_completion_length", "256", "--use_peft", "true", "--lora_r", "32", "--lora_target_modules",
            "all-linear", "--dtype", "float16"]
    peaks = {}
    for extra in ([], ["--load_in_4bit", "true"], ["--load_in_4bit", "true", "--use_bnb_nested_quant", "true"]):
        r = rb.check([*args, *extra], framework="trl==0.29.1", gpus=1, model="qwen2.5-7b", gpu="a100-80gb")
        peaks[len(extra)] = r.memory.peaks["actor_update"] * 2**20
    mc = model_consts(load_model("qwen2.5-7b"))
    decoder = mc.params - mc.embed - mc.lm_head
    # and the adapter: fp32 over the 16-bit base (peft's autocast_adapter_dtype upcast), bf16 over the 4-bit one (TRL
    # >= 0.26 casts a quantized base's trainable parameters to bf16): its weight and two AdamW moments (the gradient
    # is freed before this peak, one micro batch a step)
    adapter = (C.FP32 - C.BF16) * 3 * load_model("qwen2.5-7b").lora_params(32, "all-linear")
    assert peaks[0] - peaks[2] == pytest.approx((C.BF16 - C.NF4_PLAIN_BYTES) * decoder + adapter, rel=0.01)
    assert peaks[2] - peaks[4] == pytest.approx((C.NF4_PLAIN_BYTES - C.NF4_BYTES) * decoder, rel=0.01)
    # no dtype given: TRL < 1.0 leaves it to transformers' bitsandbytes quantizer (float16), TRL 1.16 loads float32
    untyped = [a for a in args if a not in ("--dtype", "float16")] + ["--load_in_4bit", "true"]
    old = rb.check(untyped, framework="trl==0.29.1", gpus=1, model="qwen2.5-7b", gpu="a100-80gb")
    assert old.memory.peaks["actor_update"] * 2**20 == pytest.approx(peaks[2], rel=1e-6)
    new = rb.check(untyped, framework="trl==1.16.0", gpus=1, model="qwen2.5-7b", gpu="a100-80gb")
    half = rb.check([*untyped, "--dtype", "float16"], framework="trl==1.16.0", gpus=1, model="qwen2.5-7b",
                    gpu="a100-80gb")
    # (the update's peak: without vLLM, TRL 1.16 at num_iterations 1 runs no old log-prob forward)
    assert (new.memory.peaks["actor_update"] - half.memory.peaks["actor_update"]) * 2**20 >= (
        (C.FP32 - C.BF16) * (mc.embed + mc.lm_head) * 0.99)

    plan = SimpleNamespace(engine="hf", engine_shares_weights=False, base_weight_bytes=C.NF4_PLAIN_BYTES,
                           engine_base_bytes=0.0, fp8_base=False)
    w = float(mc.decode_weight_params)
    dense = w - decoder
    assert decode_weight_bytes(plan, mc, w, 8) == pytest.approx((C.NF4_PLAIN_BYTES + 2 * C.BF16) * decoder
                                                                + C.BF16 * dense)
    assert decode_weight_bytes(plan, mc, w, 1) == pytest.approx(C.NF4_PLAIN_BYTES * decoder + C.BF16 * dense)
    plan.engine = "vllm"
    assert decode_weight_bytes(plan, mc, w, 8) == pytest.approx(C.ROLLOUT_PARAM_BYTES * w)
    # an engine that quantizes its own copy (ms-swift 4.x's vLLM with quantization='bitsandbytes') runs the same method
    plan.engine_base_bytes = C.NF4_PLAIN_BYTES
    assert decode_weight_bytes(plan, mc, w, 8) == pytest.approx((C.NF4_PLAIN_BYTES + 2 * C.BF16) * decoder
                                                                + C.BF16 * dense)


def test_bnb_4bit_linears_cost_generate_host_time():
    """An eager generate on transformers' bitsandbytes 4-bit linears pays host time per quantized linear
    (time.bnb_linear_host_seconds; bitsandbytes' H100 benchmark: NF4 ~100 us a linear with more than one row,
    39 us on gemv_4bit, +40 us with double quantization); Unsloth's own kernels and 8-bit are not priced so.
    A host-bound step (the A100 row of TRL's QLoRA notebook) slows by it, through the QLoRA config."""
    from types import SimpleNamespace

    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C
    from rlbatch_solver.costmodel.memory import model_consts
    from rlbatch_solver.costmodel.time import bnb_linear_host_seconds

    mc = model_consts(load_model("qwen2.5-7b"))
    linears = C.BNB_LINEARS_PER_LAYER * mc.layers
    plan = SimpleNamespace(bnb_eager_linears=True, base_weight_bytes=C.NF4_PLAIN_BYTES)
    assert bnb_linear_host_seconds(plan, mc, 8) == pytest.approx(100e-6 * linears)
    assert bnb_linear_host_seconds(plan, mc, 1) == pytest.approx(39e-6 * linears)
    plan.base_weight_bytes = C.NF4_BYTES
    assert bnb_linear_host_seconds(plan, mc, 8) == pytest.approx(140e-6 * linears)
    plan.base_weight_bytes = C.INT8_BYTES
    assert bnb_linear_host_seconds(plan, mc, 8) == 0.0
    plan.base_weight_bytes, plan.bnb_eager_linears = C.NF4_BYTES, False
    assert bnb_linear_host_seconds(plan, mc, 8) == 0.0

    args = ["--num_processes", "1", "--per_device_train_batch_size", "8", "--num_generations", "8",
            "--max_completion_length", "256", "--use_peft", "true", "--lora_r", "32", "--lora_target_modules",
            "all-linear", "--dtype", "float16", "--load_in_4bit", "true", "--use_bnb_nested_quant", "true"]
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.efficiency import DERIVED_EFFICIENCY
    from rlbatch_solver.costmodel.phase import Phase

    def rollout(a):
        run = make_run("trl==0.26.2", a, gpu="a100-80gb", model="qwen2.5-7b", gpus=1, response_mean=256)
        return run.predict(DERIVED_EFFICIENCY).seconds[Phase.ROLLOUT]

    # 8 completions of 256 tokens: every decode step of the host-bound generate pays 196 linears x 140 us more
    assert rollout(args) - rollout(args[:-4]) >= 250 * 140e-6 * linears


def test_liger_grpo_loss_replaces_the_update_logits_only():
    """Liger's chunked GRPO loss (costmodel/constants.py LIGER_GRPO_*): TRL 0.17-0.24 switch it on with
    use_liger_loss, 0.25-0.29 with use_liger_kernel; it prices one sequence's completion logits and the lm_head's
    gradients in the update, and leaves the old log-probs' logits alone. Before 0.17 neither flag does anything,
    nor use_liger_kernel at 0.19 (layer kernels only: the log-probs pass no labels)."""
    from rlbatch_solver.costmodel import constants as C

    args = ["--num_processes", "1", "--per_device_train_batch_size", "8", "--num_generations", "8",
            "--max_completion_length", "256", "--use_peft", "true", "--lora_target_modules", "all-linear",
            "--dtype", "bfloat16"]

    def logits(extra, framework):
        ph = rb.check(args + extra, framework=framework, model="qwen2.5-7b", gpu="a100-40gb").memory.phases
        return ph["actor_update"]["logits"], ph.get("old_log_prob", {}).get("logits+entropy")

    vocab, hidden = 152064, 3584  # qwen2.5-7b
    liger = (256 * vocab * C.LIGER_GRPO_BYTES_PER_LOGIT + C.LIGER_GRPO_WEIGHT_GRAD_COPIES * vocab * hidden * C.BF16
             + C.LIGER_GRPO_INPUT_GRAD_COPIES * 8 * 256 * hidden * C.BF16) / 2**20
    plain = logits([], "trl==0.29.1")
    on = logits(["--use_liger_kernel", "true"], "trl==0.29.1")
    assert on[0] == round(liger) and on[0] < plain[0] and on[1] == plain[1]
    assert logits(["--use_liger_loss", "true"], "trl==0.19.1") == on
    assert logits(["--use_liger_kernel", "true"], "trl==0.19.1") == logits([], "trl==0.19.1")
    assert logits(["--use_liger_kernel", "true"], "trl==0.16.1") == logits([], "trl==0.16.1")


def test_the_liger_loss_switch_is_the_running_releases_not_its_packs():
    """The 0.29.1 pack judges TRL 0.22.2-0.28.0, but which flag switches Liger's GRPO loss is the running release's
    (grpo_trainer.py GRPOTrainer.__init__ of each wheel): use_liger_loss up to 0.24 (use_liger_kernel only patches
    layers there), use_liger_kernel from 0.25 with use_liger_loss its alias that wins when given, until 0.28 drops
    it; none from 1.13."""
    from rlbatch_solver.frameworks.trl import versions

    assert versions.liger_loss_flags("0.24.0") == ("use_liger_loss",)
    assert versions.liger_loss_flags("0.27.2") == ("use_liger_loss", "use_liger_kernel")
    assert versions.liger_loss_flags("0.29.1") == versions.liger_loss_flags("1.0.0") == ("use_liger_kernel",)
    assert versions.liger_loss_flags("1.16.0") == versions.liger_loss_flags("0.16.1") == ()
    args = ["--num_processes", "1", "--per_device_train_batch_size", "8", "--num_generations", "8",
            "--max_completion_length", "256", "--use_peft", "true", "--lora_target_modules", "all-linear",
            "--dtype", "bfloat16"]

    def update_logits(extra, framework):
        report = rb.check(args + extra, framework=framework, model="qwen2.5-7b", gpu="a100-40gb")
        return report.memory.phases["actor_update"]["logits"]

    on = update_logits(["--use_liger_kernel", "true"], "trl==0.29.1")
    for release in ("0.22.2", "0.24.0"):
        plain = update_logits([], f"trl=={release}")
        assert on < plain
        assert update_logits(["--use_liger_kernel", "true"], f"trl=={release}") == plain
        assert update_logits(["--use_liger_loss", "true"], f"trl=={release}") == on
    assert update_logits(["--use_liger_kernel", "true"], "trl==0.25.1") == on
    assert update_logits(["--use_liger_loss", "true"], "trl==0.25.1") == on
    assert update_logits(["--use_liger_kernel", "true", "--use_liger_loss", "false"], "trl==0.25.1") == \
        update_logits([], "trl==0.25.1")


QLORA_7B_ON_A_4090 = dict(framework="trl", gpu="rtx4090", gpus=1, model="qwen2.5-7b", algorithm="grpo",
                          fixed={"use_peft": "true", "load_in_4bit": "true"})


def test_a_tight_vllm_answer_searches_transformers_generate_too():
    """QLoRA 7B on one RTX 4090: the default search (vLLM only) answered vLLM colocate, tight (KV cache starved:
    the engine's bf16 copy beside the trained 4-bit model) and said no config of the search space had headroom,
    while use_vllm=false (GRPOConfig's default) is roomy at a small cost: a tight answer searches that arm too, and
    says so."""
    from rlbatch_solver.scenario import Scenario

    report = rb.recommend(Scenario(**QLORA_7B_ON_A_4090), time_limit_s=20)
    best = report.best
    assert best.values["use_vllm"] is False and "--use_vllm false" in best.native
    assert not report.margin_note.startswith("tight"), report.margin_note
    assert any(n.startswith("use_vllm=false (transformers' generate") and "searched too" in n and "tight" in n
               for n in report.key_notes), report.key_notes
    vllm = rb.recommend(Scenario(**{**QLORA_7B_ON_A_4090, "search": {"use_vllm": ["true"]}}), time_limit_s=20)
    # the roomy answer costs little against the tight vLLM one (it was faster before the step-time refit of verl's
    # ppo_epochs; now within a few per cent): a tight config is not returned where a roomy one exists at a small cost
    assert vllm.best.values["use_vllm"] is True and best.step_time_s < 1.10 * vllm.best.step_time_s, \
        (best.step_time_s, vllm.best.step_time_s)
    assert vllm.margin_note.startswith("tight"), vllm.margin_note


def test_the_users_use_vllm_stays_and_the_tight_note_names_the_arm_left_out():
    """--set use_vllm=true (or a vLLM setting) is the user's choice: the answer keeps it, and the tight note no longer
    claims the whole space has no headroom without naming the engine it did not search, and how to search it."""
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(**{**QLORA_7B_ON_A_4090, "fixed": {**QLORA_7B_ON_A_4090["fixed"], "use_vllm": "true"}})
    report = rb.recommend(sc, time_limit_s=20)
    assert report.best.values["use_vllm"] is True
    assert report.margin_note.startswith("tight") and "left out use_vllm=false" in report.margin_note
    assert "--search use_vllm=true,false" in report.margin_note
    # a setting only vLLM reads asks for vLLM as well
    sc = Scenario(**{**QLORA_7B_ON_A_4090, "fixed": {**QLORA_7B_ON_A_4090["fixed"],
                                                     "vllm_gpu_memory_utilization": 0.7}})
    report = rb.recommend(sc, time_limit_s=20)
    assert report.space.domains["use_vllm"] == [True] and "left out use_vllm=false" in report.margin_note


def test_a_roomy_answer_searches_vllm_only_and_an_unfit_one_both_engines():
    """The arm left out costs a second solve only where the answer lacks room: a LoRA 7B on an A100 keeps the vLLM-only
    space; a full 7B on one RTX 4090 fits neither engine, and the answer's proof covers both."""
    from rlbatch_solver.scenario import Scenario

    roomy = rb.recommend(Scenario(framework="trl", gpu="a100", gpus=1, model="qwen2.5-7b", algorithm="grpo",
                                  fixed={"use_peft": "true"}), time_limit_s=20)
    assert roomy.space.domains["use_vllm"] == [True] and not roomy.margin_note.startswith("tight")
    unfit = rb.recommend(Scenario(framework="trl", gpu="rtx4090", gpus=1, model="qwen2.5-7b", algorithm="grpo"),
                         time_limit_s=20)
    assert unfit.best is None and unfit.status == "infeasible"
    assert set(unfit.space.domains["use_vllm"]) == {True, False}
    assert any("searched too" in n and "no config fits" in n for n in unfit.key_notes), unfit.key_notes


def test_with_vllm_off_the_engines_own_settings_are_not_new_configs():
    """Both engines searched: a config without vLLM is one config, not one per vLLM memory share or sleep mode
    (settings GRPOTrainer reads only when it builds an engine): the answer's 'not listed' twins were such no-ops."""
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(**{**QLORA_7B_ON_A_4090, "search": {"use_vllm": ["true", "false"]}})
    report = rb.recommend(sc, time_limit_s=20)
    hf = [c for c in [*report.choices, *report.left_out] if not c.values["use_vllm"]]
    assert hf and all(c.values["sleep_level"] == 0 and c.values["gmu_permille"] == 300 for c in hf)
    assert not any("vllm_enable_sleep_mode" in " ".join(c.native) for c in hf)

# each refusal beside the Liger flag: the setting that breaks it, the rule
LIGER_CASES = {
    ("--use_peft", "true"): "trl.liger.no_peft",
    ("--loss_type", "grpo"): "trl.liger.bnpo_loss_only",
    ("--delta", "2.0"): "trl.liger.no_two_sided",
    ("--top_entropy_quantile", "0.2"): "trl.liger.no_entropy_mask",
    ("--importance_sampling_level", "sequence"): "trl.liger.token_level_only",
    ("--off_policy_mask_threshold", "0.5"): "trl.liger.no_off_policy_mask",
    ("--liger_kernel_config", '{"fused_linear_cross_entropy": true}'): "trl.liger.no_fused_linear_cross_entropy",
}
_TWO_SIDED_ENTROPY_TOKEN = {"trl.liger.no_two_sided", "trl.liger.no_entropy_mask", "trl.liger.token_level_only"}


@pytest.mark.parametrize("release,refused", [
    ("0.16.1", set()), ("0.17.0", {"trl.liger.no_peft", "trl.liger.bnpo_loss_only"}),
    ("0.18.2", {"trl.liger.no_two_sided"}), ("0.19.1", {"trl.liger.no_two_sided"}),
    ("0.20.0", _TWO_SIDED_ENTROPY_TOKEN), ("0.22.2", _TWO_SIDED_ENTROPY_TOKEN), ("0.24.0", _TWO_SIDED_ENTROPY_TOKEN),
    ("0.25.1", _TWO_SIDED_ENTROPY_TOKEN), ("0.26.2", _TWO_SIDED_ENTROPY_TOKEN),
    ("0.27.2", _TWO_SIDED_ENTROPY_TOKEN | {"trl.liger.no_off_policy_mask"}),
    ("0.29.1", _TWO_SIDED_ENTROPY_TOKEN | {"trl.liger.no_off_policy_mask"}),
    ("1.0.0", {"trl.liger.no_two_sided", "trl.liger.no_entropy_mask", "trl.liger.no_off_policy_mask"}),
    ("1.16.0", {"trl.liger.no_fused_linear_cross_entropy"}),
])
def test_liger_refusals_follow_the_release_that_runs(release, refused):
    """What GRPOConfig.__post_init__ / GRPOTrainer.__init__ refuse beside the Liger flag, by the release whose code
    runs (versions.LIGER_REFUSES, read in each wheel): PEFT and a loss_type other than bnpo in 0.17; delta 0.18-1.3;
    top_entropy_quantile < 1 from 0.20 and off_policy_mask_threshold from 0.27, to 1.13; a sequence-level importance
    ratio 0.20-0.29; liger_kernel_config's fused_linear_cross_entropy from 1.15. The 0.19.1 pack judges 0.20 and the
    0.29.1 pack 0.22-0.28, so the release named decides. Without the flag (or with 0.17-0.24's use_liger_kernel, a
    layer patch only) nothing is refused."""
    from rlbatch_solver.frameworks.trl import versions

    flag = versions.liger_flags(release)[-1] if versions.liger_flags(release) else "use_liger_loss"
    base = ["--num_processes", "2", "--per_device_train_batch_size", "4", "--num_generations", "4"]
    for setting, rule in LIGER_CASES.items():
        on = broken(rb.check([*base, *setting, f"--{flag}", "true"], framework=f"trl=={release}"))
        assert (rule in on) == (rule in refused), (setting, sorted(on))
        assert rule not in broken(rb.check([*base, *setting], framework=f"trl=={release}"))
        if release in ("0.22.2", "0.24.0"):  # transformers' use_liger_kernel: Liger's layer kernels, no loss
            assert rule not in broken(rb.check([*base, *setting, "--use_liger_kernel", "true"],
                                               framework=f"trl=={release}"))
    if release == "0.25.1":  # the deprecated alias, when given, decides (GRPOConfig.__post_init__)
        assert "trl.liger.no_two_sided" not in broken(rb.check(
            [*base, "--delta", "2", "--use_liger_kernel", "true", "--use_liger_loss", "false"], framework="trl==0.25.1"))
        assert "trl.liger.no_two_sided" in broken(rb.check(
            [*base, "--delta", "2", "--use_liger_loss", "true"], framework="trl==0.25.1"))


def test_liger_refusal_spans_and_messages():
    """The spans read in the wheels, at their edges (1.1-1.15 are read but no config is judged as them), and a message
    that names the setting and quotes TRL."""
    from rlbatch_solver.frameworks.trl import versions

    def gates(release):
        return {k for k, v in versions.liger_refusals(release, True).items() if v}

    assert gates("1.3.0") >= {"liger_no_two_sided"} and "liger_no_two_sided" not in gates("1.4.0")
    assert "liger_no_entropy_mask" in gates("1.13.0") and "liger_no_off_policy_mask" in gates("1.13.0")
    assert gates("1.14.2") == set() and gates("1.15.0") == {"liger_no_fused_ce"}
    assert not any(versions.liger_refusals("0.29.1", False).values())
    # the Liger path's flag outlives its loss: 1.13 on price no Liger loss, but still refuse beside use_liger_kernel
    assert versions.liger_flags("1.13.0") == versions.liger_flags("1.16.0") == ("use_liger_kernel",)
    assert versions.liger_loss_flags("1.12.0") == ("use_liger_kernel",) and versions.liger_loss_flags("1.13.0") == ()
    report = rb.check(["--num_processes", "2", "--per_device_train_batch_size", "4", "--num_generations", "4",
                       "--top_entropy_quantile", "0.2", "--use_liger_kernel", "true"], framework="trl==0.29.1")
    v = next(v for v in report.violations if v.rule == "trl.liger.no_entropy_mask")
    assert "entropy_mask = True" in v.message and "masking token positions based on entropy" in v.message
    assert v.source == "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__"


def test_a_bad_liger_kernel_config_names_the_field():
    proc = run("check", "--framework", "trl", "--gpus", "2", "--", "--use_liger_kernel", "true",
               "--liger_kernel_config", "[1, 2]")
    assert proc.returncode == 2 and "liger_kernel_config" in proc.stdout + proc.stderr


def test_an_answer_held_by_the_configs_own_rule_keeps_its_one_engine_and_no_engine_notes():
    """--set max_prompt_length=512 under TRL 1.16.0 (a field its GRPOConfig no longer has: trl.config.removed_fields)
    leaves no valid config whatever the engine: the wider search ran and found none, and the answer said 'use_vllm=false
    searched too: with use_vllm=true alone no config fits' and priced the no-vLLM arm's prompt, as if memory were why."""
    from rlbatch_solver.scenario import Scenario

    held = rb.recommend(Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo",
                                 fixed={"max_prompt_length": 512}), time_limit_s=20)
    assert held.best is None and held.status == "infeasible"
    assert held.conflict is not None and held.conflict.ids == ["trl.config.removed_fields"], held.conflict
    assert not any("use_vllm" in n for n in held.key_notes), held.key_notes


def test_a_search_of_both_engines_holds_each_arm_to_its_own_line():
    """use_vllm searched both ways: a vLLM rollout is held to capacity less the fixed margin (vLLM measures its
    budget at start-up), transformers' generate to capacity less the whole margin. The no-fit floor quotes the line
    of the arm it talks about (it quoted vLLM's 23.0 GiB beside a generate config's least, whose line is 21.8), the
    same floor each arm searched alone gives."""
    from rlbatch_solver.scenario import Scenario

    full = dict(framework="trl", gpu="rtx4090", gpus=1, model="qwen2.5-7b", algorithm="grpo")
    both = rb.recommend(Scenario(**full), time_limit_s=20)
    assert set(both.space.domains["use_vllm"]) == {True, False} and both.best is None
    alone = {v: rb.recommend(Scenario(**full, fixed={"use_vllm": v}), time_limit_s=20).memory_floor["trl.memory.rollout"]
             for v in ("true", "false")}
    assert alone["true"][1] != alone["false"][1]  # the two lines differ
    assert both.memory_floor["trl.memory.rollout"] == min(alone.values(), key=lambda a: a[0] - a[1])
    proc = run("recommend", "-f", "trl", "--gpu", "rtx4090", "--gpus", "1", "--model", "qwen2.5-7b", "--algo", "grpo")
    least, line = both.memory_floor["trl.memory.rollout"]
    assert f"the nearest needs {least / 1024:.1f} GiB per GPU, {(least - line) / 1024:.1f} GiB more than its " \
           f"{line / 1024:.1f} GiB usable" in proc.stdout, proc.stdout


def test_an_optimizer_only_zero3_offload_keeps_the_policys_and_the_references_params_on_the_gpu():
    """accelerate's ZeRO-3 with offload_optimizer_device cpu and offload_param_device none (a common config) moves
    the optimizer states alone: the policy's sharded params and the reference's (prepared with a copy of the same
    DeepSpeed config) stay on the GPU, priced as without offload; offload_param_device cpu moves them."""
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.memory import estimate_memory

    base = ["--per_device_train_batch_size", "8", "--num_generations", "8", "--beta", "0.04", "--use_deepspeed",
            "--zero_stage", "3"]

    def params(optimizer, param, phase="old_log_prob"):
        run = make_run("trl", [*base, "--offload_optimizer_device", optimizer, "--offload_param_device", param],
                       gpu="a100-80gb", model="qwen2.5-7b", gpus=8)
        terms = estimate_memory(run.spec.plan(run.values, phase)).phases[phase]
        return (terms.get("params (sharded)", 0.0), terms.get("ref params (resident)", 0.0)), sum(terms.values())

    for phase in ("old_log_prob", "actor_update"):
        kept, total_opt = params("cpu", "none", phase)
        resident, total_none = params("none", "none", phase)
        moved, total_both = params("cpu", "cpu", phase)
        assert kept == resident and min(kept) > 0, (phase, kept, resident)
        assert moved[0] == 0 and moved[1] == 0, (phase, moved)
        assert total_both < total_opt < total_none  # the optimizer's states leave in both offloads

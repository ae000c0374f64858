"""``explain``: pasted framework errors map to our rules; with the config, a fix."""

import json
from pathlib import Path

import pytest

from rlbatch_solver.api import explain
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.error_text import all_patterns, match_error

PATTERNS = all_patterns()  # every framework's messages (each framework folder's errors.py)

from clirun import run
from test_verl_rules import AR, SEED_4090, replace


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: f"{p.framework}:{p.rules[0]}")
def test_every_pattern_matches_its_message_and_names_real_rules(pattern):
    assert pattern.match(pattern.example), pattern.example
    # a message only some versions print names the rules of those versions (verl's version packs)
    for version in pattern.versions or (None,):
        fw = get_framework(pattern.framework if version is None else f"{pattern.framework}=={version}")
        for rid in pattern.rules:
            fw.ruleset.rule(rid)  # KeyError if the rule id drifted


def test_numbers_are_picked_out_of_the_message():
    found = match_error("AssertionError: real_train_batch_size (260) must be divisible by minimal possible batch size (8)")
    assert [p.rules for p, _ in found] == [("verl.driver.batch_divisible_by_gpus", "verl.megatron.driver_batch_divisible")]
    assert found[0][1] == {"samples": "260", "minimal": "8"}


def test_explain_with_config_names_the_broken_rule_and_fixes_it():
    cfg = replace(SEED_4090, f"{AR}.actor.ppo_micro_batch_size_per_gpu", 24)
    r = explain("AssertionError: data size must be divisible by force_group_size * micro_batch_size_per_gpu",
                framework="verl", config=cfg, gpus=4)
    assert [x.rule for x in r.rules] == ["verl.step.mini_divisible_by_micro"]
    assert r.fix is not None and r.fix.after is not None and len(r.fix.changes) == 1


def test_unknown_message_and_bad_input():
    assert not explain("CUDA error: an illegal memory access was encountered").matched
    with pytest.raises(InputError) as e:
        explain("   ")
    assert e.value.field == "error line"  # the name the help and the web form give it
    with pytest.raises(InputError):
        explain("x", framework="nope")


def run_cli(*args):
    return run(*args)


def test_cli_explain():
    p = run_cli("explain", "--json", "ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert "verl.actor.mini_le_train" in [r["rule"] for r in data["rules"]]
    assert run_cli("explain", "something else entirely").returncode == 1
    bad = run_cli("explain", "x", "--framework", "nope")
    assert bad.returncode == 2 and "framework" in bad.stderr


# ----------------------------------------------------------------------------- every framework
@pytest.mark.parametrize("pattern", [p for p in PATTERNS if p.numbers], ids=lambda p: f"{p.framework}:{p.rules[0]}")
def test_round_trip_message_to_rule_to_numbers(pattern):
    found = [(p, nums) for p, nums in match_error(pattern.example, pattern.framework) if p is pattern]
    assert found, pattern.example
    nums = found[0][1]
    assert set(pattern.numbers) <= set(nums)
    said = pattern.explain(nums)
    assert said and all(nums[k] in said for k in pattern.numbers), said


def test_every_framework_has_messages():
    assert {p.framework for p in PATTERNS} >= {"verl", "swift", "swift-megatron", "openrlhf"}
    openrlhf = {r for p in PATTERNS if p.framework == "openrlhf" for r in p.rules}
    assert {"openrlhf.deepspeed.ref_batch", "openrlhf.driver.sample_batches_cover_actor",
            "openrlhf.driver.group_estimator_needs_n", "openrlhf.colocate.vllm_matches_actor"} <= openrlhf
    verl = {r for p in PATTERNS if p.framework == "verl" for r in p.rules}
    assert "verl.megatron.driver_batch_divisible" in verl


DS = ("AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
      "gradient_acc_step * world_size 32 != 1 * 10 * 3")


def test_deepspeed_batch_assertion_with_the_openrlhf_config():
    import test_openrlhf
    import yaml
    from pathlib import Path

    ex = yaml.safe_load((Path(__file__).parent / "data" / "openrlhf" / "broken.yaml").read_text())["grpo_3gpu"]
    r = explain(DS, config=test_openrlhf.tokens(ex["flags"]), gpus=4)
    assert r.numbers == {"train": "32", "micro": "1", "grad_acc": "10", "world": "3"}
    assert [x.rule for x in r.rules] == ["openrlhf.deepspeed.ref_batch"]  # narrowed to what the config breaks
    assert "30 or 33" in r.meaning[0]
    assert r.fix.after is not None and [k for k, _, _ in r.fix.diff] == ["train.batch_size"]


def test_verl_megatron_minimal_batch_message_maps_to_the_megatron_rule():
    cfg = ["model_engine=megatron", "trainer.n_gpus_per_node=8", "data.train_batch_size=10", f"{AR}.rollout.n=3",
           f"{AR}.actor.ppo_mini_batch_size=10", f"{AR}.actor.ppo_micro_batch_size_per_gpu=2",
           f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=2", f"{AR}.actor.megatron.tensor_model_parallel_size=2",
           "algorithm.adv_estimator=grpo"]
    msg = "AssertionError: real_train_batch_size (30) must be divisible by minimal possible batch size (8)"
    for fw in ("verl", "verl-megatron"):
        r = explain(msg, framework=fw, config=cfg)
        assert [x.rule for x in r.rules] == ["verl.megatron.driver_batch_divisible"], fw
        assert r.numbers == {"samples": "30", "minimal": "8"} and "24 or 32" in r.meaning[0]
        assert r.fix.after is not None
    assert [x.rule for x in explain(msg, framework="verl-megatron").rules] == ["verl.megatron.driver_batch_divisible"]


def test_swift_message_with_config_proposes_the_fix():
    import test_swift
    import yaml
    from pathlib import Path

    ex = yaml.safe_load((Path(__file__).parent / "data" / "swift" / "broken.yaml").read_text())["hf_colocate_tp3"]
    msg = "ValueError: vllm_tensor_parallel_size (3) must divide world size (8) evenly."
    r = explain(msg, framework="swift", config=test_swift.tokens(ex["flags"]), gpus=ex.get("gpus"))
    assert [x.rule for x in r.rules] == ["swift.rollout.colocate_tp_divides_world"]
    assert r.numbers == {"tp": "3", "world": "8"}
    assert [k for k, _, _ in r.fix.diff] == ["vllm_tensor_parallel_size"]


def test_cli_explain_reads_the_config_in_the_matched_frameworks_syntax():
    p = run_cli("explain", "--gpus", "4", "--json", DS, "--", "--actor.num_gpus_per_node", "3", "--ref.num_gpus_per_node",
                "3", "--train.colocate_actor_ref", "--vllm.num_engines", "1", "--train.agent_func_path", "A",
                "--algo.advantage.estimator", "group_norm", "--rollout.n_samples_per_prompt", "4",
                "--rollout.batch_size", "16", "--train.batch_size", "32", "--train.dynamic_batch_enable")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["rules"][0]["rule"] == "openrlhf.deepspeed.ref_batch" and data["fix"]["changes"]
    text = run_cli("explain", "AssertionError: group_norm requires n_samples_per_prompt > 1")
    assert text.returncode == 0 and "openrlhf.driver.group_estimator_needs_n" in text.stdout


def test_explain_without_config_names_the_numbers_it_needs():
    p = run_cli("explain", "AssertionError: normalized ppo_mini_batch_size should be divisible by "
                "ppo_micro_batch_size_per_gpu")
    # the legacy workers' message (verl 0.6-0.7; 0.9.1's engine says "data size must be divisible by ..."): their rules
    assert p.returncode == 0 and "verl.legacy.mini_divisible_by_micro" in p.stdout and "0.7.1 rules" in p.stdout
    assert "{" not in p.stdout and "<legacy_critic_micro>" in p.stdout and "paste it after --" in p.stdout


def test_openrlhf_unrecognized_underscore_flags_name_the_rename():
    """OpenRLHF 0.10.2+ refusing an old script's --micro_train_batch_size ("unrecognized arguments") matched no
    message; now the rename rule. A dotted flag refused (a new script on an old release) is not that rule."""
    line = "train_ppo_ray.py: error: unrecognized arguments: --micro_train_batch_size 8 --train_batch_size 128"
    r = explain(line, framework="openrlhf")
    assert [x.rule for x in r.rules] == ["openrlhf.driver.legacy_flag_names"]
    assert not explain("train_ppo_ray.py: error: unrecognized arguments: --train.micro_batch_size 8",
                       framework="openrlhf").matched


def test_a_mini_batch_of_zero_per_gpu_is_said_in_words_not_placeholders():
    res = run("explain", "AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization")
    assert res.returncode == 0
    words = next(line for line in res.stdout.splitlines() if line.startswith("in plain words:"))
    assert "<" not in words and "is 0" in words and "at least dp" in words, words


def test_trl_015_016_eval_batch_message_is_known():
    # TRL 0.16.1 grpo_trainer.py GRPOTrainer.__init__ (with an eval_strategy); it was "No known message matched"
    res = run("explain", "ValueError: The global eval batch size (4 x 8) must be evenly divisible by the number of "
              "generations per prompt (6). Given the current eval batch size, the valid values for the number of "
              "generations are: [2, 4, 8, 16, 32].")
    assert res.returncode == 0, res.stdout
    assert "trl.trainer.eval_batch_divisible_by_num_generations" in res.stdout
    assert "32 completions per eval batch do not split into groups of 6" in " ".join(res.stdout.split())


def test_trl_eval_batch_message_of_grpo_config_says_its_numbers():
    # TRL 1.16.0 grpo_config.py:1125 (per_device_eval_batch_size first); plain words were the rule's <placeholders>
    res = run("explain", "ValueError: The global eval batch size (4 * 3) must be divisible by the number of "
              "generations used for evaluation (8).")
    words = next(line for line in res.stdout.splitlines() if line.startswith("in plain words:"))
    assert "<" not in words and "12 completions per eval batch do not split into groups of 8" in words, words


def test_a_log_file_or_stdin_is_read_as_the_error(tmp_path):
    """`rlbatch explain job.log` matched the words "job.log" ("No known message matched"), and `explain - < job.log`
    the word "-": a log is where the error is. Now its end is read (a note says when it is cut)."""
    tail = ("Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\ntorch.OutOfMemoryError: CUDA out "
            "of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free.\n")
    log = tmp_path / "job.log"
    log.write_text("step:1 - x\n" * 40000 + tail)
    for args, stdin in (([str(log)], None), (["-"], log.read_text())):
        res = run("explain", *args, stdin=stdin)
        assert res.returncode == 0 and "CUDA out of memory" in res.stdout, res.stdout + res.stderr
        assert "tried 2.00 GiB, capacity 79.10 GiB" in res.stdout and "read the last 262,144 characters" in res.stderr


def test_a_yaml_config_or_a_missing_script_after_the_message_is_read_as_check_reads_it(tmp_path):
    """`rlbatch explain "<line>" -- cfg.yaml` said "nothing to explain (cfg.yaml is not an argument it takes)" where
    `rlbatch check cfg.yaml` reads the file, and a mistyped script path got the same words instead of "does not
    exist"."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("data:\n  train_batch_size: 64\nactor_rollout_ref:\n  actor:\n    ppo_mini_batch_size: 32\n"
                   "    ppo_micro_batch_size_per_gpu: 24\n  rollout:\n    n: 8\nalgorithm:\n  adv_estimator: grpo\n")
    line = "AssertionError: normalized ppo_mini_batch_size should be divisible by ppo_micro_batch_size_per_gpu"
    out = run("explain", line, "--gpus", "4", "--", str(cfg))
    assert out.returncode == 0, out.stderr
    assert "ppo_micro_batch_size_per_gpu=16" in out.stdout
    missing = run("explain", line, "--", str(tmp_path / "run_typo.sh"))
    assert missing.returncode == 2 and "' does not exist" in missing.stderr, missing.stderr


@pytest.mark.parametrize("message, kept, left", [
    ("ValueError: train_batch_size (32) must be >= actor.ppo_mini_batch_size (64)",
     "verl.actor.mini_le_train", "verl.critic.mini_le_train"),
    ("ValueError: train_batch_size (32) must be >= critic.ppo_mini_batch_size (64)",
     "verl.critic.mini_le_train", "verl.actor.mini_le_train"),
    ("ValueError: [actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'.",
     "verl.actor.micro_exactly_one", "verl.critic.micro_exactly_one"),
    ("[rollout] Please set at least one of 'rollout.log_prob_micro_batch_size' or "
     "'rollout.log_prob_micro_batch_size_per_gpu' if use_dynamic_bsz is not enabled.",
     "verl.rollout.logprob_micro_exactly_one", "verl.ref.logprob_micro_exactly_one"),
])
def test_a_message_naming_its_section_lists_only_that_sections_rules(message, kept, left):
    ids = [r.rule for r in explain(message).rules]
    assert kept in ids and left not in ids


def test_the_plain_words_are_said_once():
    """The verl divisibility message printed its plain words, then the same paragraph again under the rule's id."""
    res = run("explain", "AssertionError: normalized ppo_mini_batch_size should be divisible by "
              "ppo_micro_batch_size_per_gpu")
    words = next(line for line in res.stdout.splitlines() if line.startswith("in plain words:"))
    said = words.removeprefix("in plain words: ")
    assert res.returncode == 0 and res.stdout.count(said) == 1, res.stdout
    assert "mini_divisible_by_micro" in res.stdout and "source: verl/" in res.stdout


def test_plain_words_of_a_message_several_frameworks_print_each_name_their_framework():
    """TRL's and ms-swift Megatron's "generation_batch_size (12) must be divisible by num_generations (8)" are one
    message: without --framework both readings are printed, each with the framework it is (the swift-megatron one
    names --global_batch_size, a flag TRL has not); with --framework trl, one, unlabelled."""
    line = "ValueError: generation_batch_size (12) must be divisible by num_generations (8)."
    out = run("explain", line).stdout
    assert "in plain words (swift-megatron): --generation_batch_size 12" in out, out
    assert "in plain words (trl): 12 completions per rollout" in out, out
    one = run("explain", line, "--framework", "trl").stdout
    assert "in plain words: 12 completions per rollout" in one and "(trl):" not in one, one


def test_openrlhf_refusing_another_releases_flag_names_its_successor_or_says_drop_it():
    """0.11.2 refusing --bf16 (0.4.0 to 0.8.11) matched no message, and --enforce_eager (0.5.9 to 0.9.10) was read as
    a legacy underscore name to rename to a dotted one of the same spelling; check calls both
    openrlhf.launch.unknown_key, with the successor or none: explain says so too."""
    said = explain("train_ppo_ray.py: error: unrecognized arguments: --bf16 --enforce_eager").meaning
    assert said == [
        "openrlhf 0.11.2's parser has no --bf16 (a flag of OpenRLHF 0.4.0 to 0.8.11; bf16 is the default of "
        "--ds.param_dtype; no flag of the same meaning we know): drop it",
        "openrlhf 0.11.2's parser has no --enforce_eager (a flag of OpenRLHF 0.5.9 to 0.9.10): rename it "
        "--vllm.enforce_eager"], said
    legacy = explain("train_ppo_ray.py: error: unrecognized arguments: --micro_train_batch_size 8")
    assert [r.rule for r in legacy.rules] == ["openrlhf.driver.legacy_flag_names"]


def test_a_rules_source_is_said_once_where_the_message_comes_from_the_same_function():
    """TRL 0.15's batch message: "source: trl/trainer/grpo_trainer.py:GRPOTrainer.__init__ (message:
    trl/trainer/grpo_trainer.py:GRPOTrainer.__init__ (TRL 0.15-0.16; ...))" said the path twice."""
    report = explain("ValueError: The global train batch size (7 x 8) must be evenly divisible by the number of "
                     "generations per prompt (16). Given the current train batch size, the valid values for the "
                     "number of generations are: [2, 4, 7, 8, 14, 28, 56].", framework="trl")
    assert report.rules
    for rule in report.rules:
        assert "(message: " not in rule.source or not rule.source.split(" (message: ")[1].startswith(
            rule.source.split(" (message: ")[0]), rule.source
        assert rule.source.count("grpo_trainer.py:GRPOTrainer.__init__") == 1, rule.source


SWIFT_SCRIPTS = Path(__file__).resolve().parent / "data" / "scripts" / "swift"


@pytest.mark.parametrize("message, batch", [
    # ms-swift 3.3.1's GRPOTrainer.__init__ (W x B), 3.4.1's (W x B x GA): TRL 0.15/0.17's words, printed by ms-swift
    ("ValueError: The global train batch size (1 x 16) must be evenly divisible by the number of generations per "
     "prompt (32). Given the current train batch size, the valid values for the number of generations are: "
     "[2, 4, 8, 16].", "--per_device_train_batch_size 32"),
    ("ValueError: The effective train batch size (1 x 16 x 1) must be evenly divisible by the number of generations "
     "per prompt (32). Given the current effective train batch size, the valid values for the number of generations "
     "are: [2, 4, 8, 16].", "32"),
])
def test_an_old_ms_swift_batch_message_is_explained_with_the_users_script(tmp_path, message, batch):
    """ms-swift 3.2-3.4 print TRL's batch messages from their own trainer: pasted with an ms-swift script (its
    internal/lora_vllm.sh with --num_generations 32) explain said "No known message matched"."""
    script = tmp_path / "run.sh"
    script.write_text((SWIFT_SCRIPTS / "internal_lora_vllm.sh").read_text().replace("--num_generations 16",
                                                                                    "--num_generations 32"))
    res = run("explain", message, "--", str(script))
    assert res.returncode == 0 and "No known message matched" not in res.stdout, res.stdout + res.stderr
    assert "swift.trainer.batch_divisible_by_num_generations" in res.stdout
    assert "--num_generations" not in res.stdout.split("smallest fix:")[1] and batch in res.stdout, res.stdout


@pytest.mark.parametrize("message", [
    "ValueError: The global eval batch size (8 x 1) must be evenly divisible by the number of generations per prompt "
    "(16). Given the current eval batch size, the valid values for the number of generations are: [2, 4, 8].",
    "ValueError: The effective eval batch size (8 x 1) must be evenly divisible by the number of generations per "
    "prompt (16). Given the current effective eval batch size, the valid values for the number of generations are: "
    "[2, 4, 8].",
])
def test_an_old_ms_swift_eval_batch_message_names_its_rule(message):
    """ms-swift 3.3.1's and 3.4.1's GRPOTrainer.__init__ eval check (where an eval split is set): with --framework swift
    explain said "No known message matched"."""
    report = explain(message, framework="swift")
    assert [r.rule for r in report.rules] == ["swift.trainer.eval_batch_divisible_by_num_generations"], report.rules
    assert "per_device_eval_batch_size" in " ".join(report.meaning)


# TRL 0.15's batch message, which ms-swift 3.3 prints too from its own GRPOTrainer (swift/errors.py, trl/errors.py)
SHARED_BATCH_MESSAGE = ("ValueError: The global train batch size (3 x 4) must be evenly divisible by the number of "
                        "generations per prompt (8). Given the current train batch size, the valid values for the "
                        "number of generations are: [2, 3, 4, 6, 12].")
USERS_GRPO = ["--model_name_or_path", "Qwen/Qwen2.5-0.5B-Instruct", "--per_device_train_batch_size", "4",
              "--num_generations", "8"]


def _said(report: dict) -> tuple:
    """What an explain answer says, as the command line's --json and the API's to_dict() both write it."""
    return ([r["rule"] for r in report["rules"]], report["notes"], report["meaning"],
            [v["rule"] for v in report["config_breaks"] or []],
            [(c["key"], c["old"], c["new"]) for c in (report["fix"] or {}).get("changes", [])])


@pytest.mark.parametrize("words, framework", [
    # a user's own script under accelerate launch: TRL's launcher (the command line read it as ms-swift's, the
    # first framework whose message matched, and exited 2 with "prefix the command with NPROC_PER_NODE=8")
    (["accelerate", "launch", "--num_processes", "3", "grpo.py", *USERS_GRPO], "trl"),
    # ms-swift's own entry point, then a key only ms-swift 3.3 takes (TRL 0.16's parser refuses --train_type)
    (["NPROC_PER_NODE=3", "swift", "rlhf", "--rlhf_type", "grpo", *USERS_GRPO], "swift"),
    (["--train_type", "lora", *USERS_GRPO], "swift"),
])
def test_a_message_two_frameworks_print_reads_the_config_alike_from_the_command_line_and_python(words, framework):
    cli = run("explain", "--json", "--gpus", "3", SHARED_BATCH_MESSAGE, "--", *words)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    api = explain(SHARED_BATCH_MESSAGE, config=words, gpus=3).to_dict()
    assert _said(json.loads(cli.stdout)) == _said(api)
    rules, notes, _, breaks, changes = _said(api)
    assert {r.split(".")[0] for r in rules} == {framework} and breaks == rules, (rules, breaks)
    assert changes == [("per_device_train_batch_size", 4, 8)], changes
    assert "NPROC_PER_NODE" not in cli.stdout + cli.stderr or framework == "swift"
    if words[0] != "NPROC_PER_NODE=3":  # a choice between the two: said, with how to make another
        assert f"printed by swift and trl alike; read as {framework}'s" in notes[0] and "--framework" in notes[0]


def test_a_message_two_frameworks_print_with_a_config_either_reads_asks_which():
    words = USERS_GRPO[2:]  # keys both take (--model_name_or_path is a key of TRL's we know, not of ms-swift's)
    cli = run("explain", "--gpus", "3", SHARED_BATCH_MESSAGE, "--", *words)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    with pytest.raises(InputError) as e:
        explain(SHARED_BATCH_MESSAGE, config=words, gpus=3)
    assert e.value.field == "framework" and str(e.value) in cli.stderr
    assert "swift and trl alike" in str(e.value) and "--framework (swift or trl)" in str(e.value)
    assert "swift rlhf" in str(e.value) and "trl grpo" in str(e.value)  # or their entry points
    named = run("explain", "--gpus", "3", "--framework", "trl", SHARED_BATCH_MESSAGE, "--", *words)
    assert named.returncode == 0 and "trl.trainer.global_batch_divisible_by_num_generations" in named.stdout


def test_a_megatron_message_verl_and_ms_swift_print_reads_verls_keys_as_verls():
    """megatron-core's message, which verl and ms-swift's Megatron backend both print: verl's Hydra keys pasted
    alone are verl's (ms-swift's parser reads none of them)."""
    message = "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8)."
    words = ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct", "trainer.n_gpus_per_node=8",
             "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8"]
    cli = run("explain", "--json", message, "--", *words)
    api = explain(message, config=words).to_dict()
    assert cli.returncode == 0 and _said(json.loads(cli.stdout)) == _said(api)
    assert _said(api)[0] == ["verl.megatron.heads_divisible_by_tp"]
    assert "verl and swift-megatron alike; read as verl's" in api["notes"][0]

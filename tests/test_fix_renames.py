"""fix on a config written in an older release's flag names that the judged release refuses (OpenRLHF 0.10.2 renamed
every train_ppo_ray flag to a dotted name, with no alias): the answer renames each flag that has a successor of the
same meaning, as one change, and goes on with what else the config needs; the flags with none we know are said."""

from __future__ import annotations

import json
from pathlib import Path

from rlbatch_solver.frameworks.openrlhf.names import LEGACY_FLAGS

from clirun import run

# OpenRLHF's published hybrid-engine GRPO script: underscore flags beside --use_kl_estimator_k3 (no release has them
# all: judged as 0.11.2), and --n_samples_per_prompt 1 with group_norm (an algorithm setting fix never changes)
SCRIPT = Path(__file__).parent / "data" / "scripts" / "openrlhf" / "train_grpo_ray_hybrid_engine.sh"


def _with_two_samples(tmp_path: Path) -> Path:
    text = SCRIPT.read_text()
    assert "--n_samples_per_prompt 1 " in text
    out = tmp_path / "two.sh"
    out.write_text(text.replace("--n_samples_per_prompt 1 ", "--n_samples_per_prompt 2 "))
    return out


def test_the_published_script_is_held_only_by_its_algorithm_setting_not_its_flag_names():
    p = run("fix", str(SCRIPT), "--json")
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert "openrlhf.driver.legacy_flag_names" in [v["rule"] for v in data["violations_before"]]
    assert data["conflict"] == ["openrlhf.driver.group_estimator_needs_n"]
    assert any("--rollout.n_samples_per_prompt 2" in r for r in data["relaxations"]), data["relaxations"]
    # no repair, so no change below: the notes on the flags a repair drops do not point at one
    assert not any("the change below" in n for n in data["notes"]), data["notes"]


def test_the_repair_renames_the_flags_and_check_of_it_finds_no_old_name(tmp_path):
    script = _with_two_samples(tmp_path)
    p = run("fix", str(script), "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    fixed = data["fixed_config"]
    assert "--train.micro_batch_size 8" in fixed and "--rollout.n_samples_per_prompt 2" in fixed
    assert not [a for a in fixed if a.split()[0][2:] in LEGACY_FLAGS]
    assert "micro_train_batch_size" in data["renamed_keys"]
    # the flags of older releases that 0.11.2's argparse refuses and no rename reads in (--bf16, --enforce_eager,
    # 0.5.9's --use_kl_estimator_k3) are errors of their own, and the fixed config is written without them: renamed to
    # the successor of the same meaning (--vllm.enforce_eager), else dropped
    before = [v["message"] for v in data["violations_before"] if v["rule"] == "openrlhf.launch.unknown_key"]
    assert any(m.startswith("--bf16 is not an option of openrlhf 0.11.2 (a flag of OpenRLHF 0.4.0 to 0.8.11")
               and "drop it" in m for m in before), before
    assert any("--enforce_eager" in m and "names it --vllm.enforce_eager: rename it" in m for m in before), before
    assert any(n.startswith("--bf16: openrlhf 0.11.2 refuses it") and "drops it" in n for n in data["notes"])
    assert "--vllm.enforce_eager" in fixed and "(drop --bf16)" in fixed and "(drop --use_kl_estimator_k3)" in fixed
    assert {"bf16", "enforce_eager", "use_kl_estimator_k3"} <= set(data["renamed_keys"])
    args = [w for a in fixed if not a.startswith("(drop") for w in a.split()]
    checked = run("check", "--framework", "openrlhf==0.11.2", "--json", "--", *args)
    assert checked.returncode == 0, checked.stdout
    assert "legacy_flag_names" not in checked.stdout
    # the renames printed as one change, each drop as one; the script written back sets the dotted names and none of
    # the old ones it renamed or dropped
    shown = run("fix", str(script), "--write", str(tmp_path / "fixed.sh"))
    assert "(4 changes, proven nearest" in shown.stdout
    assert "rename --ref_num_nodes -> --ref.num_nodes," in shown.stdout
    # the pre-0.10 length flags: the response limit renamed, the prompt limit written as the total
    assert "--generate_max_len -> --rollout.max_new_tokens" in shown.stdout
    assert "- --prompt_max_len 1024\n  + --data.max_len 2048\n" in shown.stdout
    written = (tmp_path / "fixed.sh").read_text()
    assert "--train.micro_batch_size 8" in written and "--micro_train_batch_size" not in written
    assert "--vllm.enforce_eager" in written and "--enforce_eager" not in written.replace("--vllm.enforce_eager", "")
    assert "--bf16" not in written and "(drop" not in written
    # a flag no rule reads, the same argument in 0.9.10 and 0.11.2 (names.py OLD_NAMES), renamed too
    assert "--ckpt.output_dir /openrlhf/" in written and "--save_path" not in written
    # the pre-0.10 length pair, refused by 0.11.2 too, written as the pair that replaced it at the numbers it was read
    # as (it was left in, and the written script checked back INVALID: openrlhf.driver.legacy_flag_names)
    assert "--data.max_len 2048" in written and "--rollout.max_new_tokens 1024" in written
    assert "--prompt_max_len" not in written and "--generate_max_len" not in written
    again = run("check", str(tmp_path / "fixed.sh"))
    assert again.returncode == 0 and "VALID" in again.stdout, again.stdout


def test_memory_is_repaired_after_the_renames(tmp_path):
    script = _with_two_samples(tmp_path)
    big = tmp_path / "big.sh"
    big.write_text(script.read_text().replace("--micro_train_batch_size 8 ", "--micro_train_batch_size 64 ")
                   .replace("--adam_offload", ""))
    p = run("fix", str(big), "--json", "--model", "Qwen/Qwen2.5-7B", "--gpu", "A100-40GB")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    changes = {c["key"]: c for c in data["changes"]}
    assert changes["train.micro_batch_size"]["old_arg"] == "--micro_train_batch_size 64"
    assert changes["train.micro_batch_size"]["new"] < 64
    assert all(m["after"] <= m["capacity"] for m in data["memory_mib"].values())


def test_a_release_whose_own_flags_they_are_renames_nothing(tmp_path):
    p = run("fix", "--framework", "openrlhf==0.9.10", "--json", str(_with_two_samples(tmp_path)))
    data = json.loads(p.stdout)
    assert data["renamed_keys"] == []
    assert not any(a.startswith("--train.") for a in data["fixed_config"])


def test_misspelt_and_older_flags_are_renamed_in_the_configs_order_misspellings_first():
    """Both kinds of rename (a flag the release refuses as a misspelling, an older release's name) go through one
    rename of the pasted config: each kind in the order the config sets them, the misspellings first (the older
    names are looked up in the config with its misspellings mended)."""
    args = ["--rollout.n_samples_per_prompt", "4", "--train.bach_size", "8", "--vllm.num_engines", "4",
            "--actor.num_gpus_per_node", "4", "--micro_train_batch_size", "2", "--rollout.bach_size", "8",
            "--ref_num_nodes", "1"]
    shown = run("fix", "--framework", "openrlhf", "--", *args)
    assert shown.returncode == 0, shown.stderr
    assert ("rename --train.bach_size -> --train.batch_size, --rollout.bach_size -> --rollout.batch_size, "
            "--ref_num_nodes -> --ref.num_nodes\n") in shown.stdout
    # the renamed flag the repair also changes is one line, from the old argument to the repaired one
    assert "- --micro_train_batch_size 2\n  + --train.micro_batch_size 1" in shown.stdout
    data = json.loads(run("fix", "--framework", "openrlhf", "--json", "--", *args).stdout)
    assert data["renamed_keys"] == ["train.bach_size", "rollout.bach_size", "micro_train_batch_size", "ref_num_nodes"]
    assert data["fixed_config"] == ["--train.batch_size 8", "--rollout.batch_size 8", "--train.micro_batch_size 1",
                                    "--ref.num_nodes 1"]


def test_the_two_old_length_flags_are_said_with_the_two_that_replaced_them(tmp_path):
    """--prompt_max_len 1024 --generate_max_len 1024 (before 0.10) are read as --data.max_len 2048 (prompt and
    response together) and --rollout.max_new_tokens 1024: the answer says so with the numbers, rather than calling
    them flags with no successor we know."""
    p = run("fix", str(_with_two_samples(tmp_path)), "--json")
    notes = json.loads(p.stdout)["notes"]
    said = [n for n in notes if "--generate_max_len 1024" in n]
    assert said and "--rollout.max_new_tokens 1024" in said[0] and "--data.max_len 2048" in said[0], notes
    assert not any("no successor" in n and "max_len" in n for n in notes), notes
    checked = run("check", str(_with_two_samples(tmp_path)))
    assert "--data.max_len 2048" in " ".join(checked.stdout.split()), checked.stdout


def test_the_printed_config_and_the_written_script_check_valid_at_the_numbers_fix_printed(tmp_path):
    """fix writes --prompt_max_len 1024 --generate_max_len 1024 (0.4.0 to 0.8.11) as the two 0.11.2 flags that replaced
    them with the same limits (--data.max_len 2048, prompt and response together; --rollout.max_new_tokens 1024): the
    config it prints and the script it writes check VALID under 0.11.2, at the memory fix printed and the step time of
    the pasted script; neither keeps an old length flag."""
    script = _with_two_samples(tmp_path)
    sizes = ("--gpu", "h100", "--model", "llama3.1-8b")
    out = tmp_path / "fixed.sh"
    p = run("fix", str(script), *sizes, "--json", "--write", str(out))
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    fixed = data["fixed_config"]
    assert "--data.max_len 2048" in fixed and "--rollout.max_new_tokens 1024" in fixed, fixed
    assert {"prompt_max_len", "generate_max_len"} <= set(data["renamed_keys"])
    assert "openrlhf.driver.legacy_flag_names" in [v["rule"] for v in data["violations_before"]]
    written = out.read_text()
    assert "--data.max_len 2048" in written and "--rollout.max_new_tokens 1024" in written
    assert "--prompt_max_len" not in written and "--generate_max_len" not in written
    pasted = json.loads(run("check", str(script), *sizes, "--json").stdout)["memory"]
    args = [w for a in fixed if not a.startswith("(drop") for w in a.split()]
    for checked in (run("check", "--framework", "openrlhf==0.11.2", *sizes, "--json", "--", *args),
                    run("check", str(out), *sizes, "--json")):
        result = json.loads(checked.stdout)
        assert checked.returncode == 0 and result["valid"], result["violations"]
        memory = result["memory"]
        for phase, mib in data["memory_mib"].items():
            assert abs(memory["phases"][phase]["peak_mib"] - mib["after"]) < 1, (phase, memory["phases"][phase])
        assert memory["step_seconds"] == pasted["step_seconds"]
        lengths = memory["mean_lengths"]
        assert (lengths["max_prompt"], lengths["max_response"]) == (1024, 1024)


def test_one_old_length_flag_is_written_with_the_other_at_its_old_default():
    """--generate_max_len alone: the prompt limit is 0.8.11's default 1024, so --data.max_len is added as 1024 + the
    response limit; beside --max_len (0.8.11: the engines' context when given), --prompt_max_len is dropped and
    --max_len renamed."""
    dotted = ["--actor.num_gpus_per_node", "8", "--ref.num_gpus_per_node", "8", "--train.colocate_all",
              "--vllm.num_engines", "2", "--vllm.tensor_parallel_size", "4", "--rollout.n_samples_per_prompt", "4",
              "--algo.advantage.estimator", "group_norm"]
    data = json.loads(run("fix", "--framework", "openrlhf", "--json", "--", *dotted, "--generate_max_len", "512").stdout)
    assert {"--rollout.max_new_tokens 512", "--data.max_len 1536"} <= set(data["fixed_config"]), data["fixed_config"]
    data = json.loads(run("fix", "--framework", "openrlhf", "--json", "--", *dotted, "--prompt_max_len", "256",
                          "--generate_max_len", "512", "--max_len", "4096").stdout)
    fixed = data["fixed_config"]
    assert {"--rollout.max_new_tokens 512", "--data.max_len 4096", "(drop --prompt_max_len)"} <= set(fixed), fixed
    assert not any("max_len" in a and "4096" not in a and "drop" not in a for a in fixed), fixed


def test_an_older_releases_flag_0_11_2_refuses_is_an_error_by_name_not_valid():
    """A config in 0.11.2's dotted names plus --bf16 (0.4.0 to 0.8.11) and --enforce_eager (0.5.9 to 0.9.10) was
    VALID under 0.11.2, whose argparse refuses both ("unrecognized arguments"): each is an error naming the flag, the
    releases that have it and the fix (drop it; rename it --vllm.enforce_eager), and the legacy-names rule (whose fix is
    the dotted renames) stays quiet."""
    dotted = ["--actor.num_gpus_per_node", "8", "--ref.num_gpus_per_node", "8", "--train.colocate_all",
              "--vllm.num_engines", "2", "--vllm.tensor_parallel_size", "4", "--rollout.n_samples_per_prompt", "4",
              "--algo.advantage.estimator", "group_norm"]
    assert run("check", "--framework", "openrlhf", "--", *dotted).returncode == 0
    proc = run("check", "--framework", "openrlhf", "--json", "--", *dotted, "--bf16", "--enforce_eager")
    data = json.loads(proc.stdout)
    rules = [v["rule"] for v in data["violations"]]
    assert proc.returncode == 1 and rules == ["openrlhf.launch.unknown_key"] * 2, rules
    text = " ".join(v["message"] for v in data["violations"])
    assert "--bf16 is not an option of openrlhf 0.11.2 (a flag of OpenRLHF 0.4.0 to 0.8.11" in text
    assert "--enforce_eager is not an option of openrlhf 0.11.2 (a flag of OpenRLHF 0.5.9 to 0.9.10; 0.11.2 names it " \
           "--vllm.enforce_eager: rename it)" in text
    # the release whose own flag it is takes it
    old = run("check", "--framework", "openrlhf==0.8.11", "--json", "--", "--actor_num_gpus_per_node", "8", "--bf16")
    assert "openrlhf.launch.unknown_key" not in old.stdout, old.stdout


def test_recommend_from_writes_the_release_names_so_the_script_checks_back(tmp_path):
    """recommend --from the published script (old underscore flags, --bf16, --enforce_eager, the old length pair) said
    "the best config below runs" and printed it in 0.11.2's names, but --write added only the changed dotted flags
    beside the old ones (--vllm_num_engines 2 and --vllm.num_engines 8): the written script checked back INVALID.
    Now the refused keys are taken out and their successors written: the script checks back VALID at the same step."""
    script, out = _with_two_samples(tmp_path), tmp_path / "best.sh"
    p = run("recommend", "--from", str(script), "--gpu", "a100-80gb", "--model", "llama3.1-8b", "--top", "1",
            "--write", str(out), "--json")
    assert p.returncode == 0, p.stderr
    best = json.loads(p.stdout)["choices"][0]
    written = out.read_text()
    for old in ("--vllm_num_engines", "--micro_train_batch_size", "--bf16", "--enforce_eager ", "--prompt_max_len",
                "--use_kl_estimator_k3"):
        assert old not in written + " ", (old, written)
    assert "--vllm.enforce_eager" in written and "--data.max_len 2048" in written, written
    assert "\n   --vllm.enforce_eager" in written, written  # one argument a line, as the script wrote them
    checked = run("check", str(out), "--gpu", "a100-80gb", "--model", "llama3.1-8b", "--json")
    assert checked.returncode == 0, checked.stdout
    assert abs(json.loads(checked.stdout)["memory"]["step_seconds"] - best["step_time_s"]) < 0.05, checked.stdout


def test_fix_and_recommend_from_take_out_the_same_refused_keys_with_the_same_items(tmp_path):
    """fix --write and recommend --from --write take the keys the release refuses by name out of a script and write
    the same items in their place, read once (fix_job.refused_by_name): an older release's flags with a successor
    (--micro_train_batch_size), one converted (the old length pair: --prompt_max_len as --data.max_len, the total),
    another release's flags with a successor (--enforce_eager) or none (--bf16)."""
    from rlbatch_solver import api
    from rlbatch_solver.commands import inputs
    from rlbatch_solver.commands.fix_job import read_job

    script = _with_two_samples(tmp_path)
    job = read_job(str(script), None, None, None, None, [], None, 1.0, None)
    name, flat, gpus, model = inputs.from_config(str(script), None, "a100-80gb", None, "llama3.1-8b")
    report = api.recommend_from(name, flat, gpu="a100-80gb", model=model, gpus=gpus, top=1)
    assert report.start.renamed == job.replaced
    assert {k: job.replaced[k] for k in ("micro_train_batch_size", "prompt_max_len", "enforce_eager", "bf16")} == {
        "micro_train_batch_size": "--train.micro_batch_size 8", "prompt_max_len": "--data.max_len 2048",
        "enforce_eager": "--vllm.enforce_eager", "bf16": None}
    assert set(job.replaced) == set(job.old_names)  # the keys fix --write takes out (FixReport.renamed)


def test_an_ms_swift_flag_the_release_renamed_is_replaced_by_its_successor():
    """ms-swift 4.6.0's arguments lack --train_type (4.0.4's compat alias of --tuner_type): where the release refuses
    it by name (the command recommend prints: key_list(command=True); a pasted config is dated by it instead), the
    one reading gives its successor at its value, as a diff line and as the item written in its place."""
    from rlbatch_solver.commands.fix_job import refused_by_name
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.frameworks.key_names import findings

    fw = get_framework("swift==4.6.0")
    flat = {"train_type": "full", "per_device_train_batch_size": 2}
    unknown, _, _ = findings(fw.key_list(flat, command=True), fw.name, fw.version)
    found = refused_by_name(fw, flat, unknown)
    assert found.items == {"train_type": "--tuner_type full"} and found.dropped == ["train_type"]
    assert found.lines == [("tuner_type", "--train_type full", "--tuner_type full")]
    assert found.flat == flat  # another release's key: the config's reading is left as read


def test_recommend_from_prints_the_best_config_as_write_writes_it(tmp_path):
    """The printed best config of a config with refused flags is the one --write writes: --use_kl_estimator_k3 and
    --bf16 out, --vllm.enforce_eager for --enforce_eager (it kept the first and lacked the last, and its notes said
    "keeps your arguments, this one included: rename or remove it" of flags the answer renames or drops); the
    renamed keys are listed as such, not as "left at the default"."""
    p = run("recommend", "--from", str(_with_two_samples(tmp_path)), "--gpu", "a100-80gb", "--model", "llama3.1-8b",
            "--top", "1")
    assert p.returncode == 0, p.stderr
    printed = p.stdout.split("Best config (your arguments")[1].split("\n\n")[0]
    for old in ("--use_kl_estimator_k3", "--bf16", "--enforce_eager ", "--vllm_num_engines"):
        assert old not in printed + " ", (old, printed)
    assert "--vllm.enforce_eager" in printed and "--data.max_len 2048" in printed, printed
    assert "--use_kl_estimator_k3 is not an option" in p.stdout and "below leaves it out" in p.stdout, p.stdout
    assert "below writes --vllm.enforce_eager instead" in p.stdout, p.stdout
    taken = next(line for line in p.stdout.splitlines() if line.startswith("  take out (names the release refuses"))
    assert " vllm_num_engines " in taken + " " and " bf16" in taken, taken
    assert "vllm_num_engines" not in next((line for line in p.stdout.splitlines() if line.startswith("  drop (")), "")


def test_old_flags_are_read_in_the_configs_order_whatever_the_hash_seed():
    """The printed best config of a script of old flags listed them in an order that changed from run to run
    (normalize_flags walked a frozenset): the same script gives the same answer, in the script's own order."""
    import os
    import subprocess
    import sys

    keys = ["save_path", "ckpt_path", "max_samples", "actor_learning_rate", "critic_learning_rate", "prompt_data",
            "input_key", "apply_chat_template", "normalize_reward"]
    code = ("from rlbatch_solver.frameworks.openrlhf.framework import normalize_flags as n;"
            f"print(list(n({{k: 'x' for k in {keys!r}}})[0]))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(seen) == 1, seen
    assert seen.pop().split(", ")[0] == "['ckpt.output_dir'", seen  # --save_path, the script's first


def test_fix_of_a_config_of_old_names_only_prints_all_its_arguments_in_place_of_the_users(tmp_path):
    """Every argument of the published script is a pre-0.10.2 name: 'paste over yours' then printed the renamed
    arguments as if a few, to paste over arguments whose names they do not share, and 'and in yours: drop --bf16'; the
    repaired arguments are all of them: said so, on one line that checks back valid as it is."""
    import shlex

    p = run("fix", str(_with_two_samples(tmp_path)), "--model", "llama3.1-8b", "--gpu", "a100-80gb")
    lines = p.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("in place of all your arguments"))
    assert "paste over yours" not in p.stdout and "and in yours" not in p.stdout, p.stdout
    args = shlex.split(lines[at + 1])
    assert "--bf16" not in args and "--vllm.enforce_eager" in args and not any("_" in a.split(".")[0] for a in args
                                                                              if a.startswith("--")), args
    checked = run("check", "--framework", "openrlhf", "--gpu", "a100-80gb", "--model", "llama3.1-8b", "--", *args)
    assert checked.returncode == 0, checked.stdout


def test_recommend_from_says_each_refused_flag_with_its_own_key_and_the_rest_in_general_words(tmp_path):
    """Of more refused flags than are shown one each, the line counting the rest was given the wording of the
    eleventh flag alone (the notes were paired with the keys by position: "1 more keys ...; the best config below
    leaves it out"): each note is built from its own key, and the count speaks of them all."""
    stray = " ".join(f"--zzstray{i} 1" for i in range(10))
    script = tmp_path / "many.sh"
    script.write_text(_with_two_samples(tmp_path).read_text().replace("--ref_num_nodes 1 ", f"--ref_num_nodes 1 {stray} "))
    p = run("recommend", "--from", str(script), "--gpu", "a100-80gb", "--model", "llama3.1-8b", "--top", "1")
    assert p.returncode == 0, p.stderr
    notes = [line for line in p.stdout.splitlines() if line.startswith("note: ") and "openrlhf.launch.unknown_key" in line]
    assert len(notes) == 11, notes
    for i, line in enumerate(notes[:10]):
        assert line.startswith(f"note: --zzstray{i} is not an option") and "keeps your arguments, this one included" in line
    rest = notes[10]
    assert rest.startswith("note: 3 more keys are not options of openrlhf 0.11.2 either (--use_kl_estimator_k3, "
                           "--bf16, --enforce_eager; the JSON"), rest
    assert "leaves it out" not in rest and "writes --vllm.enforce_eager instead" not in rest, rest
    assert "the best config below writes the successor of each we know" in rest, rest


def test_recommend_from_with_no_valid_config_does_not_speak_of_a_best_config():
    """An infeasible answer prints no best config: its notes on refused flags said "the best config below leaves it
    out"; they say the refusal alone (its own words say how to mend the flag)."""
    p = run("recommend", "--from", str(SCRIPT), "--gpu", "H100", "--model", "llama3.1-8b")
    assert "No valid config fits" in p.stdout, p.stdout
    notes = [line for line in p.stdout.splitlines() if "openrlhf.launch.unknown_key" in line]
    assert len(notes) == 3 and all("best config" not in line for line in notes), notes
    assert any("--enforce_eager is not an option" in line and "names it --vllm.enforce_eager: rename it" in line
               for line in notes), notes


def test_fix_of_a_renamed_flag_in_a_partial_config_says_to_take_the_old_one_out():
    """`fix --framework swift==4.6.0 -- ... --train_type full`: the repair renames --train_type to --tuner_type and
    printed 'paste over yours: --tuner_type full' alone; pasted over the user's arguments that leaves --train_type
    in, which 4.6.0 refuses (SwiftPipeline._parse_args: remaining_argv). The answer says to take it out, and what is
    pasted, with it taken out, checks back valid."""
    flags = ["--rlhf_type", "grpo", "--train_type", "full"]
    p = run("fix", "--framework", "swift==4.6.0", "--gpus", "8", "--model", "qwen2.5-7b", "--", *flags)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    at = lines.index("paste over yours:")
    assert lines[at + 1:at + 3] == ["  --tuner_type full", "  and in yours: take out --train_type (renamed above)"]
    pasted = ["--rlhf_type", "grpo", "--tuner_type", "full"]
    assert run("check", "--framework", "swift==4.6.0", "--gpus", "8", "--model", "qwen2.5-7b", "--",
               *pasted).returncode == 0
    assert run("check", "--framework", "swift==4.6.0", "--gpus", "8", "--model", "qwen2.5-7b", "--",
               *flags, "--tuner_type", "full").returncode == 1  # pasted over, the old name left in


def test_the_fix_tool_takes_a_renamed_flag_out_of_the_script_it_rewrites(tmp_path, monkeypatch):
    """The MCP fix tool writes the script with the repair in as `fix run.sh --write` does: the renamed --train_type
    taken out beside the --tuner_type written in (it was left in, so the rewritten script still stopped 4.6.0)."""
    from rlbatch_solver.agent import tools

    monkeypatch.chdir(tmp_path)
    script = "swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct --train_type full\n"
    answer = tools.fix(script=script, framework="swift==4.6.0", gpus=8, model="qwen2.5-7b")
    rewritten = next(t for t in answer.texts if t.startswith("the script with the repair in"))
    assert "--tuner_type full" in rewritten and "--train_type" not in rewritten, rewritten

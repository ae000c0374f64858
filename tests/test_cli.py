"""The command line as a user runs it: exit codes, messages, no tracebacks."""

import json
import os
from pathlib import Path

import pytest

from clirun import run, run_process

ROOT = Path(__file__).resolve().parents[1]
AR = "actor_rollout_ref"
SEED = [
    "data.train_batch_size=64", f"{AR}.rollout.n=8", f"{AR}.actor.ppo_mini_batch_size=32",
    f"{AR}.actor.ppo_micro_batch_size_per_gpu=8", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=16",
    "algorithm.adv_estimator=grpo",
]


def test_check_valid_and_invalid_exit_codes():
    assert run("check", "--gpus", "4", "--", *SEED).returncode == 0
    bad = [s.replace("per_gpu=8", "per_gpu=24") for s in SEED]
    proc = run("check", "--gpus", "4", "--", *bad)
    assert proc.returncode == 1
    assert "verl.step.mini_divisible_by_micro" in proc.stdout and "24" in proc.stdout


def test_check_json_shape():
    proc = run("check", "--gpus", "4", "--json", "--", *[s.replace("=64", "=65") for s in SEED],
               f"{AR}.rollout.n=1")  # 65 * 1 samples over 4 GPUs
    data = json.loads(proc.stdout)
    assert data["valid"] is False
    assert {"rule", "message", "stage", "source"} <= set(data["violations"][0])


def test_check_reads_trainer_gpu_keys_and_ignores_launcher_tokens():
    proc = run("check", "--", "python3", "-m", "verl.trainer.main_ppo", *SEED, "trainer.n_gpus_per_node=4",
               "trainer.nnodes=1")
    assert proc.returncode == 0, proc.stdout


def test_check_yaml_file(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "data: {train_batch_size: 64}\n"
        "algorithm: {adv_estimator: grpo}\n"
        "trainer: {n_gpus_per_node: 4, nnodes: 1}\n"
        "actor_rollout_ref:\n"
        "  rollout: {n: 8, log_prob_micro_batch_size_per_gpu: 16}\n"
        "  actor: {ppo_mini_batch_size: 32, ppo_micro_batch_size_per_gpu: 8}\n"
    )
    assert run("check", "--config", str(cfg)).returncode == 0
    broken = tmp_path / "broken.yaml"
    broken.write_text("data: {train_batch_size: 64\n  x: [\n")
    proc = run("check", "--config", str(broken))
    assert proc.returncode == 2 and "config" in proc.stderr and "YAML" in proc.stderr


@pytest.mark.parametrize("args,field", [
    (["check", "--gpus", "4", "--", "data.train_batch_size=0"], "data.train_batch_size"),
    (["check", "--gpus", "-2", "--", *SEED], "gpus"),
    (["check", "--gpus", "4", "--model", "qwen-7", "--", *SEED], "model"),
    (["check", "--gpus", "4", "--", "data.train_batch_size=sixty"], "data.train_batch_size"),
    (["check", "--framework", "verll", "--", *SEED], "framework"),
    (["enumerate", "--gpus", "0"], "gpus"),
    (["enumerate", "--gpus", "4", "--algo", "grpoo"], "algo"),
    (["enumerate", "--gpus", "4", "--search", "data.train_batch_size"], "--search"),
    (["recommend", "--gpu", "rtx9090", "--gpus", "4", "--model", "qwen2.5-1.5b"], "gpu"),
    # a GPU name typo is the first error, not found only after --gpus and --model are given (with --from as without)
    (["recommend", "--gpu", "h1000"], "gpu"),
    (["recommend", "--from", "tests/data/scripts/verl/fully_async_dapo_7b_math_fsdp2_4_4.sh", "--gpu", "h1000"], "gpu"),
    # explain's --gpu and --model are checked even when the message alone is explained (they were silently unused)
    (["explain", "CUDA out of memory", "--gpu", "h1000", "--model", "qwen2.5-7b", "--gpus", "8"], "gpu"),
    (["explain", "CUDA out of memory", "--gpu", "h100", "--model", "qwen-7", "--gpus", "8"], "model"),
    # a GPU count no job has is judged first, whether or not the command comes to use it: explain of a message alone
    # (matched or not) said "no known message matched" (exit 1) and never judged --gpus 0
    (["explain", "some text", "--gpus", "0"], "gpus"),
    (["explain", "some text", "--gpus", "-3"], "gpus"),
    (["explain", "CUDA out of memory", "--gpus", "0"], "gpus"),
    (["explain", "some text", "--gpus", "99999999"], "gpus"),
    (["check", "--gpus", "0", "no_such_run.sh"], "gpus"),
    (["recommend", "--gpus", "0", "--from", "no_such_run.sh"], "gpus"),
    (["calibrate", "no_such.log", "--gpus", "0"], "gpus"),
])
def test_bad_input_exit_2_names_field(args, field):
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith(f"error: {field}:"), proc.stderr  # the field itself, not one it prefixes
    assert "Fix:" in proc.stderr


def test_the_python_api_judges_explains_gpu_count_without_a_config():
    from rlbatch_solver import api
    from rlbatch_solver.errors import InputError

    with pytest.raises(InputError) as err:
        api.explain("some text", gpus=0)
    assert err.value.field == "gpus"


@pytest.mark.parametrize("args,stdin", [(["explain", ""], None), (["explain", "   "], None), (["explain", "-"], "")])
def test_an_empty_error_line_is_named_once_not_as_error_error(args, stdin):
    # explain's argument is called "error": named so, it printed "error: error: no error message given."
    proc = run(*args, stdin=stdin)
    assert proc.returncode == 2 and proc.stderr.startswith("error: error line: none given"), proc.stderr
    assert "Fix:" in proc.stderr


def test_a_log_explain_cannot_read_is_named_as_the_log(tmp_path):
    log = tmp_path / "job.log"
    with open(log, "wb") as f:
        f.truncate(33 * 2**20)  # sparse: past the most a log is read (32 MiB), without writing it
    proc = run("explain", str(log))
    assert proc.returncode == 2 and proc.stderr.startswith("error: log: "), proc.stderr


def test_unknown_option_is_exit_2():
    assert run("check", "--gpuz", "4").returncode == 2


def test_enumerate_json_lines_are_native_and_valid():
    proc = run("enumerate", "--gpus", "4", "--algo", "grpo", "--n", "8", "--prompt-len", "512",
               "--response-len", "512", "--search", "data.train_batch_size=32,64",
               "--search", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2,4",
               "--search", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
               "--set", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=1",
               "--set", "actor_rollout_ref.rollout.tensor_model_parallel_size=2", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    summary = lines[-1]
    assert summary["complete"] is True and summary["count"] == len(lines) - 1 > 0
    for cfg in lines[:-1]:
        overrides = [f"{k}={v}" for k, v in cfg.items()]
        assert run("check", "--", *overrides).returncode == 0


def test_enumerate_infeasible_prints_conflict():
    proc = run("enumerate", "--gpus", "4", "--algo", "grpo", "--n", "1", "--set", "data.train_batch_size=3")
    assert proc.returncode == 1
    assert "verl.driver.batch_divisible_by_gpus" in proc.stdout


def test_recommend_says_an_infeasible_space_is_proven_so():
    """No config of the space fits (a 72B model on one 24 GiB GPU): the header says it is proven, not 'best found'."""
    proc = run("recommend", "--gpus", "1", "--gpu", "rtx4090", "--model", "qwen2.5-72b")
    assert proc.returncode == 1
    assert "proven infeasible" in proc.stdout and "not proven" not in proc.stdout
    assert "verl.memory.actor_update" in proc.stdout
    data = json.loads(run("recommend", "--gpus", "1", "--gpu", "rtx4090", "--model", "qwen2.5-72b", "--json").stdout)
    assert data["status"] == "infeasible" and data["proven"] is True and data["choices"] == []


def test_rules_doc_is_in_sync():
    proc = run("rules", "--markdown")
    assert proc.stdout == (ROOT / "docs" / "rules-verl.md").read_text()


def test_rules_lists_each_rules_message_under_its_id():
    """`rlbatch rules` said it lists "id, stage, message and the source" but printed no message (and ids over 48
    characters pushed the stage out of its column); now each message, under the aligned id, stage and source."""
    from rlbatch_solver.frameworks import get_framework

    lines = run("rules", "--framework", "openrlhf").stdout.splitlines()
    rules = get_framework("openrlhf").ruleset.rules
    assert len(lines) == 2 * len(rules)
    for r, head, message in zip(rules, lines[::2], lines[1::2]):
        assert head.startswith(r.id) and head.split()[1] == r.stage.value and message == f"    {r.message}"
    assert len({head.index(r.stage.value + " ") for r, head in zip(rules, lines[::2])}) == 1


@pytest.mark.parametrize("framework,ok", [("verl==0.9.1", True), ("verl@v0.9.1", True), ("verl==0.5.0", True),
                                          ("verl==0.4.2", True), ("verl==0.10.0", False),
                                          ("openrlhf==0.11.2", True), ("swift==4.5.0", True),  # 4.6.0's rules
                                          ("swift==4.7.0", False)])
def test_framework_version_is_checked(framework, ok):
    proc = run("check", "--framework", framework, "--gpus", "4", "--", *SEED)
    if ok:  # the version is accepted (openrlhf then reads verl's keys as unknown arguments)
        assert "follow version" not in proc.stderr and "Traceback" not in proc.stderr
    else:
        assert proc.returncode == 2 and "framework" in proc.stderr and "follow version" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_length_fraction_out_of_range_is_bad_input():
    proc = run("check", "--gpus", "4", "--model", "qwen2.5-1.5b", "--gpu", "rtx4090", "--length-fraction", "1.5",
               "--", *SEED)
    assert proc.returncode == 2 and "length_fraction" in proc.stderr and "Traceback" not in proc.stderr


def test_a_search_that_ran_out_of_time_is_not_called_infeasible():
    """No config found before the time limit, and no memory floor that proves none fits: the output says the search
    did not finish, never "No valid config fits"."""
    from types import SimpleNamespace

    from rich.console import Console

    from rlbatch_solver.solver.proof import no_fit_is_proven
    from rlbatch_solver.render import print_no_fit

    timed_out = SimpleNamespace(status="unknown", memory_floor={"verl.memory.rollout": (10, 20)}, wall_time_s=5.0,
                                conflict=None, choices=[])
    console = Console(record=True, width=200)
    print_no_fit(console, timed_out)
    text = console.export_text()
    assert not no_fit_is_proven(timed_out)
    assert "No config found within the time limit" in text and "No valid config fits" not in text
    assert no_fit_is_proven(SimpleNamespace(status="unknown", memory_floor={"verl.memory.rollout": (30, 20)}))


def test_entry_point_in_its_own_process():
    """``python -m rlbatch_solver.cli`` itself: the help, a valid check, and bad input (a bad value, a bad choice)
    ending in exit code 2 with the one-paragraph message, never a traceback."""
    assert run_process("--help").returncode == 0
    assert run_process("check", "--gpus", "4", "--", *SEED).returncode == 0
    proc = run_process("check", "--gpus", "-2", "--", *SEED)
    assert proc.returncode == 2 and proc.stderr.startswith("error: gpus") and "Fix:" in proc.stderr
    proc = run_process("recommend", "--placement", "spilt")
    assert proc.returncode == 2 and "--placement" in proc.stderr and "Traceback" not in proc.stderr


def test_a_pasted_word_that_is_no_argument_is_named():
    """`check -- data.train_batch_size` (no '=') is read past as a launcher word; with nothing else pasted, the
    error names it rather than saying only that there is nothing to check."""
    proc = run("check", "--gpus", "8", "--", "data.train_batch_size")
    assert proc.returncode == 2 and "data.train_batch_size is not an argument it takes" in proc.stderr


@pytest.mark.parametrize("text, what", [("root:x:0:0:root:/root:/bin/bash\nbin:x:1:1::/:/sbin/nologin\n",
                                          "plain text"), ("- a\n- b\n", "a list")])
@pytest.mark.parametrize("name", ["passwd", "config.yaml"])
def test_a_config_file_that_is_no_yaml_config_is_named_as_such(tmp_path, text, what, name):
    """`check --config /etc/passwd` said "config: nothing to check" (a file not ending in .yaml was read as one
    pasted word); a list said "must hold a mapping". One paragraph: the option, what the file reads as, a fix."""
    path = tmp_path / name
    path.write_text(text)
    proc = run("check", "--config", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: --config: '"), proc.stderr  # the path, shortened where it is long
    assert f"' is not a YAML config: it reads as {what}" in proc.stderr and "not as key: value pairs" in proc.stderr
    assert "Fix: pass a YAML file of the framework's keys" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run("check", "--config", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("error: --config:") and "is a directory" in proc.stderr
    proc = run("check", "--config", str(tmp_path / "absent"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr, proc.stderr
    for command in ("check", "fix"):  # a directory in place of the script: it read as a pasted word, "nothing to check"
        proc = run(command, str(tmp_path))
        assert proc.returncode == 2 and proc.stderr.startswith("error: config: '") and "is a directory" in proc.stderr


def test_an_empty_config_file_or_a_device_is_named_as_such(tmp_path):
    """An empty --config file said "config: nothing to check ... or pass --config FILE", the option just given; a
    device (/dev/null) said the file does not exist. Pasted arguments beside an empty file are still checked."""
    empty = tmp_path / "run.yaml"
    empty.write_text("# nothing yet\n")
    proc = run("check", "--config", str(empty))
    assert proc.returncode == 2 and proc.stderr.startswith("error: --config: '"), proc.stderr
    assert "holds no config keys" in proc.stderr and "pass --config FILE" not in proc.stderr, proc.stderr
    proc = run("check", "--config", os.devnull)
    assert proc.returncode == 2 and "is not a regular file" in proc.stderr, proc.stderr
    proc = run("recommend", "--from", os.devnull, "--gpu", "h100")
    assert proc.returncode == 2 and proc.stderr.startswith("error: --from: '") and "not a regular file" in proc.stderr
    proc = run("check", "--config", str(empty), "--", "data.train_batch_size=8")
    assert proc.returncode in (0, 1) and "verl" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("framework, flag", [("openrlhf", "--train.batch_size"), ("slime", "--global-batch-size"),
                                             ("swift", "--per_device_train_batch_size")])
def test_a_size_flag_without_its_value_says_so(framework, flag):
    """`check -- --train.batch_size` (the value forgotten) said "'True' is not an integer": the user wrote no True.
    Now: given without a value, and the flag's spelling with N."""
    proc = run("check", "--framework", framework, "--", flag)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is given without a value" in proc.stderr and f"write {flag} N" in proc.stderr, proc.stderr


def test_fix_counts_the_broken_rules_as_check_does():
    res = run("fix", "--gpus", "4", "--", "data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
              "actor_rollout_ref.actor.ppo_mini_batch_size=32", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24",
              "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16", "algorithm.adv_estimator=grpo")
    assert "INVALID — breaks 1 of the verl 0.9.1 rules:" in res.stdout, res.stdout


def test_a_conflict_says_its_numbers_and_the_frameworks_keys():
    # the rule's explanation without numbers and internal names (B_n=300, N=8, async_mode=0) were printed
    res = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--n", "5",
              "--set", "data.train_batch_size=60")
    assert res.returncode == 1
    out = " ".join(res.stdout.split())
    assert "train_batch_size*rollout.n = 60*5 = 300 is not divisible by n_gpus_per_node*nnodes = 8" in out, out
    assert "B_n" not in out and "async_mode" not in out and "trainer.v1.trainer_mode=sync" in out, out


def test_recommend_from_a_config_whose_kept_batch_breaks_a_rule_points_to_fix(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=60 "
                      "actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct actor_rollout_ref.rollout.n=5 "
                      "actor_rollout_ref.actor.ppo_mini_batch_size=30 trainer.n_gpus_per_node=8\n")
    res = run("recommend", "--from", script, "--gpu", "h100")
    assert res.returncode == 1
    assert "`rlbatch fix` on your script" in " ".join(res.stdout.split()), res.stdout


def test_a_proven_no_fit_whose_conflict_was_not_isolated_says_what_is_known():
    # qwen3-30b-a3b on 8x L40S (verl-megatron, response 4096): proven infeasible, the conflict search ran out of time;
    # it printed "No valid config (solver status: unknown)" and nothing else
    from types import SimpleNamespace

    from rich.console import Console

    from rlbatch_solver.render import print_no_fit
    from rlbatch_solver.solver.explain import Conflict

    report = SimpleNamespace(status="infeasible", framework="verl-megatron", version="0.9.1", wall_time_s=9.0,
                             conflict=Conflict([], "unknown", False), space=None,
                             memory_floor={"verl-megatron.memory.rollout": (19808, 45044),
                                           "verl-megatron.memory.actor_update": (5016, 42740)})
    console = Console(record=True, width=200)
    print_no_fit(console, report)
    out = console.export_text()
    assert "solver status: unknown" not in out, out
    assert "--time-limit" in out and "rollout 19.3 of 44.0 GiB" in out and "what would help" in out, out


def test_rules_each_broken_by_the_fixed_values_are_not_called_one_minimal_set():
    # TP 3 on 8 GPUs of a 28-head model breaks two rules, each on its own: "drop any one and the rest can hold" was
    # false
    res = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b",
              "--set", "actor_rollout_ref.rollout.tensor_model_parallel_size=3")
    assert res.returncode == 1
    out = " ".join(res.stdout.split())
    assert "The fixed values break each of these rules on its own:" in out and "drop any one" not in out, out
    assert "verl.vllm.heads_divisible_by_tp" in out and "verl.worker.rollout_world_divides_gpus" in out


def test_objective_gpus_says_how_many_gpus_and_runs_for_every_framework():
    # OpenRLHF (no gpus_per_node/nnodes variables) ended in a CompileError traceback; verl's answer on 2 of the 8 GPUs
    # only said "on 8x A100" in its header
    res = run("recommend", "--gpu", "a100-80gb", "--gpus", "8", "--model", "qwen2.5-7b", "--objective", "gpus",
              "--search", "trainer.n_gpus_per_node=1,2,4,8")
    assert res.returncode == 0 and "gpus: the best config uses 2 of the 8 GPUs" in res.stdout, res.stdout
    res = run("recommend", "--framework", "openrlhf", "--gpu", "a100-80gb", "--gpus", "8", "--model", "qwen2.5-7b",
              "--objective", "gpus", "--time-limit", "30")
    assert res.returncode == 0 and "gpus: the best config uses" in res.stdout, res.stdout


def test_objective_gpus_alone_searches_the_gpu_count():
    # "how few GPUs?" answered with all 8 and a hint to --search trainer.n_gpus_per_node=1,2,4,8
    res = run("recommend", "--gpu", "a100-80gb", "--gpus", "8", "--model", "qwen2.5-7b", "--objective", "gpus")
    assert res.returncode == 0 and "gpus: the best config uses 2 of the 8 GPUs" in res.stdout, res.stdout


@pytest.mark.parametrize("framework", ["slime", "openrlhf", "skyrl"])
def test_objective_gpus_on_ray_frameworks_counts_every_gpu_the_placement_groups_ask_for(framework):
    """OpenRLHF and slime answered "uses 8 of the 8 GPUs (runs on the --gpus given)": their job is Ray placement
    groups on a cluster of --gpus, and OpenRLHF's space made them cover it. Now the actor's GPUs are searched (the
    other groups and the rollout engines follow), fewer GPUs than the cluster's are allowed (the budget rule still
    holds: no group asks for more than it has), and the count is every GPU the groups ask for. SkyRL answered "8 of 8
    (fewer break a rule)": colocate_all's engines were tied to the cluster's GPUs, not the policy's, and the reference
    and critic to the GPUs per node; now they follow the policy's searched count."""
    from rlbatch_solver.commands.recommend import gpus_used, recommend
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.scenario import Scenario

    fw = get_framework(framework)
    sc = Scenario(framework=framework, gpu="a100-80gb", gpus=8, model="qwen2.5-1.5b", objective="gpus")
    report = recommend(sc, top=1, time_limit_s=60)
    best = report.best
    assert report.proven and best is not None
    used = gpus_used(fw, best.values)
    assert used < 8 and used == fw.ruleset.full_env(best.values)["gpus_needed"]
    assert fw.ruleset.check(best.values).valid, best.values  # the cluster of 8 holds it (the budget rule)
    timed = recommend(Scenario(framework=framework, gpu="a100-80gb", gpus=8, model="qwen2.5-1.5b"), top=1,
                      time_limit_s=60)
    assert gpus_used(fw, timed.best.values) >= used  # by time, the fastest; by GPUs, the fewest


def test_objective_gpus_searches_nodes_too_and_keeps_a_count_the_user_set():
    from rlbatch_solver.commands.recommend import search_gpu_counts
    from rlbatch_solver.scenario import Scenario

    sc = Scenario(framework="verl", gpu="h100", gpus=16, model="qwen2.5-7b", objective="gpus")
    sc.validate()
    assert search_gpu_counts(sc).search == {"trainer.n_gpus_per_node": [1, 2, 4, 8], "trainer.nnodes": [1, 2]}
    six = Scenario(framework="swift", gpu="h100", gpus=6, model="qwen2.5-7b", objective="gpus")
    assert search_gpu_counts(six).search == {"NPROC_PER_NODE": [1, 2, 4, 6]}
    given = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b", objective="gpus",
                     search={"trainer.n_gpus_per_node": [4, 8]})
    assert search_gpu_counts(given).search == {"trainer.n_gpus_per_node": [4, 8]}
    timed = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b")
    assert search_gpu_counts(timed).search == {}
    # TRL's count is accelerate's num_processes, decided, not searched (a --search of it is an input error)
    # slime's and OpenRLHF's: the actor group's flags (the other groups and the engines follow)
    slime = Scenario(framework="slime", gpu="h100", gpus=16, model="qwen2.5-7b", objective="gpus")
    assert search_gpu_counts(slime).search == {"actor-num-gpus-per-node": [1, 2, 4, 8], "actor-num-nodes": [1, 2]}
    orlhf = Scenario(framework="openrlhf", gpu="h100", gpus=8, model="qwen2.5-7b", objective="gpus")
    assert search_gpu_counts(orlhf).search == {"actor.num_gpus_per_node": [1, 2, 4, 8]}
    trl = Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", objective="gpus")
    assert search_gpu_counts(trl).search == {}
    res = run("recommend", "--framework", "trl", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b",
              "--objective", "gpus")
    assert res.returncode == 0 and "8 of the 8 GPUs (trl runs on the --gpus given)" in res.stdout, res.stdout


def test_a_yaml_config_given_in_place_of_the_arguments_is_read_as_its_frameworks(tmp_path):
    """`rlbatch check run.yaml` said "nothing to check (run.yaml is not an argument it takes)", and
    `check --config unsloth.yaml` without --framework checked Unsloth's keys against verl's rules (5 verl errors)."""
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "unsloth-qwen3-4b-grpo.yaml"
    for args in ([str(example)], ["--config", str(example)]):
        res = run("check", *args)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "read as unsloth's config" in res.stderr and "VALID — passes every one of the unsloth" in res.stdout
    easyr1 = tmp_path / "easyr1.yaml"  # shares data.max_prompt_length, trainer.n_gpus_per_node ... with verl
    easyr1.write_text("data:\n  rollout_batch_size: 512\n  max_prompt_length: 2048\n  max_response_length: 2048\n"
                      "worker:\n  actor:\n    global_batch_size: 128\n  rollout:\n    n: 5\n"
                      "trainer:\n  n_gpus_per_node: 8\n  nnodes: 1\n")
    res = run("check", str(easyr1))
    assert "read as easyr1's config" in res.stderr and "of the easyr1" in res.stdout, res.stdout + res.stderr
    trl = tmp_path / "grpo.yaml"
    trl.write_text("per_device_train_batch_size: 4\nnum_generations: 8\nuse_vllm: true\n")
    res = run("check", str(trl))
    assert res.returncode == 2 and "(swift, trl or unsloth)" in res.stderr, res.stderr
    verl = tmp_path / "verl.yaml"
    verl.write_text("data:\n  train_batch_size: 64\n")
    res = run("check", "--gpus", "8", str(verl))
    assert "of the verl" in res.stdout and "read as" not in res.stderr, res.stdout + res.stderr


@pytest.mark.parametrize("name", ["run.sh", "run.yaml"])
def test_a_script_or_config_that_does_not_exist_is_said_so(name):
    # was: "nothing to check (run.sh is not an argument it takes)"
    res = run("check", f"no-such-dir/{name}")
    assert res.returncode == 2 and f"{name}' does not exist" in res.stderr, res.stderr
    res = run("check", "tests")  # a folder named alone is said to be one (it read as a pasted word, "nothing to check")
    assert res.returncode == 2 and "'tests' is a directory, not a file" in res.stderr, res.stderr
    res = run("check", "tests", "foo")  # the first word of a longer paste stays a word (`trl grpo` beside a clone)
    assert res.returncode == 2 and "nothing to check" in res.stderr, res.stderr


@pytest.mark.parametrize("framework, command, ok", [
    ("verl", ["python3", "-m", "verl.trainer.main_ppo", "data.train_batch_size=64"], None),
    ("swift", ["NPROC_PER_NODE=8", "swift", "rlhf", "--rlhf_type", "grpo", "--per_device_train_batch_size", "2",
               "--num_generations", "8"], 0),
    ("trl", ["accelerate", "launch", "--num_processes", "8", "-m", "trl.scripts.grpo", "--per_device_train_batch_size",
             "2", "--num_generations", "8"], 0),
    ("openrlhf", ["ray", "job", "submit", "--", "python3", "-m", "openrlhf.cli.train_ppo_ray", "--train_batch_size",
                  "64", "--micro_train_batch_size", "2"], None)])
def test_a_command_line_pasted_after_the_dashes_is_read_as_its_script_would_be(framework, command, ok):
    """`check -- accelerate launch --num_processes 8 -m trl.scripts.grpo ...` said "'[8, 'trl.scripts.grpo']' is not
    an integer", OpenRLHF's `ray job submit -- python3 -m ...` "'--' has no flag name", and verl's and ms-swift's
    entry words were "ignored ... tokens that are not key=value"."""
    res = run("check", "--framework", framework, "--gpus", "8", "--", *command)
    assert res.returncode in (0, 1) and f"read the pasted command: {framework}" in res.stderr, res.stdout + res.stderr
    assert "ignored" not in res.stdout and "error:" not in res.stderr, res.stdout + res.stderr
    if ok is not None:
        assert res.returncode == ok, res.stdout


def test_a_script_path_that_is_a_directory_is_said_so(tmp_path):
    folder = tmp_path / "run.sh"
    folder.mkdir()
    res = run("check", str(folder))
    assert res.returncode == 2 and "is a directory, not a file" in res.stderr, res.stderr


def test_memory_not_evaluated_names_the_one_input_missing():
    """A script whose model is not in the catalog, checked with --gpu, was told "give both --gpu and --model"."""
    res = run("check", "--gpu", "h100", "--gpus", "8", "--", "data.train_batch_size=64")
    assert "memory was not evaluated: give --model (a catalog name or the model's config.json) too" in res.stdout
    res = run("check", "--model", "qwen2.5-7b", "--gpus", "8", "--", "data.train_batch_size=64")
    assert "memory was not evaluated: give --gpu too" in res.stdout, res.stdout
    # fix said "give both --gpu and --model" with --gpu given
    res = run("fix", "--gpu", "h100", "--gpus", "8", "--", "data.train_batch_size=60", "actor_rollout_ref.rollout.n=5")
    assert "memory was not evaluated: give --model (a catalog name or the model's config.json) too" in res.stdout, \
        res.stdout


def test_the_model_key_of_pasted_arguments_is_read_as_a_scripts_is():
    """``check --gpu h100 -- actor_rollout_ref.model.path=Qwen/Qwen2.5-14B ...`` (the overrides without the entry
    point) said "give --model too", where the same keys in a script or after ``python3 -m verl.trainer.main_ppo`` had
    the model read from them; --model, when given, still decides."""
    keys = ["data.train_batch_size=64", "trainer.n_gpus_per_node=8"]
    res = run("check", "--gpu", "h100", "--", "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B", *keys)
    assert "model from the arguments: Qwen/Qwen2.5-14B (catalog card qwen2.5-14b)" in res.stderr, res.stderr
    assert "predicted memory per GPU on h100 (qwen2.5-14b)" in res.stdout, res.stdout
    res = run("check", "--gpu", "h100", "--model", "qwen2.5-7b", "--", "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B",
              *keys)
    assert "(qwen2.5-7b)" in res.stdout and "model from the arguments" not in res.stderr, res.stdout
    res = run("check", "--gpu", "h100", "--", "actor_rollout_ref.model.path=/ckpt/step_100", *keys)
    assert "the model /ckpt/step_100 of the arguments is not in the catalog" in res.stderr, res.stderr
    res = run("check", "--framework", "openrlhf", "--gpu", "h100", "--", "--pretrain", "Qwen/Qwen2.5-7B",
              "--train_batch_size", "64")
    assert "catalog card qwen2.5-7b" in res.stderr, res.stderr


@pytest.mark.parametrize("args,fields", [
    # a name given that names nothing known (a typo) first, then what is missing, the model before the GPUs: every
    # bad field in the one paragraph
    (["--model", "nope-7b"], ["model", "gpu", "gpus"]),
    (["--gpu", "h1000"], ["gpu", "model", "gpus"]),
    (["--gpu", "h1000", "--model", "nope-7b", "--gpus", "4"], ["model", "gpu"]),
    (["--model", "qwen2.5-7b"], ["gpu", "gpus"]),
    (["--gpus", "4", "--gpu", "h100"], ["model"]),
    # an unknown framework first: it decides what the other fields mean
    (["--framework", "verll", "--gpu", "h1000", "--model", "nope-7b"], ["framework"]),
])
def test_recommend_names_every_bad_field_most_fundamental_first(args, fields):
    proc = run("recommend", *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    text = proc.stderr.strip()
    assert "\n" not in text and text.startswith(f"error: {fields[0]}: "), text
    named = sorted((text.index(f"Also {f}: "), f) for f in ("model", "gpu", "gpus") if f"Also {f}: " in text)
    assert [f for _, f in named] == fields[1:], text


@pytest.mark.parametrize("args", [
    ["check", "--gpu", "h1000", "--model", "nope-7b", "--gpus", "4", "--", "data.train_batch_size=8"],
    ["fix", "--gpu", "h1000", "--model", "nope-7b", "--gpus", "4", "--", "data.train_batch_size=8"],
    ["explain", "CUDA out of memory", "--gpu", "h1000", "--model", "nope-7b"],
    ["enumerate", "--gpus", "4", "--gpu", "h1000", "--model", "nope-7b"],
])
def test_an_unknown_model_and_gpu_are_named_together(args):
    """check, fix, explain and enumerate named the unknown GPU and, once it was fixed, the unknown model: both now, the
    model first, in the one paragraph."""
    proc = run(*args)
    text = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in text, proc.stderr
    assert text.startswith("error: model: unknown model 'nope-7b'") and "Also gpu: unknown GPU 'h1000'" in text, text


@pytest.mark.parametrize("args,field", [
    (["explain"], "error line"),  # was the argument parser's usage box, then "error: error: ..."
    (["sweep", "no-such-grid.yaml"], "grid"),  # was "a sweep needs a grid file and --out", with a grid file given
    (["sweep", "docs/examples/grid-qwen2.5-7b-grpo.yaml"], "--out"),
])
def test_a_missing_argument_is_one_paragraph_naming_it(args, field):
    proc = run(*args)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {field}: ") and "Fix: " in proc.stderr, proc.stderr
    assert "\n" not in proc.stderr.strip() and "Usage" not in proc.stderr


def test_check_counts_the_rules_broken_apart_from_warnings_and_says_errors_first():
    """OpenRLHF's published hybrid-engine GRPO script breaks one rule (n_samples_per_prompt 1 with group_norm) and
    mixes pre-0.10.2 flag names, which 0.11.2's argparse rejects (an error too), and three flags of older releases that
    no rename reads in (--use_kl_estimator_k3, --bf16, --enforce_eager: an error each); on 16 GPUs it is also warned
    that 8 stay idle. A warning is counted apart from the rules broken and listed after them (the header once said
    "breaks 2" for one error and one warning, the warning first)."""
    res = run("check", "--gpus", "16", "tests/data/scripts/openrlhf/train_grpo_ray_hybrid_engine.sh")
    assert res.returncode == 1
    assert res.stdout.startswith("INVALID — breaks 5 of the openrlhf 0.11.2 rules (and warns of 1 more):"), res.stdout
    assert res.stdout.count("ERROR openrlhf.launch.unknown_key") == 3, res.stdout
    assert res.stdout.rindex("ERROR openrlhf.launch.unknown_key") < res.stdout.index("WARNING "), res.stdout
    assert res.stdout.index("ERROR openrlhf.driver.group_estimator_needs_n") < res.stdout.index("WARNING "), res.stdout
    assert res.stdout.index("ERROR openrlhf.driver.legacy_flag_names") < res.stdout.index("WARNING "), res.stdout


def test_a_framework_flag_before_the_double_dash_is_named_with_the_command_that_reads_it():
    """`rlbatch check run.sh --quant_method bnb` (a framework's flag where rlbatch's own options go): the answer names
    the flag, says the framework's flags go after `--`, and prints the command rearranged (rlbatch's own options
    moved before `--`, the framework's after it), which then runs; a misspelt option of our own keeps click's
    "did you mean" answer."""
    script = "tests/data/scripts/swift/internal_transformers_1gpu.sh"
    proc = run("check", "--gpu", "rtx4090", script, "--quant_method", "bnb", "--quant_bits", "4", "--json")
    text = proc.stderr + proc.stdout
    assert proc.returncode == 2 and "error: --quant_method:" in text and "Traceback" not in text, text
    fixed = f"rlbatch check --gpu rtx4090 {script} --json -- --quant_method bnb --quant_bits 4"
    assert fixed in " ".join(text.split()), text
    again = run(*fixed.split()[1:])
    assert again.returncode == 0 and '"valid": true' in again.stdout, again.stdout + again.stderr
    typo = run("check", "--gpuss", "4", script)
    assert typo.returncode == 2 and "--gpus" in typo.stderr + typo.stdout and "after `--`" not in typo.stderr


def test_a_framework_flag_given_to_recommend_is_named_with_its_set_spelling():
    """`rlbatch recommend --framework trl ... --use_peft` got click's bare "No such option" box: recommend takes a
    framework's settings as --set KEY=VALUE. The answer names the flag and prints the command with each framework
    flag as a --set pair (a switch as KEY=true), which then runs; a misspelt option of our own keeps click's answer."""
    base = ["recommend", "--framework", "trl", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b"]
    proc = run(*base, "--use_peft", "--lora_r", "16", "--top", "1")
    text = proc.stderr + proc.stdout
    assert proc.returncode == 2 and "error: --use_peft: not an option of `rlbatch recommend`" in text, text
    assert "Traceback" not in text and "No such option" not in text, text
    fixed = "rlbatch " + " ".join(base) + " --set use_peft=true --set lora_r=16 --top 1"
    assert f"Fix: {fixed}" in " ".join(text.split()), text
    again = run(*fixed.split()[1:])
    assert again.returncode == 0 and "use_peft" in again.stdout, again.stdout + again.stderr
    typo = run(*base[:-2], "--mdoel", "qwen2.5-7b")
    assert typo.returncode == 2 and "--model" in typo.stderr + typo.stdout and "--set" not in typo.stderr


def test_a_scripts_model_not_in_the_catalog_is_said_with_the_nearest_catalog_names():
    """ms-swift's MoE LoRA example names Qwen/Qwen3-30B-A3B-Instruct-2507 (a release the catalog holds no card of):
    the note names the catalog's nearest cards to pass as --model where one is the same architecture."""
    res = run("check", "--gpu", "h100", "tests/data/scripts/swift/external_moe_lora.sh")
    text = " ".join(res.stderr.split())
    assert "the model Qwen/Qwen3-30B-A3B-Instruct-2507 of the script is not in the catalog" in text, text
    assert "nearest catalog names: qwen3-30b-a3b" in text, text


def test_another_releases_flag_given_to_recommend_says_its_successor_or_to_leave_it_out():
    """--set bf16=true under OpenRLHF 0.11.2 (a flag of 0.4.0 to 0.8.11, no successor): the answer says which releases
    have it and to leave it out, not "write --set KEY=True with a key of openrlhf 0.11.2"; --set enforce_eager=true
    names 0.11.2's --vllm.enforce_eager."""
    base = ["recommend", "--framework", "openrlhf", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b"]
    proc = run(*base, "--set", "bf16=true")
    text = " ".join((proc.stderr + proc.stdout).split())
    assert proc.returncode == 2 and "(a flag of OpenRLHF 0.4.0 to 0.8.11" in text, text
    assert "Fix: leave out --set bf16=True." in text and "KEY=" not in text, text
    proc = run(*base, "--set", "enforce_eager=true")
    text = " ".join((proc.stderr + proc.stdout).split())
    assert proc.returncode == 2 and "0.11.2 names it vllm.enforce_eager)" in text, text
    assert "Fix: write --set vllm.enforce_eager=True." in text, text


def test_an_ms_swift_flag_the_release_dropped_given_to_recommend_names_its_successor():
    """--set train_type=full under ms-swift 4.6.0 (whose arguments take only --tuner_type) printed --train_type full,
    which 4.6.0's parser stops on, and check of the printed command dated it to 3.10.3: now an input error naming
    --set tuner_type=full; 3.10.3, whose name it is, still takes it."""
    base = ["recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--top", "1"]
    proc = run(*base, "--framework", "swift", "--set", "train_type=full")
    text = " ".join((proc.stderr + proc.stdout).split())
    assert proc.returncode == 2 and "4.6.0 names it tuner_type" in text, text
    assert "Fix: write --set tuner_type=full." in text and "Traceback" not in text, text
    old = run(*base, "--framework", "swift==3.10.3", "--set", "train_type=full")
    assert old.returncode == 0 and "--train_type full" in old.stdout, old.stdout + old.stderr


def test_enumerate_refuses_a_set_key_the_release_refuses_as_recommend_does():
    """enumerate -f openrlhf --set bf16=true listed 0.11.2 configs and printed a command with --bf16, which 0.11.2's
    argparse stops on; recommend answered it as an input error. Now enumerate does too."""
    proc = run("enumerate", "--framework", "openrlhf", "--gpus", "8", "--set", "bf16=true")
    text = " ".join((proc.stderr + proc.stdout).split())
    assert proc.returncode == 2 and "bf16 is not an option of openrlhf 0.11.2" in text, text
    assert "Fix: leave out --set bf16=True." in text and "valid configs" not in text, text


def test_recommend_says_which_rules_judge_a_named_release():
    """--framework swift==3.8.0 is answered with the rules of 3.10.3 (the pack its series shares), and says so as
    check does; a release we follow by its own pack gets no such line."""
    named = run("recommend", "-f", "swift==3.8.0", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b")
    assert named.returncode == 0, named.stderr
    assert "note: ms-swift 3.8.0 is checked with the rules of 3.10.3" in named.stdout
    own = run("recommend", "-f", "swift==3.10.3", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b")
    assert own.returncode == 0, own.stderr
    assert "is checked with the rules of" not in own.stdout


def test_enumerate_says_which_rules_judge_a_named_release():
    """enumerate -f swift==3.8.0 lists the configs of 3.10.3's rules and says so, in the text and in the JSON's
    summary line, in recommend's words; a release judged by its own pack gets no such note."""
    note = "ms-swift 3.8.0 is checked with the rules of 3.10.3"
    text = run("enumerate", "-f", "swift==3.8.0", "--gpus", "8", "--limit", "2")
    assert text.returncode == 0 and f"note: {note}" in text.stdout, text.stdout + text.stderr
    listed = run("enumerate", "-f", "swift==3.8.0", "--gpus", "8", "--limit", "2", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    summary = json.loads(listed.stdout.splitlines()[-1])
    assert summary["rules_version"] == "3.10.3" and [n for n in summary["notes"] if n.startswith(note)]
    own = run("enumerate", "-f", "swift==3.10.3", "--gpus", "8", "--limit", "2", "--json")
    assert own.returncode == 0 and json.loads(own.stdout.splitlines()[-1])["notes"] == [], own.stdout + own.stderr


def test_a_scenario_file_is_read_as_the_readme_writes_it(tmp_path):
    """recommend/enumerate --scenario FILE with flags over it: the file's fields only (what recommend sets on a
    scenario itself, kept_totals, is not one a file may write, and was refused as one)."""
    path = tmp_path / "scenario.yaml"
    path.write_text("framework: verl\ngpu: rtx4090\ngpus: 4\nmodel: qwen2.5-1.5b\nalgorithm: grpo\nn: 8\n")
    listed = run("enumerate", "--scenario", str(path), "--limit", "3", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    best = run("recommend", "--scenario", str(path), "--gpus", "2", "--top", "1", "--json")
    assert best.returncode == 0, best.stdout + best.stderr
    assert "trainer.n_gpus_per_node=2" in json.loads(best.stdout)["command"]  # the flag over the file's 4


def test_a_scenario_file_naming_a_release_says_which_rules_judge_it(tmp_path):
    """framework: swift==3.8.0 in a scenario file says it is judged by 3.10.3's rules, in the text and the JSON, as
    --framework does (the scenario keeps the release named beside the pack that judges it)."""
    path = tmp_path / "scenario.yaml"
    path.write_text("framework: swift==3.8.0\ngpu: h100\ngpus: 8\nmodel: qwen2.5-7b\n")
    note = "ms-swift 3.8.0 is checked with the rules of 3.10.3"
    text = run("recommend", "--scenario", str(path), "--top", "1")
    assert text.returncode == 0 and f"note: {note}" in text.stdout, text.stdout + text.stderr
    data = json.loads(run("recommend", "--scenario", str(path), "--top", "1", "--json").stdout)
    assert data["key_notes"][0].startswith(note) and data["rules_version"] == "3.10.3", data["key_notes"]
    script = tmp_path / "run.sh"
    script.write_text("NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B --use_vllm true "
                      "--vllm_mode colocate --per_device_train_batch_size 4 --num_generations 8\n")
    mine = run("recommend", "--from", str(script), "-f", "swift==3.8.0", "--gpu", "h100", "--top", "1")
    assert mine.returncode == 0 and f"note: {note}" in mine.stdout, mine.stdout + mine.stderr


def test_a_pasted_ms_swift_flag_the_named_release_dropped_is_refused_by_name():
    """check -f swift==4.6.0 of a command with --train_type said VALID, yet 4.6.0's parser stops on it (its arguments
    take --tuner_type only); where the user names the release, the flag is refused with its successor, and fix renames
    it. Unnamed, the flag dates the config to a release that takes it, as before."""
    base = ["--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--", "swift", "rlhf", "--rlhf_type", "grpo",
            "--model", "Qwen/Qwen2.5-7B-Instruct", "--train_type", "full", "--per_device_train_batch_size", "8",
            "--num_generations", "8"]
    named = run("check", "--framework", "swift==4.6.0", *base)
    text = " ".join(named.stdout.split())
    assert named.returncode == 1 and "ERROR swift.launch.unknown_key" in text, text
    assert "--train_type is not an option of swift 4.6.0" in text and "names it --tuner_type" in text, text
    fixed = run("fix", "--framework", "swift==4.6.0", *base)
    assert "rename --train_type -> --tuner_type" in fixed.stdout, fixed.stdout + fixed.stderr
    dated = run("check", "--framework", "swift", *base)
    assert dated.returncode == 0 and "VALID" in dated.stdout, dated.stdout + dated.stderr
    # a release judged by its series' pack is refused by its own arguments: 3.5.0 (3.10.3's pack) has
    # --num_infer_workers, 3.10.3 has not
    workers = base[:base.index("--train_type")] + ["--num_infer_workers", "8"] + base[base.index("full") + 1:]
    own = run("check", "--framework", "swift==3.5.0", *workers)
    assert "swift.launch.unknown_key" not in own.stdout, own.stdout
    newer = run("check", "--framework", "swift==3.10.3", *workers)
    assert "--num_infer_workers is not an option of swift 3.10.3" in " ".join(newer.stdout.split()), newer.stdout
    assert "swift/llm/base.py: SwiftPipeline._parse_args" in newer.stdout, newer.stdout
    # --ignore_args_error true: the parse only logs the arguments left over, the launch goes on without them: the
    # run trains 4.6.0's default LoRA tuner, and is priced so
    ignored = run("check", "--framework", "swift==4.6.0", *base, "--ignore_args_error", "true")
    text = " ".join(ignored.stdout.split())
    assert "swift.launch.unknown_key" not in text and "VALID" in text, text
    assert "--train_type is not an option of ms-swift 4.6.0: with --ignore_args_error the launch logs it" in text, text
    assert "no --tuner_type: ms-swift 4.6.0 trains LoRA by default" in text, text


def test_a_grpo_config_of_an_older_trl_release_is_read_as_trls():
    """open-r1's Qwen2.5-1.5B GRPO recipe (a TRL 0.15-era GRPOConfig: max_prompt_length, vllm_device) given without
    --framework was read as Unsloth's config (34 keys to TRL's 33: TRL's older-release fields were not counted as
    TRL's, Unsloth knows max_prompt_length by dropping it) and priced with Unsloth's 4-bit base."""
    path = Path(__file__).resolve().parent / "data" / "trl" / "open_r1_config_demo.yaml"
    res = run("check", str(path))
    assert "read as trl's config" in res.stderr and "passes every one of the trl 0.15.2 rules" in res.stdout, \
        res.stdout + res.stderr


def test_a_yaml_config_names_its_model_as_a_script_does():
    """A YAML config's own model key (open-r1's model_name_or_path, Unsloth's from_pretrained model_name) was not read:
    `check --gpu h100 config.yaml` said "memory was not evaluated: give --model" for a model the catalog knows, where
    the same keys in a launch script were priced."""
    path = Path(__file__).resolve().parent / "data" / "trl" / "open_r1_config_demo.yaml"
    res = run("check", "--gpu", "h100", "--gpus", "8", str(path))
    assert "model from" in res.stderr and "(catalog card qwen2.5-1.5b)" in res.stderr, res.stderr
    assert "will it OOM?" in res.stdout and "memory was not evaluated" not in res.stdout + res.stderr
    # --model still wins over the config's
    res = run("check", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", str(path))
    assert "model from" not in res.stderr and "(qwen2.5-7b)" in res.stdout, res.stdout


def test_a_pasted_commands_own_config_yaml_names_its_model():
    """`accelerate launch ... grpo.py --config grpo.yaml` (TRL's TrlParser YAML, open-r1's recipes): the model it names
    (model_name_or_path) was not read, and check asked for --model."""
    path = Path(__file__).resolve().parent / "data" / "trl" / "open_r1_config_demo.yaml"
    res = run("check", "--gpu", "h100", "--", "accelerate", "launch", "--num_processes", "7", "src/open_r1/grpo.py",
              "--config", str(path))
    assert "(catalog card qwen2.5-1.5b)" in res.stderr and "will it OOM?" in res.stdout, res.stdout + res.stderr


def test_a_grpo_config_yaml_that_names_its_model_under_trls_key_is_trls(tmp_path):
    """A GRPOConfig YAML of current fields only (Unsloth's GRPOConfig has them all too) was refused "reads as the
    config of trl or unsloth": its model_name_or_path is TRL's model key (Unsloth's is from_pretrained's model_name)."""
    path = tmp_path / "grpo.yaml"
    path.write_text("model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\nnum_generations: 8\n"
                    "per_device_train_batch_size: 8\nuse_vllm: true\nvllm_mode: colocate\n")
    res = run("check", "--gpus", "8", str(path))
    assert res.returncode == 0 and "read as trl's config" in res.stderr, res.stdout + res.stderr
    assert "passes every one of the trl" in res.stdout


def test_a_pasted_command_of_an_entry_point_we_do_not_know_says_to_name_its_framework():
    """`accelerate launch --num_processes 3 grpo.py ...` (a user's own GRPO script: no module we know) read as verl's
    overrides said only "nothing to check (accelerate, launch, --num_processes are not an argument it takes)". It now
    names the script and says to pass --framework; with --framework trl the same words are checked."""
    words = ["accelerate", "launch", "--num_processes", "3", "grpo.py", "--per_device_train_batch_size", "4",
             "--num_generations", "8"]
    res = run("check", "--", *words)
    assert res.returncode == 2 and "grpo.py is an entry point we do not know" in res.stderr, res.stderr
    assert "with --framework (trl for a script that builds TRL's GRPOTrainer" in res.stderr
    res = run("check", "--framework", "trl", "--", *words)
    assert res.returncode == 1 and "generation_batch_size = 12 is not divisible by num_generations = 8" in res.stdout


def test_a_bare_recommend_says_it_answers_the_built_in_example_and_what_adpo_runs_as():
    """README's first command, `rlbatch recommend`: its answer is for the built-in example, which the output did not
    say (a new user read its numbers as his own hardware's); and its header says adpo where the command it prints runs
    algorithm.adv_estimator=grpo, with no word on why (verl has no adpo estimator)."""
    proc = run("recommend")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("note: no scenario given: the built-in example"), proc.stderr
    assert "data.train_batch_size=64" in proc.stderr and "--from" in proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("verl 0.9.1 · adpo · qwen2.5-1.5b on 4x"), lines[0]
    assert lines[2].startswith("best: "), lines[:3]  # the answer on the first screen, under the header
    said = [ln for ln in lines if ln.startswith("note: adpo: verl has no adpo estimator")]
    assert said and "algorithm.adv_estimator=grpo without KL" in said[0], lines[:8]
    assert "algorithm.adv_estimator=grpo" in proc.stdout
    # a scenario the user describes gets no such note
    proc = run("recommend", "--gpus", "4", "--time-limit", "5")
    assert "no scenario given" not in proc.stderr


@pytest.mark.parametrize("args,field,words", [
    (["explain", "some text", "--gpus", "abc"], "gpus", "'abc' is not a whole number"),
    (["check", "--gpus", "1.5", "--", *SEED], "gpus", "'1.5' is not a whole number"),
    (["recommend", "--n=abc"], "n", "'abc' is not a whole number"),
    (["check", "--length-fraction", "abc", "--", *SEED], "length-fraction", "'abc' is not a number"),
    (["fix", "--time-limit", "ten", "--", *SEED], "time-limit", "Fix: pass --time-limit 10"),
])
def test_a_word_for_a_number_is_one_paragraph_naming_the_option(args, field, words):
    """A number option given a word (--gpus abc) printed the argument parser's usage box over several lines, with no
    fix: it is bad input like any other, one paragraph naming the option and what to pass."""
    proc = run(*args)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {field}: ") and words in proc.stderr, proc.stderr
    assert "\n" not in proc.stderr.strip() and "Usage" not in proc.stderr and "Fix: " in proc.stderr


def test_rollout_tp_must_divide_or_be_a_multiple_of_the_kv_heads():
    # vLLM's QKVParallelLinear asserts TP divides the key/value heads, or they divide TP (replicated heads). fix proposed
    # rollout TP 3 for Qwen2.5-1.5B (12 heads, 2 kv heads) on 6 GPUs: 12 % 3 == 0 passed the heads rule, vLLM refuses
    six = [s.replace("=64", "=48").replace("size=32", "size=24") for s in SEED]  # 48 x 8 samples, mini 24, on 6 GPUs
    cfg = [*six, f"{AR}.rollout.tensor_model_parallel_size=3"]
    bad = run("check", "--gpus", "6", "--model", "qwen2.5-1.5b", "--", *cfg)
    assert bad.returncode == 1 and "verl.vllm.kv_heads_vs_tp" in bad.stdout, bad.stdout
    assert "num_key_value_heads = 2" in " ".join(bad.stdout.split()), bad.stdout
    for tp in ("2", "4"):  # a divisor of 2 kv heads, a multiple of them
        ok = run("check", "--gpus", "8", "--model", "qwen2.5-1.5b", "--", *SEED,
                 f"{AR}.rollout.tensor_model_parallel_size={tp}")
        assert "kv_heads_vs_tp" not in ok.stdout, ok.stdout
    fixed = run("fix", "--gpus", "6", "--model", "qwen2.5-1.5b", "--json", "--", *cfg)
    assert fixed.returncode == 0, fixed.stdout
    tp = {c["key"]: c["new"] for c in json.loads(fixed.stdout)["changes"]}[f"{AR}.rollout.tensor_model_parallel_size"]
    assert tp != 3 and (2 % tp == 0 or tp % 2 == 0), fixed.stdout
    # vLLM's Column/RowParallelLinear divide the MLP width by TP as well: 8960 / 6 is not whole (a dense model; a MoE
    # model's experts are split otherwise, its dense width no layer's)
    six_way = run("check", "--gpus", "6", "--model", "qwen2.5-1.5b", "--", *six,
                  f"{AR}.rollout.tensor_model_parallel_size=6")
    assert six_way.returncode == 1 and "verl.vllm.mlp_divisible_by_tp" in six_way.stdout, six_way.stdout
    assert "intermediate_size = 8960" in " ".join(six_way.stdout.split()), six_way.stdout
    moe = run("check", "--gpus", "8", "--model", "qwen3-30b-a3b", "--", *SEED, f"{AR}.rollout.tensor_model_parallel_size=4")
    assert "mlp_divisible_by_tp" not in moe.stdout, moe.stdout


def test_an_empty_script_argument_is_said_empty_not_a_directory():
    # `rlbatch check "$SCRIPT"` with SCRIPT unset: Path('') is the working directory, and the error said "'' is a
    # directory", sending the user to look for a directory
    for cmd in ("check", "fix"):
        proc = run(cmd, "", "--gpus", "8")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "empty" in proc.stderr and "directory" not in proc.stderr, proc.stderr


def test_openrlhf_fix_offers_only_flags_the_release_has(tmp_path):
    # OpenRLHF issue 275 (Llama-2-7B PPO on 4x RTX 4090), dated 0.4.0 by its flags: fix printed
    # --vllm_gpu_memory_utilization 0.85 --ds_tensor_parallel_size 2, flags 0.4.0's train_ppo_ray lacks (0.5.9 and
    # 0.7.5 added them) and which it had priced; pasted back, the command read as 0.7.5 and broke its mesh rules
    import yaml

    from rlbatch_solver.frameworks.openrlhf.release_flags import RELEASE_FLAGS

    case = next(c for c in yaml.safe_load((ROOT / "tests/data/memory_corpus/openrlhf.yaml").read_text())
                if c["name"] == "openrlhf_275_llama2_7b_ppo_4xrtx4090")
    script = tmp_path / "run.sh"
    script.write_text("ray job submit -- python3 -m openrlhf.cli.train_ppo_ray " + " ".join(case["args"]) + "\n")
    for release in ("0.4.0", "0.6.2"):
        proc = run("fix", str(script), "-f", f"openrlhf=={release}", "--gpu", "rtx4090", "--model", "llama2-7b",
                   "--json")
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
        flags = {c["new_arg"].split()[0].lstrip("-") for c in json.loads(proc.stdout)["changes"] if c["new_arg"]}
        assert flags <= set(RELEASE_FLAGS[release]), (release, flags - set(RELEASE_FLAGS[release]))
    # the tool's own --gpus is no release's flag: another GPU count stays a repair under every release (it was
    # dropped as "a flag a later release added" under all but the newest)
    from rlbatch_solver.frameworks import get_framework

    for release in ("0.4.0", "0.6.2", "0.11.2"):
        policy = get_framework(f"openrlhf=={release}").repair_policy({"one_world": False})
        assert "cluster_num_gpus" in policy.hardware, (release, policy.hardware)
    assert "gmu_permille" not in get_framework("openrlhf==0.4.0").repair_policy({"one_world": False}).memory


def test_an_unknown_models_suggestions_end_the_sentence_once():
    # the paragraph added a period after each fix: "Did you mean: qwen3-1.7b, qwen2.5-7b, qwen3-8b?."
    proc = run("check", "--gpus", "8", "--gpu", "h100", "--model", "qwen9-7b", "--", *SEED)
    assert proc.returncode == 2 and "Did you mean" in proc.stderr, proc.stderr
    assert "?." not in proc.stderr, proc.stderr

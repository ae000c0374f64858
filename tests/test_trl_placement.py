"""TRL in ``recommend --placement``: colocated, or a ``trl vllm-serve`` server on k GPUs of its own (one solve per k),
the answer as the pair of commands that runs it (trl #4766: "how many GPUs for the vLLM server?")."""

from __future__ import annotations

import json

import pytest

from bruteforce import assert_enumerate_equals_checker, assert_tables_match_cost_model
from clirun import run
from rlbatch_solver.api import prepare
from rlbatch_solver.commands.recommend import recommend
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.trl import placement as P
from rlbatch_solver.launch_script import parse_launch_script
from rlbatch_solver.scenario import Scenario

TRL = get_framework("trl")
# the #4766 question on one node of 8 H100: Qwen2.5-7B, 8 completions per prompt, 2,048-token responses, the user's
# per-device batch and accumulation (TRL's per-step batch is per_device x W x accumulation: it grows with the trainer)
ISSUE_4766 = dict(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=512,
                  response_length=2048, fixed={"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2})


def _devices(word: str) -> list[int]:
    """The GPUs a command's ``CUDA_VISIBLE_DEVICES=...`` prefix shows."""
    assignment = word.split(" ", 1)[0]
    assert assignment.startswith("CUDA_VISIBLE_DEVICES="), word
    return [int(d) for d in assignment.split("=", 1)[1].split(",")]


@pytest.fixture(scope="module")
def issue_4766():
    return recommend(Scenario(**ISSUE_4766, placement="auto"), time_limit_s=60)


def test_every_split_of_eight_gpus_is_solved_and_the_fastest_wins(issue_4766):
    """Colocated, and the server on 1..7 GPUs: each its own proven solve, with its step time; the winner is the
    layout with the most tokens/s (or the colocated one inside the model's placement error)."""
    summary = issue_4766.placement
    labels = [o.label for o in summary.options]
    assert labels[0] == "colocated on 8 GPUs"
    splits = [o for o in summary.options if o.placement == "split"]
    # the user's 8 x 2 on 8 GPUs: 128 completions per optimizer step, which 1, 2 or 4 trainer GPUs split evenly
    assert [P.trainer_world(o.best.values) for o in splits] == [1, 2, 4]
    assert any("no server layout with 3, 5, 6, 7 trainer GPUs" in n and "128 completions" in n for n in summary.notes)
    assert summary.proven and not summary.skipped and not summary.starved
    assert all(o.best.step_time_s > 0 for o in summary.options)
    fastest = max(summary.options, key=lambda o: o.best.tokens_per_s)
    assert summary.fastest is fastest
    assert summary.winner in (fastest, summary.tie)
    assert issue_4766.best is summary.winner.best


def test_each_layouts_answer_is_valid_without_the_solver(issue_4766):
    """Solver-independent: every returned layout's config passes TRL's rules as the checker evaluates them, the trainer
    and the server use all 8 GPUs between them, and the server's TP x DP is its GPU count, with TP dividing the heads."""
    for option in issue_4766.placement.options:
        values = option.best.values
        report = TRL.ruleset.check(values)
        assert report.valid, (option.label, [v.rule for v in report.violations])
        if option.placement == "colocate":
            assert not values["vllm_server"] and P.trainer_world(values) == 8
            continue
        assert values["vllm_server"] and values["use_vllm"]
        assert P.trainer_world(values) + P.server_gpus(values) == 8
        assert values["num_heads"] % values["server_tp"] == 0
        assert option.label.startswith(f"server: {P.trainer_world(values)} trainer + {P.server_gpus(values)} ")
        # TRL's per-step batch: per_device x W x accumulation, the user's (8 x 8 x 2 on every GPU) in every layout
        assert values["per_device_train_batch_size"] * P.trainer_world(values) * values["gradient_accumulation_steps"] \
            == 128, option.label


def test_the_colocated_layout_keeps_the_users_two_factors(issue_4766):
    values = issue_4766.placement.options[0].best.values
    assert (values["per_device_train_batch_size"], values["gradient_accumulation_steps"]) == (8, 2)
    assert all(o.best.samples == issue_4766.placement.options[0].best.samples
               for o in issue_4766.placement.options if o.best is not None)


def test_a_server_step_is_generation_then_training_never_overlapped(issue_4766):
    """GRPOTrainer's server mode waits for the server (vllm_generation.py VLLMGeneration.generate): no pipeline, the
    step is the sum of its phases."""
    for option in issue_4766.placement.options:
        best = option.best
        assert not best.stages
        assert best.step_time_s == pytest.approx(sum(best.phase_seconds.values()), rel=1e-3)


def test_the_answer_is_two_commands_on_disjoint_gpus():
    """The JSON (and the printed answer) start the server on the GPUs the trainer leaves, then the trainer: the last
    k GPUs to ``trl vllm-serve`` with its TP and DP, the first ``--num_processes`` to accelerate, no --server.* flag
    (TRL's parser refuses unknown flags)."""
    proc = run("recommend", "--framework", "trl", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--n", "8",
               "--response-len", "2048", "--set", "per_device_train_batch_size=8", "--set",
               "gradient_accumulation_steps=2", "--placement", "split", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    [server] = data["start_first"]
    command = data["command"]
    assert " trl vllm-serve" in server[0] and "--model Qwen/Qwen2.5-7B" in server
    tp = int(next(w for w in server if w.startswith("--tensor-parallel-size")).split()[1])
    dp = int(next(w for w in server if w.startswith("--data-parallel-size")).split()[1])
    world = int(next(w for w in command if w.startswith("--num_processes")).split()[1])
    assert _devices(command[0]) == list(range(world)) and _devices(server[0]) == list(range(world, 8))
    assert world + tp * dp == 8 and "accelerate launch" in command[0]
    assert not any(w.startswith("--server.") for w in command) and "--vllm_mode server" in command
    assert data["placement"]["winner"].startswith(f"server: {world} trainer + {tp * dp} vLLM-server GPUs")
    # the printed text holds the same pair, the server first and in the background
    text = run("recommend", "--framework", "trl", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--n", "8",
               "--response-len", "2048", "--set", "per_device_train_batch_size=8", "--set",
               "gradient_accumulation_steps=2", "--placement", "split").stdout
    assert text.index(server[0]) < text.index(command[0]) and f"{server[-1]} &" in text
    # the server's max_model_len holds the prompt and completion the answer is priced at (TRL 1.16 has no prompt flag)
    assert server[-1] == "--max-model-len 3072"


def test_the_printed_pair_checks_back_as_one_valid_job(tmp_path):
    """Saved as a script, the two commands read back as one job: the server line's sizes and GPUs, the trainer's."""
    values = {"use_vllm": True, "vllm_server": True, "gpus_per_node": 6, "nnodes": 1, "server_tp": 1, "server_dp": 2}
    server = P.server_command(values, "Qwen/Qwen2.5-1.5B")
    native = ["--num_processes 6", "--per_device_train_batch_size 8", "--gradient_accumulation_steps 1",
              "--num_generations 8", "--use_vllm true", "--vllm_mode server", "--server.tensor_parallel_size 1",
              "--server.data_parallel_size 2"]
    trainer = TRL.run_command(native, values, "Qwen/Qwen2.5-1.5B")
    script = tmp_path / "run.sh"
    script.write_text(" \\\n".join(server) + " &\n" + " \\\n".join(trainer) + "\n")
    read = parse_launch_script(script.read_text())
    assert read.gpus == 8 and "--server.data_parallel_size" in read.args
    assert any("trl vllm-serve" in n for n in read.notes)
    checked = run("check", "--framework", "trl", str(script), "--gpu", "h100", "--model", "qwen2.5-1.5b", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["valid"]
    # a server line that takes more GPUs than the trainer leaves breaks the budget rule
    script.write_text(" \\\n".join(server).replace("=6,7", "=5,6,7").replace("--data-parallel-size 2",
                                                                              "--data-parallel-size 3")
                      + " &\n" + " \\\n".join(trainer).replace("=0,1,2,3,4,5", "=0,1,2,3,4") + "\n")
    bad = json.loads(run("check", "--framework", "trl", str(script), "--gpu", "h100", "--model", "qwen2.5-1.5b",
                         "--json").stdout)
    assert not bad["valid"] and "trl.gpus.budget" in [v["rule"] for v in bad["violations"]]


def test_server_splits_and_sizes():
    assert P.server_splits(8, 1, 8) == [(8 - w, w, 1) for w in range(1, 8)]
    assert P.server_splits(16, 2, 8) == [(8, 8, 1)]  # a whole machine to the server, the other to the trainer
    assert P.server_sizes(6, 8) == ([1, 2], [3, 6])
    assert P.server_sizes(8, 4) == ([1, 2, 4], [2, 4, 8])  # TP within a machine of 4
    assert [P.is_coarse(i, 15) for i in range(15)].count(True) == 3 and all(P.is_coarse(i, 7) for i in range(7))


def test_two_machines_put_the_server_on_one_of_them():
    sc = Scenario(framework="trl", gpu="h100", gpus_per_node=8, nnodes=2, model="qwen2.5-7b", n=8,
                  response_length=1024, placement="split")
    report = recommend(sc, time_limit_s=30)
    values = report.best.values
    assert (P.trainer_world(values), values["nnodes"], P.server_gpus(values)) == (8, 1, 8)
    from rlbatch_solver.commands.recommend import best_command, companion_commands

    [server] = companion_commands(report)
    command = best_command(report)
    assert _devices(server[0]) == list(range(8)) and command[0].startswith("accelerate launch")  # all of its GPUs
    assert f"--vllm_server_host {P.SERVER_HOST}" in command and "--num_processes 8" in command


def test_no_server_layout_is_said_or_refused():
    """TRL 0.14 runs vLLM on a GPU of its own (vllm_device), one GPU leaves nothing for a server: --placement split is
    an input error, auto solves the colocated layout and says why."""
    old = Scenario(framework="trl==0.14.0", gpu="h100", gpus=8, model="qwen2.5-1.5b", n=8, placement="split")
    with pytest.raises(InputError, match="vllm_device"):
        get_framework("trl==0.14.0").placements(old, [])
    notes: list[str] = []
    one = Scenario(framework="trl", gpu="h100", gpus=1, model="qwen2.5-1.5b", n=8, placement="auto")
    assert [lay.placement for lay in TRL.placements(one, notes)] == ["colocate"] and "none for" in notes[0]


def _layout(world: int, **kw) -> Scenario:
    keys = {"use_vllm": True, "vllm_mode": "server", "num_processes": world, "num_machines": 1, **kw.pop("fixed", {})}
    return Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=512,
                    response_length=1024, fixed=keys, **kw)


def test_a_layouts_space_pins_the_split_and_the_solver_agrees_with_the_checker():
    """The layout's space: the trainer's world as fixed, the server's TP x DP over the rest. Over a small space with
    the split free (every trainer size, every TP and DP), CP-SAT enumerates exactly what the checker accepts (the
    rule that every GPU is used, the budget, TP dividing the heads, TRL's batch rules)."""
    space = TRL.space(_layout(5), None)
    assert space.domains["gpus_per_node"] == [5] and space.domains["server_tp"] == [1]
    assert space.domains["server_dp"] == [3]
    ruleset = TRL.ruleset.extended(space.extra_rules)
    domains = {name: list(values) for name, values in space.domains.items() if name in ruleset.variables}
    domains.update(gpus_per_node=list(range(1, 8)), server_tp=[1, 2, 4], server_dp=[1, 2, 3, 4],
                   per_device_train_batch_size=[1, 2, 4], gradient_accumulation_steps=[1, 3], num_heads=[28],
                   num_kv_heads=[4])
    assert_enumerate_equals_checker(ruleset, domains)


def test_a_layouts_tables_equal_the_cost_model():
    _, _, _, space, spec, terms, ruleset = prepare(_layout(6))
    assert_tables_match_cost_model(space, spec, ruleset, configs=20, seed=7, label="trl-server", terms=terms)


def test_the_server_prices_its_own_memory_share():
    """GRPOConfig's vllm_gpu_memory_utilization applies to colocate mode only (trl/trainer/grpo_config.py); the server
    runs at trl vllm-serve's 0.9 (trl/scripts/vllm_serve.py), and an answer does not print the trainer's flag."""
    flags = ["--num_processes", "6", "--use_vllm", "true", "--vllm_mode", "server", "--vllm_gpu_memory_utilization",
             "0.3"]
    values = TRL.to_values(TRL.parse(flags)[0], gpus=8, model=None)
    assert values["gmu_permille"] == P.SERVER_GMU_PERMILLE
    colocated = TRL.to_values(TRL.parse(flags[:5] + ["colocate"] + flags[6:])[0], gpus=8, model=None)
    assert colocated["gmu_permille"] == 300
    assert not any("vllm_gpu_memory_utilization" in a for a in TRL.export(values))


def test_the_users_trainer_size_keeps_one_split():
    """--num_processes given with --gpus: the server layout is the split it leaves, and the colocated layout says it
    trains on those processes only."""
    sc = Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-1.5b", n=8, placement="auto",
                  fixed={"num_processes": 6})
    labels = [lay.label for lay in TRL.placements(sc, [])]
    assert labels == ["colocated on 6 of the 8 GPUs", "server: 6 trainer + 2 vLLM-server GPUs"]


def test_the_web_pages_copy_holds_both_commands(tmp_path):
    """The web page's copy button copies the server command (in the background) and then the trainer's."""
    from rlbatch_solver.web.jobs import _best_copy

    report = recommend(Scenario(**ISSUE_4766, placement="split"), time_limit_s=30)
    server, trainer = _best_copy(report, None, tmp_path).split(" &\n")
    assert server.startswith("CUDA_VISIBLE_DEVICES=") and " trl vllm-serve" in server.split("\n")[0]
    assert " accelerate launch" in trainer.split("\n")[0] and "--server." not in trainer

"""fix's answer does not depend on the machine's speed or load: every search that may stop short by design is bounded
by work counted the same on any machine (the CP-SAT search that tries to beat a repair in hand and the conflict search
by deterministic time, one worker; the direct search's wide pass and the greedy descent by the candidates they check,
solver/nearest.py), and seconds only by the command's --time-limit, a safety net whose cut is said ("not proven: cut
short at N s", ``FixReport.cut_short``), never a silent change of the answer. Checked as tests/test_recommend_load.py
checks recommend (conftest.slow_machine: the command's clock and every CP-SAT solve twenty times faster), under a
generous --time-limit."""

import json
from pathlib import Path

import pytest
from rlbatch_solver.commands.fix import fix

HERE = Path(__file__).resolve().parent
SCRIPT = "tests/data/scripts/verl/run_qwen2-7b.sh"  # verl's published GRPO example: its critic micro batch is unset
AR = "actor_rollout_ref"
# generous: at twenty times slower it is 300 s of real time, so no step's safety net (its share of the limit) cuts a
# search the quiet machine ends: an exhaustive one (the headroom step's exact repair of the Megatron example takes
# seconds) as well as one bounded by work
LIMIT = 6000.0


def answer(report):
    """Everything fix says that a search's bound could move: the repair and its proof, the steps the clock cut, and
    with no repair the closest config, the conflicting rules and each relaxation's outcome."""
    conflict = report.conflict.ids if report.conflict is not None else None
    return (report.status, report.proven, report.method, report.grid_only, report.native_changes, report.cut_short,
            report.nearest_diff, report.partial_diff, conflict, report.relaxations_tried)


def script(tmp_path, replace: dict[str, str]) -> str:
    """The script with each line setting a key of ``replace`` set as it says."""
    lines = []
    for line in open(SCRIPT).read().splitlines():
        key = line.strip().split("=")[0]
        lines.append(f"    {replace[key]} \\" if key in replace else line)
    path = tmp_path / "run.sh"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def megatron_gsm8k(tmp_path):
    """verl's Megatron GSM8K example (8 GPUs) on 24 GB cards (tests/test_fix_published.py): no one- or two-key move
    fits, so the wide pass prices memory to its work bound, the greedy descent answers and CP-SAT tries to beat it."""
    from rlbatch_solver.launch_script import read_launch_script

    s = read_launch_script(HERE / "data/scripts/verl-megatron/run_qwen2-7b_math_megatron.sh")
    return s.args + [f"{AR}.rollout.mode=async"], dict(framework=s.framework, gpu="rtx4090", model="qwen2.5-7b")


def openrlhf_tight(tmp_path):
    """An OpenRLHF config whose nearest repair is tight in memory (tests/test_fix_headroom.py): the headroom step."""
    from test_fix_headroom import ORL

    return ORL, dict(framework="openrlhf", model="qwen2.5-7b", gpu="h100")


def verl_offloaded_node(tmp_path):
    """verl with the actor's states offloaded, over a 100 GiB node (tests/test_host_recommend.py): the RAM search."""
    from test_host_recommend import OFFLOADED_VERL

    return OFFLOADED_VERL, dict(framework="verl", gpus=8, model="qwen2.5-7b", gpu="h100", host_mem_gib=100)


def verl_memory_conflict(tmp_path):
    """A 7B model on one 24 GB card, the GPU count pinned (tests/test_fix_frameworks.py): no repair fits, so the
    conflict and every relaxation run."""
    cfg = ["trainer.n_gpus_per_node=1", "data.train_batch_size=8", f"{AR}.rollout.n=2",
           f"{AR}.actor.ppo_mini_batch_size=8", f"{AR}.actor.ppo_micro_batch_size_per_gpu=1",
           f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=1", f"{AR}.rollout.tensor_model_parallel_size=1",
           "data.max_prompt_length=512", "data.max_response_length=1024", "algorithm.adv_estimator=grpo"]
    return cfg, dict(framework="verl", model="qwen2.5-7b", gpu="rtx4090", keep=["trainer.n_gpus_per_node"])


def verl_rules_conflict(tmp_path):
    """A train batch of 65 pinned on 4 GPUs (tests/test_fix_frameworks.py): a conflict of rules, relaxations solved."""
    from test_fix_frameworks import INFEASIBLE

    tokens, gpus, keep, _, _ = INFEASIBLE["verl"]
    return tokens, dict(framework="verl", gpus=gpus, keep=keep)


# the script as published (by rules: one key, the direct search), and with a per-GPU micro batch of 48 beside its
# global one and a mini batch of 160, priced for memory on the script's 8 GPUs (H100): no one- or two-key move
# fits, so the answer comes from the descent and the exact CP-SAT repair's lazy memory cuts
CASES = {
    "verl-rules": lambda tmp_path: (script(tmp_path, {}), dict(framework="verl")),
    "verl-memory": lambda tmp_path: (script(tmp_path, {
        f"{AR}.actor.ppo_mini_batch_size": f"{AR}.actor.ppo_mini_batch_size=160 \\\n"
                                           f"    {AR}.actor.ppo_micro_batch_size_per_gpu=48"}),
        dict(framework="verl", gpu="h100-80gb", model="qwen2.5-7b")),
    "megatron-descent": megatron_gsm8k,
    "openrlhf-headroom": openrlhf_tight,
    "verl-host-ram": verl_offloaded_node,
    "verl-memory-conflict": verl_memory_conflict,
    "verl-rules-conflict": verl_rules_conflict,
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_fix_is_the_same_on_a_machine_twenty_times_slower(name, request, tmp_path):
    config, kwargs = CASES[name](tmp_path)
    quiet = fix(config, time_limit_s=LIMIT, **kwargs)
    assert quiet.cut_short == [] and (quiet.changes or quiet.conflict is not None)
    request.getfixturevalue("slow_machine")
    slow = fix(config, time_limit_s=LIMIT, **kwargs)
    assert answer(slow) == answer(quiet)


def test_a_search_the_clock_cuts_says_so_and_what_it_has(slow_machine, tmp_path):
    """At the default --time-limit (10 s) on a machine twenty times slower, the Megatron example's searches run out of
    seconds before their work bounds: the answer says which were cut and is not proven, and it is a repair or the
    closest config found (when the search reached one), never nothing unsaid (the descent cut short answered
    "unknown" with no word of why)."""
    from rlbatch_solver.render import print_fix
    from rich.console import Console

    config, kwargs = megatron_gsm8k(tmp_path)
    r = fix(config, time_limit_s=10.0, **kwargs)
    assert r.cut_short and not r.proven, (r.status, r.cut_short)
    # no repair: the clock cut the search for one (said), and the closest config it reached is shown when it reached
    # one (a cut before any candidate was checked has none)
    assert r.after is not None or r.cut_short_repair, r.cut_short
    assert json.loads(json.dumps(r.to_dict(), default=str))["search"]["cut_short"] == r.cut_short
    console = Console(record=True, width=200)
    print_fix(console, r)
    text = console.export_text()
    assert "cut short at" in text and ("not proven: cut short at" in text) == r.cut_short_repair
    assert r.after is not None or not r.partial_diff or "closest config found" in text


def test_the_headroom_step_answers_the_same_at_the_default_time_limit_on_a_machine_twenty_times_slower(
        request, tmp_path):
    """The headroom step's two searches are bounded by work (its scan by memory rows, its CP-SAT search by
    deterministic time, the direct search by its own bounds), with what the command has left as their safety net:
    at the default --time-limit (10 s) the answer on a machine twenty times slower is the quiet machine's, and no
    step is cut. (A fixed share of the seconds, a sixteenth of the limit for the scan, cut it there: "cut short ...
    the headroom step".)"""
    config, kwargs = openrlhf_tight(tmp_path)
    quiet = fix(config, time_limit_s=10.0, **kwargs)
    assert quiet.cut_short == [] and (quiet.nearest_diff or quiet.headroom), "the headroom step ran"
    request.getfixturevalue("slow_machine")
    slow = fix(config, time_limit_s=10.0, **kwargs)
    assert slow.cut_short == [], slow.cut_short
    assert answer(slow) == answer(quiet)

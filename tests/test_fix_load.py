"""fix's answer does not depend on the machine's speed or load: the CP-SAT search that tries to beat a repair in
hand is bounded by deterministic time (one worker), and seconds only by the command's --time-limit, a safety net
whose cut says "not proven". Checked as tests/test_recommend_load.py checks recommend (conftest.slow_machine: the
command's clock and every CP-SAT solve twenty times faster), under a generous --time-limit."""

import pytest
from rlbatch_solver.commands.fix import fix

SCRIPT = "tests/data/scripts/verl/run_qwen2-7b.sh"  # verl's published GRPO example: its critic micro batch is unset


def answer(report):
    return report.status, report.proven, report.method, report.grid_only, report.native_changes


# the script as published (by rules: one key, the direct search), and with a per-GPU micro batch of 48 beside its
# global one and a mini batch of 160, priced for memory on the script's 8 GPUs (H100): no one- or two-key move
# fits, so the answer comes from the descent and the exact CP-SAT repair's lazy memory cuts
CASES = {
    "verl-rules": ({}, dict(framework="verl")),
    "verl-memory": ({"actor_rollout_ref.actor.ppo_mini_batch_size": "actor_rollout_ref.actor.ppo_mini_batch_size=160 \\\n"
                     "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=48"},
                    dict(framework="verl", gpu="h100-80gb", model="qwen2.5-7b")),
}


def script(tmp_path, replace: dict[str, str]) -> str:
    """The script with each line setting a key of ``replace`` set as it says."""
    lines = []
    for line in open(SCRIPT).read().splitlines():
        key = line.strip().split("=")[0]
        lines.append(f"    {replace[key]} \\" if key in replace else line)
    path = tmp_path / "run.sh"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("name", list(CASES))
def test_the_fix_is_the_same_on_a_machine_twenty_times_slower(name, request, tmp_path):
    replace, kwargs = CASES[name]
    path = script(tmp_path, replace)
    quiet = fix(path, time_limit_s=600.0, **kwargs)
    assert quiet.after is not None and quiet.changes
    request.getfixturevalue("slow_machine")
    slow = fix(path, time_limit_s=600.0, **kwargs)
    assert answer(slow) == answer(quiet)

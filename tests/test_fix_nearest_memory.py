"""``fix`` with memory is as near as without: its "proven nearest" holds over every config around the pasted one.

Before, with ``--gpu`` the candidates of a key were powers of two, divisors and multiples only, and an unset key
cost the same at any value, so TRL's GRPO at 4 processes, batch 4, 6 generations was "fixed" with
``--steps_per_generation 24`` ("proven nearest") while ``--per_device_train_batch_size 3`` (what ``fix`` answers
without memory) is valid, fits and is nearer. Here the answer is compared, by ``fix``'s own cost, with every
valid and fitting config of an exhaustively enumerated neighbourhood of the batch keys.
"""

from __future__ import annotations

import itertools
import random

import pytest

import rlbatch_solver as rb
from rlbatch_solver.commands.fix_job import read_job
from rlbatch_solver.commands.fix_search import repair_once
from rlbatch_solver.deadline import Deadline
from rlbatch_solver.frameworks.repair_policies import references
from rlbatch_solver.solver.costs import candidate_cost

MODEL, GPU = "qwen2.5-1.5b", "h100"


def _args(procs: int, per_device: int, accum: int, gens: int) -> list[str]:
    return ["--num_processes", str(procs), "--model_name_or_path", "Qwen/Qwen2.5-1.5B-Instruct",
            "--per_device_train_batch_size", str(per_device), "--gradient_accumulation_steps", str(accum),
            "--num_generations", str(gens), "--max_completion_length", "1024", "--use_vllm", "--vllm_mode",
            "colocate", "--vllm_gpu_memory_utilization", "0.3", "--bf16", "--gradient_checkpointing"]


def _nearest_with_memory(args: list[str]):
    """The repair and the memory-extended rule set it was searched on, with the cost it is ranked by."""
    job = read_job(args, "trl", None, MODEL, GPU, (), None, 1.0, None)
    attempt = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec, deadline=Deadline(20.0))
    refs = references(job.policy, dict(job.values))

    def cost(values) -> int:
        return candidate_cost(attempt.ruleset, job.values, values, job.policy.ranks, refs, job.policy.grows_memory)

    return job.values, attempt, cost


def _assert_no_nearer_neighbour(args: list[str]) -> None:
    """Every valid, fitting config whose per-device batch, accumulation and steps per generation lie in
    1..2x+2 of the pasted ones (steps per generation also unset) costs at least what ``fix`` answered."""
    values, attempt, cost = _nearest_with_memory(args)
    res = attempt.result
    assert res.solution is not None and res.proven, (args, res.status)
    best = cost(res.solution)
    b, g = int(values["per_device_train_batch_size"]), int(values["gradient_accumulation_steps"])
    for pb, ga, spg in itertools.product(range(1, 2 * b + 3), range(1, 2 * g + 3), [None, *range(1, 2 * g + 3)]):
        cand = {**values, "per_device_train_batch_size": pb, "gradient_accumulation_steps": ga,
                "steps_per_generation": spg}
        if attempt.ruleset.failing_errors(cand):
            continue
        assert cost(cand) >= best, (args, {k: cand[k] for k in ("per_device_train_batch_size",
                                    "gradient_accumulation_steps", "steps_per_generation")}, res.solution)


def test_the_reported_grpo_config_gets_the_same_nearest_fix_with_and_without_memory():
    args = _args(4, 4, 4, 6)
    plain = rb.fix(args, framework="trl", time_limit_s=20)
    priced = rb.fix(args, framework="trl", model=MODEL, gpu=GPU, time_limit_s=20)
    assert plain.diff == priced.diff == [("per_device_train_batch_size", "--per_device_train_batch_size 4",
                                         "--per_device_train_batch_size 3")], (plain.diff, priced.diff)
    assert priced.proven
    _assert_no_nearer_neighbour(args)


@pytest.mark.parametrize("seed", range(6))
def test_fix_with_memory_is_no_farther_than_any_valid_fitting_neighbour(seed):
    rng = random.Random(seed)
    while True:  # a broken config: the generation batch does not hold whole prompt groups
        procs, b, g, gens = rng.choice([1, 2, 4, 8]), rng.randint(1, 6), rng.randint(1, 4), rng.choice([3, 5, 6, 7])
        if (procs * b * g) % gens:
            break
    _assert_no_nearer_neighbour(_args(procs, b, g, gens))

"""``fix`` with memory is as near as without: its "proven nearest" holds over every config around the pasted one.

Before, with ``--gpu`` the candidates of a key were powers of two, divisors and multiples only, and an unset key
cost the same at any value, so TRL's GRPO at 4 processes, batch 4, 6 generations was "fixed" with
``--steps_per_generation 24`` ("proven nearest") while ``--per_device_train_batch_size 3`` (what ``fix`` answers
without memory) is valid, fits and is nearer. Here the answer is compared, by ``fix``'s own cost, with every
valid and fitting config of an exhaustively enumerated neighbourhood of the batch keys. The same for verl, where a
repair found on the grid was not bettered off it (micro 48 of a 160-per-GPU mini batch became 32, not 40).
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


# verl: the actor's micro batch must divide the per-GPU mini batch (mini x n / data-parallel GPUs). With memory the
# grid of 48 (powers of two, divisors of 48, doubles, triples, +-2) holds 32 and 50 but not 40, the divisor of 160
# nearest to 48; "proven nearest" must hold over every valid, fitting config, not over that grid.
VERL_MODEL = "qwen2.5-0.5b"


def _verl(mini: int, micro: int, n: int = 5, gpus: int = 2) -> dict:
    return {"data.train_batch_size": mini, "data.max_prompt_length": 512, "data.max_response_length": 1024,
            "algorithm.adv_estimator": "grpo", "actor_rollout_ref.rollout.n": n,
            "actor_rollout_ref.actor.ppo_mini_batch_size": mini,
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": micro,
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 4,
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 4,
            "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
            "actor_rollout_ref.model.enable_gradient_checkpointing": True,
            "trainer.n_gpus_per_node": gpus, "trainer.nnodes": 1}


def _assert_verl_answer_is_the_least_distance(config: dict) -> dict:
    """``fix``'s answer costs (by its own distance) no more than any valid, fitting config whose actor mini and
    micro batches lie in 1..2x+2 of the pasted ones, enumerated here one by one with the checker; its cost is their
    minimum when it lies among them. Returns the answer's changed values."""
    job = read_job(config, "verl", None, VERL_MODEL, GPU, (), None, 1.0, None)
    attempt = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec, deadline=Deadline(20.0))
    res = attempt.result
    assert res.solution is not None and res.proven, (config, res.status)
    refs = references(job.policy, dict(job.values))

    def cost(values) -> int:
        return candidate_cost(attempt.ruleset, job.values, values, job.policy.ranks, refs, job.policy.grows_memory,
                              job.policy.algorithm_batch)

    best = cost(res.solution)
    mini, micro = int(job.values["actor_mini"]), int(job.values["actor_micro_per_gpu"])
    least = None
    for mb, mc in itertools.product(range(1, 2 * mini + 3), range(1, 2 * micro + 3)):
        cand = {**job.values, "actor_mini": mb, "actor_micro_per_gpu": mc}
        if job.fw.ruleset.failing_errors(cand) or attempt.ruleset.failing_errors(cand):  # rules, then memory
            continue
        least = cost(cand) if least is None else min(least, cost(cand))
    assert least is not None and least >= best, (config, least, best, res.solution)
    changed = {k: v for k, v in res.solution.items() if v != job.values.get(k)}
    inside = (set(changed) <= {"actor_mini", "actor_micro_per_gpu"} and res.solution["actor_mini"] <= 2 * mini + 2
              and res.solution["actor_micro_per_gpu"] <= 2 * micro + 2)
    assert not inside or least == best, (config, least, best, changed)
    return changed


def test_verl_micro_48_of_a_160_per_gpu_mini_batch_becomes_40_not_32():
    # mini 64 x n 5 / 2 GPUs = 160 per GPU; 48 does not divide it; 40 (|48-40| = 8) is nearer than 32 (16)
    assert _assert_verl_answer_is_the_least_distance(_verl(64, 48)) == {"actor_micro_per_gpu": 40}


@pytest.mark.parametrize("seed", range(3))
def test_verl_fix_with_memory_is_no_farther_than_any_valid_fitting_config(seed):
    rng = random.Random(seed)
    while True:  # a micro batch that does not divide the per-GPU mini batch
        mini, micro = rng.choice([24, 40, 48, 56, 64]), rng.randint(3, 40)
        if (mini * 5 // 2) % micro:
            break
    _assert_verl_answer_is_the_least_distance(_verl(mini, micro))

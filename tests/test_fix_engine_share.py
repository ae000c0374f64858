"""Memory grows with the engine's memory share only once the share holds the engine's weights: below it the engine
cannot start and the rollout is priced over the GPU by the shortfall (costmodel/memory.py T_NO_FIT), which a larger
share shrinks. fix's proof that no repair fits read the least memory at the smallest share only, and its memory cuts
excluded every larger share with a misfit one (the policy's grows_memory), so verl's Qwen2.5-7B LoRA on one H100
pasted with gpu_memory_utilization=0.1 was answered "No repair exists (proven)", the rollout at least 88.3 GiB of
78.6, while a share of 0.3 with one rollout GPU fits."""

from __future__ import annotations

from rlbatch_solver.commands.fix_job import read_job
from rlbatch_solver.commands.fix_search import repair_once
from rlbatch_solver.costmodel.memory import estimate_memory
from rlbatch_solver.deadline import Deadline
from rlbatch_solver.frameworks.repair_policies import NOT_MONOTONE_IN

ARGS = ["trainer.n_gpus_per_node=1", "trainer.nnodes=1", "actor_rollout_ref.rollout.gpu_memory_utilization=0.1",
        "data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=16", "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1", "algorithm.adv_estimator=grpo",
        "data.max_response_length=512", "data.max_prompt_length=512", "actor_rollout_ref.model.lora_rank=16",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1"]


def test_a_share_too_small_for_the_weights_misfits_where_a_larger_one_fits():
    job = read_job(ARGS, "verl", None, "qwen2.5-7b", "h100", (), None, 1.0, None)
    plan = job.spec.plan
    small, larger = (estimate_memory(plan({**job.values, "gmu_permille": g}, "rollout")) for g in (100, 300))
    assert not small.rollout_fits_weights and larger.rollout_fits_weights
    assert small.peak("rollout") > larger.peak("rollout")  # memory falls with the share here: not monotone
    assert "gmu_permille" in job.policy.grows_memory and "gmu_permille" in NOT_MONOTONE_IN
    for keys in (job.policy.misfit_grows(["rollout", "actor_update"]),
                 job.policy.least_at_smallest(["rollout", "actor_update"])):  # the update's memory grows with it
        assert "gmu_permille" not in keys["rollout"] and "gmu_permille" in keys["actor_update"]


def test_fix_raises_a_share_too_small_for_the_weights_rather_than_proving_no_repair():
    job = read_job(ARGS, "verl", None, "qwen2.5-7b", "h100", (), None, 1.0, None)
    attempt = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec, deadline=Deadline(30.0))
    res = attempt.result
    assert res.method != "floor" and res.solution is not None, (res.status, res.memory_floor)
    assert res.solution["gmu_permille"] > 100 and not attempt.ruleset.failing_errors(res.solution), res.solution

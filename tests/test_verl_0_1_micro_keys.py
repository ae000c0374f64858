"""verl 0.1 (the PyPI release) and the January 2025 forks of verl before PR #136 (TinyZero, Logic-RL, Search-R1) have
only the global micro batch keys; ``recommend -f verl==0.1.0`` printed the per-GPU ones (actor.ppo_micro_batch_size_per_gpu,
...), which their yaml lacks (Hydra: "Key ... is not in struct"), and PPO's algorithm.use_kl_in_reward, new in 0.4.

The keys below are the ones a recommended command may name, as the forks' trainer yaml has them (TinyZero
verl/trainer/config/ppo_trainer.yaml, commit de61e6a): the global micro batch keys, no ``*_per_gpu`` micro key, no
algorithm.use_kl_in_reward."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rlbatch_solver import api
from rlbatch_solver.commands.recommend import best_command
from rlbatch_solver.frameworks.verl import repair
from rlbatch_solver.frameworks.verl.cost import PER_GPU_MICRO_KEYS
from rlbatch_solver.scenario import Scenario

AR = "actor_rollout_ref"
FORK_KEYS = frozenset({
    "data.train_files", "data.val_files", "data.train_batch_size", "data.max_prompt_length", "data.max_response_length",
    f"{AR}.model.path", f"{AR}.model.enable_gradient_checkpointing", f"{AR}.model.use_remove_padding",
    f"{AR}.actor.ppo_mini_batch_size", f"{AR}.actor.ppo_micro_batch_size", f"{AR}.actor.use_dynamic_bsz",
    f"{AR}.actor.ppo_max_token_len_per_gpu", f"{AR}.actor.use_kl_loss", f"{AR}.actor.ulysses_sequence_parallel_size",
    f"{AR}.actor.fsdp_config.param_offload", f"{AR}.actor.fsdp_config.optimizer_offload",
    f"{AR}.ref.fsdp_config.param_offload", f"{AR}.ref.log_prob_micro_batch_size", f"{AR}.ref.log_prob_use_dynamic_bsz",
    f"{AR}.ref.log_prob_max_token_len_per_gpu", f"{AR}.ref.ulysses_sequence_parallel_size",
    f"{AR}.rollout.name", f"{AR}.rollout.gpu_memory_utilization", f"{AR}.rollout.tensor_model_parallel_size",
    f"{AR}.rollout.log_prob_micro_batch_size", f"{AR}.rollout.log_prob_use_dynamic_bsz",
    f"{AR}.rollout.log_prob_max_token_len_per_gpu", f"{AR}.rollout.n",
    "critic.model.path", "critic.model.enable_gradient_checkpointing", "critic.model.fsdp_config.param_offload",
    "critic.model.fsdp_config.optimizer_offload", "critic.ppo_mini_batch_size", "critic.ppo_micro_batch_size",
    "critic.use_dynamic_bsz", "critic.ppo_max_token_len_per_gpu", "critic.ulysses_sequence_parallel_size",
    "algorithm.adv_estimator", "trainer.logger", "trainer.nnodes", "trainer.n_gpus_per_node",
})
GLOBAL_MICRO = (f"{AR}.actor.ppo_micro_batch_size", f"{AR}.rollout.log_prob_micro_batch_size",
                f"{AR}.ref.log_prob_micro_batch_size")


def _printed_keys(scenario: Scenario) -> list[str]:
    report = api.recommend(scenario, top=1, time_limit_s=30)
    words = [w.strip('"') for w in best_command(report)]
    return [k for k in (w.partition("=")[0].split()[-1] for w in words if "=" in w) if "." in k]


BASE = Scenario(framework="verl==0.1.0", gpu="h100", gpus=8, model="qwen2.5-7b", prompt_length=1024,
                response_length=1024)


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_every_key_recommend_prints_for_verl_0_1_is_one_its_yaml_has(algorithm):
    keys = _printed_keys(replace(BASE, algorithm=algorithm))
    assert not [k for k in keys if k not in FORK_KEYS], keys
    fixed_batches = _printed_keys(replace(BASE, algorithm=algorithm, fixed={f"{AR}.actor.use_dynamic_bsz": False}))
    assert not [k for k in fixed_batches if k not in FORK_KEYS], fixed_batches
    assert set(GLOBAL_MICRO) <= set(fixed_batches)  # the micro batches are said, in the keys the release reads
    if algorithm == "ppo":
        assert "critic.ppo_micro_batch_size" in fixed_batches


def test_where_n_scales_the_global_keys_token_packed_micro_batches_are_searched_beside_them():
    """A fork's smallest global micro batch is rollout.n sequences: 1.5B with 8 responses on 24 GiB GPUs fits only
    with use_dynamic_bsz (the search found no config before it searched it)."""
    small = replace(BASE, gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", n=8, prompt_length=880, response_length=1280,
                    fixed={"data.train_batch_size": 64})
    report = api.recommend(small, top=1, time_limit_s=30)
    assert report.best is not None and report.best.values["actor_dyn"]


def test_a_dynamic_batch_prints_no_micro_key_at_all():
    keys = _printed_keys(replace(BASE, fixed={f"{AR}.actor.use_dynamic_bsz": True}))
    assert not [k for k in keys if k not in FORK_KEYS], keys
    assert not set(GLOBAL_MICRO) & set(keys)


def test_a_newer_release_still_prints_the_per_gpu_keys():
    keys = _printed_keys(replace(BASE, framework="verl==0.2.0"))
    assert f"{AR}.actor.ppo_micro_batch_size_per_gpu" in keys
    assert f"{AR}.actor.ppo_micro_batch_size" not in keys


def test_fix_adds_no_per_gpu_key_to_a_verl_0_1_config_without_one_whatever_n():
    """PPO (rollout.n 1, nothing for n to scale) as well as GRPO: the forks' yaml has no per-GPU key to add; a config
    of verl main after #136 (still 0.1) that names one may move them."""
    values = {"n": 1, "actor_micro": 64, "megatron": False}
    assert not set(PER_GPU_MICRO_KEYS) & set(repair.for_values(repair.VERL, values, "0.1.0").rules)
    post_136 = {**values, "actor_micro": None, "actor_micro_per_gpu": 4}
    assert set(PER_GPU_MICRO_KEYS) <= set(repair.for_values(repair.VERL, post_136, "0.1.0").rules)
    assert set(PER_GPU_MICRO_KEYS) <= set(repair.for_values(repair.VERL, values, "0.2.0").rules)

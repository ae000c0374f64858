"""verl 0.2.0's and 0.1.0's packs (frameworks/verl/versions.py V020, V010): the batch rules of verl 0.2.0.post2's driver and workers on
the configs of the forks built on it (TinyZero, Search-R1, ...), and its bundled vLLM in the memory model (the KV cache
sized from the memory free at start-up, the engine's weights dropped after each rollout)."""

from __future__ import annotations

import json

import pytest

from clirun import run
from rlbatch_solver import api
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel import constants as C
from rlbatch_solver.costmodel.memory import (
    T_ENGINE_ASLEEP,
    _resident_at_engine_start,
    engine_activation_bytes,
    engine_budget,
    engine_weight_bytes,
    estimate_memory,
    model_consts,
    trainer_resident_at_rollout,
)
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.verl import versions as VV

AR = "actor_rollout_ref"
# TinyZero's scripts/train_tiny_zero.sh (PPO with a critic, the global micro batch keys) on 2 GPUs
TINYZERO = ["data.train_batch_size=256", "data.max_prompt_length=256", "data.max_response_length=1024",
            f"{AR}.actor.ppo_mini_batch_size=128", f"{AR}.actor.ppo_micro_batch_size=8",
            f"{AR}.rollout.log_prob_micro_batch_size=8", f"{AR}.rollout.tensor_model_parallel_size=2",
            f"{AR}.rollout.gpu_memory_utilization=0.4", f"{AR}.ref.log_prob_micro_batch_size=4",
            "critic.ppo_micro_batch_size=8", "trainer.n_gpus_per_node=2", "trainer.nnodes=1"]


def _ids(report) -> set[str]:
    return {v.rule for v in report.violations}


def test_tinyzero_ppo_runs_on_0_2_and_is_refused_by_0_6_1():
    """0.6.1's critic yaml copies critic.ppo_micro_batch_size into the per-GPU key, so setting the global one alone
    counts as both; 0.2's yaml has ppo_micro_batch_size_per_gpu: null and its driver accepts the global one."""
    old = api.check(TINYZERO, framework="verl==0.2.0")
    assert old.valid and old.version == "0.2.0", _ids(old)
    new = api.check(TINYZERO, framework="verl==0.6.1")
    assert "verl.critic.micro_exactly_one" in _ids(new)
    both = api.check(TINYZERO + ["critic.ppo_micro_batch_size_per_gpu=4"], framework="verl==0.2.0")
    assert "verl.critic.micro_exactly_one" in _ids(both)


def test_the_critic_mini_batch_is_not_multiplied_by_n():
    """verl 0.2 CriticWorker.__init__: critic mini // dp, no * rollout.n (the actor's is multiplied). critic mini 4
    over 4 GPUs is 1 sample per GPU, not a whole number of micro batches of 2; 0.6.1 has 4*4//4 = 4 per GPU."""
    cfg = ["trainer.n_gpus_per_node=4", "data.train_batch_size=8", f"{AR}.rollout.n=4",
           f"{AR}.actor.ppo_mini_batch_size=4", f"{AR}.actor.ppo_micro_batch_size_per_gpu=2",
           f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=2", f"{AR}.ref.log_prob_micro_batch_size_per_gpu=2",
           "critic.ppo_micro_batch_size_per_gpu=2"]
    assert "verl.legacy.critic_mini_divisible_by_micro" in _ids(api.check(cfg, framework="verl==0.2.0"))
    assert "verl.legacy.critic_mini_divisible_by_micro" not in _ids(api.check(cfg, framework="verl==0.6.1"))


def test_0_2_checks_the_batch_against_the_gpus_with_dynamic_batch_and_needs_eager_with_free_cache():
    dyn = TINYZERO + ["data.train_batch_size=255", f"{AR}.actor.use_dynamic_bsz=True"]
    assert "verl.driver.batch_divisible_by_gpus" in _ids(api.check(dyn, framework="verl==0.2.0"))
    graphs = api.check(TINYZERO + [f"{AR}.rollout.enforce_eager=False"], framework="verl==0.2.0")
    assert "verl.vllm.free_cache_needs_eager" in _ids(graphs)
    kept = TINYZERO + [f"{AR}.rollout.enforce_eager=False", f"{AR}.rollout.free_cache_engine=False"]
    assert "verl.vllm.free_cache_needs_eager" not in _ids(api.check(kept, framework="verl==0.2.0"))


def _plan(framework: str, phase: str, extra: list[str] = (), model: str = "qwen2.5-3b", gpu: str = "h100"):
    """The cost model's plan of one phase of the TinyZero config, with the values ``check`` read."""
    card, g = load_model(model), load_gpu(gpu)
    values = api.check(TINYZERO + list(extra), framework=framework, model=model, gpu=gpu).values
    return get_framework(framework).cost_spec(card, g).plan(values, phase), model_consts(card), g


def test_the_kv_cache_is_sized_from_the_memory_free_at_start_up():
    """verl 0.2's vLLM worker (third_party/vllm/vllm_v_0_6_3/worker.py determine_num_available_blocks):
    KV = util x (total - what the trainer's models hold at start-up - the engine's weights - its profile run)."""
    plan, mc, gpu = _plan("verl==0.2.0", "rollout")
    assert plan.engine_kv_of_free_memory and plan.engine_weights_released
    assert plan.engine_max_len == 256 + 1024  # verl 0.2 passes max_model_len = prompt + response
    eb = engine_budget(plan, mc, 0.0)
    start = _resident_at_engine_start(plan, mc)
    weights, act = engine_weight_bytes(plan, mc), engine_activation_bytes(plan, mc)
    expected = 0.4 * (gpu.memory_bytes - start - weights - act - C.ENGINE_NON_TORCH_BYTES)
    assert start > 0 and eb.kv_bytes == pytest.approx(expected)
    assert eb.budget == pytest.approx(weights + act + C.ENGINE_NON_TORCH_BYTES + expected)
    # no optimizer state yet at start-up: the trainer holds more while it generates than when the engine started
    assert sum(trainer_resident_at_rollout(plan, mc).values()) > start
    # 0.6.1's vLLM: util x total, whatever the trainer holds
    plan6, _, _ = _plan("verl==0.6.1", "rollout")
    assert not plan6.engine_kv_of_free_memory
    assert engine_budget(plan6, mc, 0.0).budget == pytest.approx(0.4 * gpu.memory_bytes)


def test_the_engine_drops_its_weights_after_rollout_even_with_the_cache_kept():
    """verl 0.2's sharding manager offloads the vLLM weights on exit whatever free_cache_engine says, then empties
    torch's cache (workers/sharding_manager/fsdp_vllm.py __exit__: offload_model_weights, torch.cuda.empty_cache):
    with the cache kept, the training phases hold the KV cache, neither the weights nor the profile run's memory."""
    kept = [f"{AR}.rollout.free_cache_engine=False"]
    plan, mc, _ = _plan("verl==0.2.0", "actor_update", kept)
    eb = engine_budget(plan, mc, 0.0)
    assert estimate_memory(plan).phases["actor_update"][T_ENGINE_ASLEEP] == pytest.approx(eb.kv_bytes)
    assert eb.kv_bytes < eb.budget - eb.weights
    plan6, _, _ = _plan("verl==0.6.1", "actor_update", kept)
    eb6 = engine_budget(plan6, mc, 0.0)
    assert estimate_memory(plan6).phases["actor_update"][T_ENGINE_ASLEEP] >= eb6.budget


def test_0_2_is_dated_by_the_critics_global_micro_batch_alone():
    """The critic's global micro batch without the per-GPU key, where a critic trains, is a 0.2 config (0.6.1-0.9.1
    refuse it): TinyZero's PPO script is checked with 0.2.0 unasked. A GRPO config (no critic) is dated by 0.2's own
    keys: actor.fsdp_config.grad_offload is gone from 0.3.0.post1's trainer yaml."""
    rep = api.check(TINYZERO + [f"{AR}.actor.fsdp_config.grad_offload=False"])
    assert rep.version == "0.2.0" and rep.valid, (rep.version, _ids(rep))
    assert any("critic's global micro batch alone" in n for n in rep.notes)
    grpo = TINYZERO + ["algorithm.adv_estimator=grpo", f"{AR}.actor.fsdp_config.grad_offload=False"]
    assert api.check(grpo).version == "0.2.0"
    assert api.check(["algorithm.adv_estimator=grpo", *TINYZERO]).version == "0.7.1"  # global micro batches alone
    both = TINYZERO + ["critic.ppo_micro_batch_size_per_gpu=4"]
    dated = VV.dating(dict(a.split("=", 1) for a in both))
    assert dated and not any("critic's global micro batch alone" in why for _, why, _ in dated)
    assert VV.detect(dict(a.split("=", 1) for a in both))[0] == "0.7.1"
    assert VV.missing_keys({f"{AR}.actor.fsdp_config.grad_offload": False, "ray_init.num_cpus": 8}, "0.2.0") == [
        "ray_init.num_cpus"]


def test_a_0_2_post_release_is_named_on_the_command_line():
    proc = run("check", "--framework", "verl==0.2.0.post2", "--json", "--", *TINYZERO)
    out = json.loads(proc.stdout)
    assert out["rules_version"] == "0.2.0" and proc.returncode == 0


def test_0_1_defaults_differ_from_0_2_in_checkpointing_and_the_reference():
    """verl 0.1's yaml turns gradient checkpointing off (0.2's: on), and its reference has no CPU offload: its bf16
    params stay on the GPU unless ref.fsdp_config.param_offload, which offloads them between its passes only."""
    old, new = _plan("verl==0.1.0", "actor_update"), _plan("verl==0.2.0", "actor_update")
    assert not old[0].grad_ckpt and new[0].grad_ckpt
    on = estimate_memory(_plan("verl==0.1.0", "rollout")[0]).phases["rollout"]
    assert on.get("ref params (resident)", 0) > 0
    assert "ref params (resident)" not in estimate_memory(_plan("verl==0.2.0", "rollout")[0]).phases["rollout"]
    off = [f"{AR}.ref.fsdp_config.param_offload=True"]
    assert "ref params (resident)" not in estimate_memory(_plan("verl==0.1.0", "rollout", off)[0]).phases["rollout"]
    ref_pass = estimate_memory(_plan("verl==0.1.0", "ref", off)[0]).phases["ref"]
    assert ref_pass["params (sharded)"] > 0  # loaded for its own pass
    assert api.check(TINYZERO, framework="verl==0.1").version == "0.1.0"

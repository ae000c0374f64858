"""Hand-made cases for rules that only fire inside GPU workers (torch.distributed, vLLM, megatron-core, Ray).

The parity suite cannot run that code on CPU (docs/parity.md lists every such rule and the source it
follows). Rules whose cases live in tests/test_*.py are not repeated here; this file covers the rest: for
each rule, a config that breaks it (arithmetic from the cited source) and the nearest one that does not.
Not marked ``parity``: it needs no framework package and runs in the default suite.
"""

import pytest

import rlbatch_solver as rb

AR = "actor_rollout_ref"
MODEL = "qwen2.5-7b"  # 28 heads, 4 KV heads, 28 layers

VERL = {"trainer.n_gpus_per_node": 8, "data.train_batch_size": 64, f"{AR}.rollout.n": 8,
        f"{AR}.actor.ppo_mini_batch_size": 32, f"{AR}.actor.ppo_micro_batch_size_per_gpu": 8,
        f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": 16, "algorithm.adv_estimator": "grpo"}
KL = {f"{AR}.actor.use_kl_loss": True, f"{AR}.ref.log_prob_micro_batch_size_per_gpu": 16}
GAE = {"algorithm.adv_estimator": "gae", "critic.ppo_micro_batch_size_per_gpu": 8}
MG = f"{AR}.actor.megatron"
OTC = f"{MG}.override_transformer_config"
MEGATRON = {**VERL, "model_engine": "megatron", f"{MG}.tensor_model_parallel_size": 2,
            f"{MG}.pipeline_model_parallel_size": 2}  # dp = 2
PP4_VPP2 = {f"{MG}.tensor_model_parallel_size": 2, f"{MG}.pipeline_model_parallel_size": 4,
            f"{MG}.virtual_pipeline_model_parallel_size": 2}  # dp = 1

# rule, framework, config that breaks it, the same config repaired (the rule must not fire)
VERL_CASES = [
    ("verl.worker.logprob_micro_per_gpu_required", "verl==0.9.1",  # unnamed, the global key reads 0.7.1
     {**VERL, f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": None, f"{AR}.rollout.log_prob_micro_batch_size": 128},
     VERL),
    ("verl.rollout.replica_fits_nodes", "verl",  # 4 GPUs per replica over nodes of 3 rollout GPUs
     {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 4, f"{AR}.rollout.n_gpus_per_node": 3},
     {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 4, f"{AR}.rollout.n_gpus_per_node": 4}),
    ("verl.vllm.heads_divisible_by_tp", "verl", {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 8},
     {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 4}),
    ("verl.vllm.kv_heads_vs_tp", "verl", {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 3},  # 4 KV heads
     {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 2}),
    ("verl.vllm.mlp_divisible_by_tp", "verl", {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 3},  # 18944
     {**VERL, f"{AR}.rollout.tensor_model_parallel_size": 4}),  # = 2^9 * 37: 3 does not divide it, 4 does
    ("verl.vllm.prompt_fits_model_len", "verl",
     {**VERL, "data.max_prompt_length": 1024, f"{AR}.rollout.max_model_len": 1024},
     {**VERL, "data.max_prompt_length": 1024, f"{AR}.rollout.max_model_len": 4096}),
    ("verl.step.mini_divisible_by_dp", "verl", {**VERL, "trainer.n_gpus_per_node": 6}, VERL),  # 256 % 6
    ("verl.step.ref_micro_divides_local_batch", "verl",  # 64*8/8 = 64 samples per GPU, micro 24
     {**VERL, **KL, f"{AR}.ref.log_prob_micro_batch_size_per_gpu": 24}, {**VERL, **KL}),
    ("verl.step.critic_mini_divisible_by_dp", "verl", {**VERL, **GAE, "trainer.n_gpus_per_node": 6}, {**VERL, **GAE}),
    ("verl.fsdp.sp_divides_gpus", "verl", {**VERL, f"{AR}.actor.ulysses_sequence_parallel_size": 3},
     {**VERL, f"{AR}.actor.ulysses_sequence_parallel_size": 2}),
    ("verl.fsdp.ref_sp_divides_gpus", "verl", {**VERL, **KL, f"{AR}.ref.ulysses_sequence_parallel_size": 3},
     {**VERL, **KL, f"{AR}.ref.ulysses_sequence_parallel_size": 2}),
    ("verl.fsdp.fsdp_size_divides_gpus", "verl", {**VERL, f"{AR}.actor.fsdp_config.fsdp_size": 3},
     {**VERL, f"{AR}.actor.fsdp_config.fsdp_size": 4}),
    ("verl.fsdp.critic_sp_needs_remove_padding", "verl",
     {**VERL, **GAE, "critic.fsdp.ulysses_sequence_parallel_size": 2, "critic.model.use_remove_padding": False},
     {**VERL, **GAE, "critic.fsdp.ulysses_sequence_parallel_size": 2, "critic.model.use_remove_padding": True}),
    ("verl.ulysses.ref_heads_divisible", "verl", {**VERL, **KL, f"{AR}.ref.ulysses_sequence_parallel_size": 8},
     {**VERL, **KL, f"{AR}.ref.ulysses_sequence_parallel_size": 4}),  # 28 heads
    ("verl.ulysses.ref_kv_heads", "verl", {**VERL, **KL, f"{AR}.ref.ulysses_sequence_parallel_size": 7},
     {**VERL, **KL, f"{AR}.ref.ulysses_sequence_parallel_size": 2}),  # 4 KV heads vs 7
    ("verl.ulysses.critic_heads_divisible", "verl", {**VERL, **GAE, "critic.fsdp.ulysses_sequence_parallel_size": 8},
     {**VERL, **GAE, "critic.fsdp.ulysses_sequence_parallel_size": 4}),
    ("verl.ulysses.critic_kv_heads", "verl", {**VERL, **GAE, "critic.fsdp.ulysses_sequence_parallel_size": 7},
     {**VERL, **GAE, "critic.fsdp.ulysses_sequence_parallel_size": 2}),
    ("verl.megatron.first_stage_layers_divisible_by_vpp", "verl-megatron",
     {**MEGATRON, **PP4_VPP2, f"{OTC}.num_layers_in_first_pipeline_stage": 5, f"{OTC}.num_layers_in_last_pipeline_stage": 5},
     {**MEGATRON, **PP4_VPP2, f"{OTC}.num_layers_in_first_pipeline_stage": 6, f"{OTC}.num_layers_in_last_pipeline_stage": 6}),
    ("verl.megatron.last_stage_layers_divisible_by_vpp", "verl-megatron",
     {**MEGATRON, **PP4_VPP2, f"{OTC}.num_layers_in_first_pipeline_stage": 6, f"{OTC}.num_layers_in_last_pipeline_stage": 5},
     {**MEGATRON, **PP4_VPP2, f"{OTC}.num_layers_in_first_pipeline_stage": 6, f"{OTC}.num_layers_in_last_pipeline_stage": 6}),
    ("verl.megatron.middle_stage_layers_divisible_by_vpp", "verl-megatron",  # 28-6-8 = 14 over 2 stages: 7 each
     {**MEGATRON, **PP4_VPP2, f"{OTC}.num_layers_in_first_pipeline_stage": 6, f"{OTC}.num_layers_in_last_pipeline_stage": 8},
     {**MEGATRON, **PP4_VPP2, f"{OTC}.num_layers_in_first_pipeline_stage": 6, f"{OTC}.num_layers_in_last_pipeline_stage": 6}),
    ("verl.megatron.critic_parallel_matches_actor", "verl-megatron", {**MEGATRON, **GAE},
     {**MEGATRON, **GAE, "critic.megatron.tensor_model_parallel_size": 2, "critic.megatron.pipeline_model_parallel_size": 2}),
    ("verl.megatron.vpp_logprob_micro_batches_grouped", "verl-megatron",  # 256 samples per GPU in 1 micro batch
     {**MEGATRON, f"{MG}.virtual_pipeline_model_parallel_size": 2, f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": 256},
     {**MEGATRON, f"{MG}.virtual_pipeline_model_parallel_size": 2}),
    ("verl.megatron.vpp_ref_micro_batches_grouped", "verl-megatron",
     {**MEGATRON, **KL, f"{MG}.virtual_pipeline_model_parallel_size": 2, f"{AR}.ref.log_prob_micro_batch_size_per_gpu": 256},
     {**MEGATRON, **KL, f"{MG}.virtual_pipeline_model_parallel_size": 2}),
]

ORL = {"actor.num_gpus_per_node": 8, "ref.num_gpus_per_node": 8, "critic.num_gpus_per_node": 8,
       "reward.num_gpus_per_node": 8, "vllm.num_engines": 4, "vllm.tensor_parallel_size": 2,
       "rollout.batch_size": 128, "rollout.n_samples_per_prompt": 8, "rollout.micro_batch_size": 4,
       "train.batch_size": 128, "train.micro_batch_size": 4, "algo.advantage.estimator": "group_norm",
       "algo.kl.init_coef": 0.001}
ORL_GAE = {**ORL, "algo.advantage.estimator": "gae"}
FEW = {"rollout.batch_size": 1, "rollout.n_samples_per_prompt": 2}  # ceil(2/4) = 1 experience batch
ENOUGH = {"rollout.batch_size": 16, "rollout.n_samples_per_prompt": 2}  # 32/4 = 8 batches for 8 ranks
# 3*8/2 = 12 experience batches over 8 ranks (2/2/2/2/2/2/0/0 with chunks of 2); 4*16/2 = 32 split evenly
ZERO3 = {"ds.zero_stage": 3, "rollout.batch_size": 3, "rollout.n_samples_per_prompt": 8, "rollout.micro_batch_size": 2}
ZERO3_FIX = {"ds.zero_stage": 3, "rollout.batch_size": 4, "rollout.n_samples_per_prompt": 16, "rollout.micro_batch_size": 2}

OPENRLHF_CASES = [
    ("openrlhf.deepspeed.critic_mesh", {**ORL_GAE, "critic.num_gpus_per_node": 3, "ds.ring_attn_size": 2},
     {**ORL_GAE, "critic.num_gpus_per_node": 4, "ds.ring_attn_size": 2}),
    ("openrlhf.deepspeed.reward_mesh", {**ORL, "reward.num_gpus_per_node": 3, "ds.ring_attn_size": 2},
     {**ORL, "reward.num_gpus_per_node": 4, "ds.ring_attn_size": 2}),
    ("openrlhf.vllm.engines_required", {k: v for k, v in ORL.items() if k != "vllm.num_engines"}, ORL),
    ("openrlhf.launcher.ref_batches_cover_group", {**ORL, **FEW}, {**ORL, **ENOUGH}),
    ("openrlhf.launcher.critic_batches_cover_group", {**ORL_GAE, **FEW}, {**ORL_GAE, **ENOUGH}),
    ("openrlhf.launcher.reward_batches_cover_group", {**ORL, **FEW}, {**ORL, **ENOUGH}),
    ("openrlhf.dynamic.actor_train_batch_covers_dp", {**ORL, "train.dynamic_batch_enable": True, "train.batch_size": 4},
     {**ORL, "train.dynamic_batch_enable": True, "train.batch_size": 8}),
    ("openrlhf.dynamic.critic_train_batch_covers_dp",
     {**ORL_GAE, "train.dynamic_batch_enable": True, "train.batch_size": 4},
     {**ORL_GAE, "train.dynamic_batch_enable": True, "train.batch_size": 8}),
    *[(f"openrlhf.zero3.{g}_even_batches", {**(ORL_GAE if g == "critic" else ORL), **ZERO3},
       {**(ORL_GAE if g == "critic" else ORL), **ZERO3_FIX}) for g in ("actor", "ref", "critic", "reward")],
]


def _fired(framework, config):
    if framework == "openrlhf":
        tokens = [t for k, v in config.items() for t in ((f"--{k}",) if v is True else (f"--{k}", str(v)))]
        report = rb.check(tokens, framework=framework, model=MODEL)
    else:
        report = rb.check({k: v for k, v in config.items() if v is not None}, framework=framework, model=MODEL)
    return {v.rule for v in report.violations}


@pytest.mark.parametrize("rule,framework,broken,repaired", VERL_CASES, ids=[c[0] for c in VERL_CASES])
def test_verl_gpu_only_rule(rule, framework, broken, repaired):
    assert rule in _fired(framework, broken)
    assert rule not in _fired(framework, repaired)


@pytest.mark.parametrize("rule,broken,repaired", OPENRLHF_CASES, ids=[c[0] for c in OPENRLHF_CASES])
def test_openrlhf_gpu_only_rule(rule, broken, repaired):
    assert rule in _fired("openrlhf", broken)
    assert rule not in _fired("openrlhf", repaired)

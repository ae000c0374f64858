"""SkyRL 0.3.1's own error messages, mapped to our rules (``explain``), and its out-of-memory phases.

``tests/test_explain.py`` checks that every rule id exists and that each pattern matches its example.
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern, some_divisors
from ..verl import errors as verl_errors
from .rules import BATCH, BUILD, CFG, GEN, MEGATRON, ULYSSES, UTILS


def _p(regex: str, rules: tuple[str, ...], source: str, example: str, **kw) -> ErrorPattern:
    return ErrorPattern("skyrl", regex, rules, source, example, **kw)


PATTERNS: list[ErrorPattern] = [
    _p(r"generator\.max_input_length should be set equal to trainer\.max_prompt_length",
       ("skyrl.generator.input_length_single_turn",), GEN,
       "AssertionError: generator.max_input_length should be set equal to trainer.max_prompt_length for single-turn "
       "generation"),
    _p(r"generator\.max_input_length should be set greater than or equal to trainer\.max_prompt_length",
       ("skyrl.generator.input_length_multi_turn",), GEN,
       "AssertionError: generator.max_input_length should be set greater than or equal to trainer.max_prompt_length "
       "for multi-turn generation"),
    _p(r"if we are using the offline vLLM engine, we need to put generator in batched mode",
       ("skyrl.generator.offline_vllm_needs_batched",), GEN,
       "AssertionError: if we are using the offline vLLM engine, we need to put generator in batched mode for faster "
       "generation"),
    _p(r"do not support tensor parallel inference engine with SGLang", ("skyrl.generator.sglang_tp1",), GEN,
       "AssertionError: As of now, We do not support tensor parallel inference engine with SGLang when running "
       "engines locally. Please set `inference_engine_tensor_parallel_size` to 1."),
    _p(r"only vllm is supported for with megatron", ("skyrl.megatron.needs_vllm",), MEGATRON,
       "AssertionError: only vllm is supported for with megatron"),
    _p(r"only GRPO training is currently supported for megatron", ("skyrl.megatron.no_critic",), MEGATRON,
       "AssertionError: only GRPO training is currently supported for megatron"),
    _p(r"context parallel is only supported with sample packing", ("skyrl.megatron.cp_needs_packing",), MEGATRON,
       "AssertionError: context parallel is only supported with sample packing"),
    _p(r"ulysses style sequence parallel is not supported for megatron", ("skyrl.megatron.no_ulysses",), MEGATRON,
       "AssertionError: found policy.sequence_parallel_size=2, ulysses style sequence parallel is not supported for "
       "megatron"),
    _p(r"Inference (?:data|expert) parallelism is not yet supported for SGLang backend",
       ("skyrl.generator.sglang_no_engine_dp_ep",), GEN,
       "AssertionError: Inference data parallelism is not yet supported for SGLang backend."),
    _p(r"data parallel size \* tensor parallel size must equal expert parallel size",
       ("skyrl.generator.ep_is_dp_times_tp",), GEN,
       "AssertionError: If inference expert parallel is enabled, data parallel size * tensor parallel size must equal "
       "expert parallel size. Got dp_size=1, tp_size=2, ep_size=4"),
    _p(r"`trainer\.critic\.model\.path` should be provided for PPO training", ("skyrl.algorithm.gae_needs_critic",),
       CFG, "AssertionError: `trainer.critic.model.path` should be provided for PPO training, got `None`"),
    _p(r"use_kl_in_reward and use_kl_loss should be mutually exclusive", ("skyrl.algorithm.kl_one_place",), CFG,
       "AssertionError: use_kl_in_reward and use_kl_loss should be mutually exclusive"),
    _p(r"fwd pass cpu offloading is not supported for FSDP1", ("skyrl.fsdp1.no_cpu_offload",), CFG,
       "AssertionError: fwd pass cpu offloading is not supported for FSDP1 policy worker, use FSDP2 instead"),
    _p(r"only deepspeed stage 3 is currently supported", ("skyrl.deepspeed.stage3",), CFG,
       "AssertionError: only deepspeed stage 3 is currently supported!"),
    _p(r"policy_world_size (?P<world>\d+) should be divisible by \(pp \* cp \* tp\) (?P<mp>\d+)",
       ("skyrl.megatron.policy_world_divisible",), BATCH,
       "AssertionError: policy_world_size 6 should be divisible by (pp * cp * tp) 4. This ensures that the data "
       "parallel size is an integer.",
       hint=lambda x: (f"tp x pp x cp = {x['mp']} does not divide the {x['world']} policy GPUs; products that do: "
                       f"{some_divisors(int(x['world']))}"), numbers=("world", "mp")),
    _p(r"ref_world_size \d+ should be divisible by \(pp \* cp \* tp\)", ("skyrl.megatron.ref_world_divisible",), BATCH,
       "AssertionError: ref_world_size 6 should be divisible by (pp * cp * tp) 4. This ensures that the data parallel "
       "size is an integer."),
    _p(r"train_batch_size (?P<tbs>\d+) should be divisible by policy_mini_batch_size (?P<mini>\d+)",
       ("skyrl.batch.train_divisible_by_mini",), BATCH,
       "AssertionError: train_batch_size 1000 should be divisible by policy_mini_batch_size 256",
       hint=lambda x: (f"policy_mini_batch_size {x['mini']} does not divide train_batch_size {x['tbs']}; sizes that "
                       f"do: {some_divisors(int(x['tbs']))}"),
       numbers=("tbs", "mini")),
    _p(r"train_batch_size \d+ should be divisible by critic_mini_batch_size \d+",
       ("skyrl.batch.train_divisible_by_critic_mini",), BATCH,
       "AssertionError: train_batch_size 1000 should be divisible by critic_mini_batch_size 256"),
    _p(r"Invalid policy_mini_batch_size_per_gpu", ("skyrl.batch.mini_covers_dp",), BATCH,
       "AssertionError: Invalid policy_mini_batch_size_per_gpu: 0. mini_batch_size=1, n_samples_per_prompt=2, "
       "dp_size=4"),
    _p(r"Invalid critic_mini_batch_size_per_gpu", ("skyrl.batch.critic_mini_covers_dp",), BATCH,
       "AssertionError: Invalid critic_mini_batch_size_per_gpu: 0. mini_batch_size=1, n_samples_per_prompt=2, "
       "dp_size=4"),
    _p(r"normalized policy_mini_batch_size_per_gpu (?P<per_gpu>\d+) should be divisible by "
       r"micro_train_batch_size_per_gpu (?P<micro>\d+)", ("skyrl.batch.mini_divisible_by_micro",), BATCH,
       "AssertionError: normalized policy_mini_batch_size_per_gpu 320 should be divisible by "
       "micro_train_batch_size_per_gpu 64",
       hint=lambda x: (f"micro_train_batch_size_per_gpu {x['micro']} does not divide the {x['per_gpu']} update samples "
                       f"per GPU; sizes that do: {some_divisors(int(x['per_gpu']))}"),
       numbers=("per_gpu", "micro")),
    _p(r"normalized critic_mini_batch_size_per_gpu \d+ should be divisible by micro_train_batch_size_per_gpu",
       ("skyrl.batch.critic_mini_divisible_by_micro",), BATCH,
       "AssertionError: normalized critic_mini_batch_size_per_gpu 320 should be divisible by "
       "micro_train_batch_size_per_gpu 64"),
    _p(r"normalized policy_train_batch_size_per_gpu .*? should be divisible by policy_mini_batch_size_per_gpu",
       ("skyrl.batch.train_per_gpu_divisible_by_mini",), BATCH,
       "AssertionError: normalized policy_train_batch_size_per_gpu (train_batch_size * n_samples_per_prompt // "
       "policy_dp_size) 213 should be divisible by policy_mini_batch_size_per_gpu (policy_mini_batch_size * "
       "n_samples_per_prompt // policy_dp_size) 53"),
    _p(r"normalized critic_train_batch_size_per_gpu .*? should be divisible by critic_mini_batch_size_per_gpu",
       ("skyrl.batch.critic_train_per_gpu_divisible_by_mini",), BATCH,
       "AssertionError: normalized critic_train_batch_size_per_gpu (train_batch_size * n_samples_per_prompt // "
       "critic_dp_size) 213 should be divisible by critic_mini_batch_size_per_gpu (critic_mini_batch_size * "
       "n_samples_per_prompt // critic_dp_size) 53"),
    _p(r"should be larger than or equal to the least common multiple of the data parallel sizes",
       ("skyrl.batch.samples_cover_lcm_dp",), BATCH,
       "AssertionError: train_batch_size * n_samples_per_prompt (4) should be larger than or equal to the least common "
       "multiple of the data parallel sizes of the enabled models: policy_dp_size=8, ref_dp_size=8, lcm_dp_size=8"),
    _p(r"`offload_after_step=False` is not supported for DeepSpeed", ("skyrl.deepspeed.offload_after_step",), CFG,
       "ValueError: `offload_after_step=False` is not supported for DeepSpeed, please set `offload_after_step` to "
       "`true` for both policy and critic"),
    _p(r"LoRA enabled requires vLLM backend", ("skyrl.lora.needs_vllm",), CFG,
       "AssertionError: LoRA enabled requires vLLM backend"),
    _p(r"LoRA enabled requires fsdp/fsdp2/megatron training backend", ("skyrl.lora.not_deepspeed",), CFG,
       "AssertionError: LoRA enabled requires fsdp/fsdp2/megatron training backend"),
    _p(r"num_policy_gpus \((?P<policy>\d+)\) and num_rollout_gpus \((?P<rollout>\d+)\) must be the same when "
       r"colocating all models", ("skyrl.placement.colocate_all_same_gpus",), CFG,
       "AssertionError: num_policy_gpus (8) and num_rollout_gpus (4) must be the same when colocating all models",
       hint=lambda x: (f"with colocate_all, num_inference_engines x inference_engine_tensor_parallel_size (x pp x dp) "
                       f"must be the {x['policy']} policy GPUs, not {x['rollout']}"), numbers=("policy", "rollout")),
    _p(r"policy_num_nodes \(\d+\) and ref_num_nodes \(\d+\) must be the same when colocate policy and ref",
       ("skyrl.placement.policy_ref_same_nodes",), CFG,
       "AssertionError: policy_num_nodes (2) and ref_num_nodes (1) must be the same when colocate policy and ref "
       "model."),
    _p(r"policy_num_gpus_per_node \(\d+\) and ref_num_gpus_per_node \(\d+\) must be the same when colocate",
       ("skyrl.placement.policy_ref_same_gpus_per_node",), CFG,
       "AssertionError: policy_num_gpus_per_node (4) and ref_num_gpus_per_node (2) must be the same when colocate "
       "policy and ref model."),
    _p(r"num_policy_gpus and num_ref_gpus must be the same when colocating policy and ref model",
       ("skyrl.placement.colocate_all_ref_same_gpus",), BUILD,
       "AssertionError: num_policy_gpus and num_ref_gpus must be the same when colocating policy and ref model"),
    _p(r"num_policy_gpus and num_critic_gpus must be the same when colocating policy and critic model",
       ("skyrl.placement.colocate_all_critic_same_gpus",), BUILD,
       "AssertionError: num_policy_gpus and num_critic_gpus must be the same when colocating policy and critic model"),
    _p(r"Failed to create placement group with \d+ bundles \(requiring (?P<need>\d+) GPUs",
       ("skyrl.ray.gpu_budget",), f"{UTILS}:get_ray_pg_ready_with_timeout",
       "RuntimeError: Failed to create placement group with 8 bundles (requiring 8 GPUs, 8 CPUs total) in 180 "
       "seconds. This might indicate insufficient GPU resources.",
       hint=lambda x: f"a placement group asked for {x['need']} GPUs that the Ray cluster does not have free",
       numbers=("need",)),
    _p(r"num_attention_heads \d+ must be divisible by ulysses_sp_size \d+", ("skyrl.ulysses.heads_divisible",),
       ULYSSES, "AssertionError: num_attention_heads 12 must be divisible by ulysses_sp_size 8"),
    _p(r"num_key_value_heads \d+ must be divisible by ulysses_sp_size \d+ ?or vise versa",
       ("skyrl.ulysses.kv_heads_divisible",), ULYSSES,
       "AssertionError: num_key_value_heads 6 must be divisible by ulysses_sp_size 4or vise versa. Upon "
       "ulysses_sp_size % num_key_value_heads == 0,kv heads are repeated to ensure correctness."),
]

# SkyRL's Ray workers (skyrl_train/workers/fsdp/fsdp_worker.py, deepspeed/, megatron/) and engines
# (inference_engines/vllm/vllm_engine.py): a traceback names the worker class and method
OOM_FRAMES = (
    (r"RefWorkerBase", Phase.REF),
    (r"CriticWorkerBase", Phase.CRITIC_UPDATE),
    (r"PolicyWorkerBase\.(?:ppo_train|training_step|forward_backward|optim_step)|torch/optim/|_multi_tensor_adam",
     Phase.ACTOR_UPDATE),
    (r"PolicyWorkerBase\.forward|fwd_logprobs_values_reward", Phase.OLD_LOG_PROB),
    (r"VLLMInferenceEngine|vllm_engine|sglang_engine|inference_engine_client|wake_up", Phase.ROLLOUT),
)
T, G = "trainer", "generator"
OOM_ADVICE = {
    Phase.ROLLOUT: (
        f"{G}.gpu_memory_utilization lower: the engine reserves that share of the whole GPU",
        f"{T}.placement.colocate_all=true (the models leave the GPU while the engines generate) or "
        f"{T}.policy.fsdp_config.cpu_offload=true",
        f"{G}.inference_engine_tensor_parallel_size higher (and num_inference_engines lower): weights and KV cache "
        "split over more GPUs",
        f"{G}.max_num_seqs / max_num_batched_tokens lower: a smaller batch in the engine"),
    Phase.OLD_LOG_PROB: (
        f"{T}.micro_forward_batch_size_per_gpu lower",
        f"{T}.policy.sequence_parallel_size higher: a sequence's tokens split over GPUs",
        f"{T}.policy.fsdp_config.cpu_offload=true (FSDP2)"),
    Phase.REF: (
        f"{T}.micro_forward_batch_size_per_gpu lower (the reference's forward uses it too)",
        f"{T}.ref.fsdp_config.cpu_offload=true (FSDP2)"),
    Phase.ACTOR_UPDATE: (
        f"{T}.micro_train_batch_size_per_gpu lower",
        f"{T}.gradient_checkpointing=true",
        f"{T}.policy.sequence_parallel_size higher",
        f"{T}.policy.fsdp_config.cpu_offload=true (FSDP2): parameters, gradients and optimizer states on the host"),
    Phase.CRITIC_UPDATE: (
        f"{T}.micro_train_batch_size_per_gpu lower (the critic's too)",
        f"{T}.gradient_checkpointing=true",
        f"{T}.critic.fsdp_config.cpu_offload=true (FSDP2)"),
    Phase.HOST: verl_errors.OOM_ADVICE[Phase.HOST],
}

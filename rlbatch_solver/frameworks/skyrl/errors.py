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
       "generation",
       hint=lambda x: ("single-turn generation (generator.max_turns=1) needs generator.max_input_length equal to "
                       "trainer.max_prompt_length; set generator.max_input_length to trainer.max_prompt_length.")),
    _p(r"generator\.max_input_length should be set greater than or equal to trainer\.max_prompt_length",
       ("skyrl.generator.input_length_multi_turn",), GEN,
       "AssertionError: generator.max_input_length should be set greater than or equal to trainer.max_prompt_length "
       "for multi-turn generation",
       hint=lambda x: ("multi-turn generation needs generator.max_input_length of at least "
                       "trainer.max_prompt_length (later turns carry the history); raise "
                       "generator.max_input_length.")),
    _p(r"if we are using the offline vLLM engine, we need to put generator in batched mode",
       ("skyrl.generator.offline_vllm_needs_batched",), GEN,
       "AssertionError: if we are using the offline vLLM engine, we need to put generator in batched mode for faster "
       "generation",
       hint=lambda x: ("the offline vLLM engine (generator.async_engine=false) only generates in batches; set "
                       "generator.batched=true, or generator.async_engine=true.")),
    _p(r"do not support tensor parallel inference engine with SGLang", ("skyrl.generator.sglang_tp1",), GEN,
       "AssertionError: As of now, We do not support tensor parallel inference engine with SGLang when running "
       "engines locally. Please set `inference_engine_tensor_parallel_size` to 1.",
       hint=lambda x: ("local SGLang engines have no tensor parallel; set "
                       "generator.inference_engine_tensor_parallel_size=1 (and raise "
                       "generator.num_inference_engines), or use generator.backend=vllm.")),
    _p(r"only vllm is supported for with megatron", ("skyrl.megatron.needs_vllm",), MEGATRON,
       "AssertionError: only vllm is supported for with megatron",
       hint=lambda x: "trainer.strategy=megatron generates with vLLM only; set generator.backend=vllm."),
    _p(r"only GRPO training is currently supported for megatron", ("skyrl.megatron.no_critic",), MEGATRON,
       "AssertionError: only GRPO training is currently supported for megatron",
       hint=lambda x: ("trainer.strategy=megatron trains no critic (GRPO only); remove trainer.critic.model.path "
                       "and use a critic-free trainer.algorithm.advantage_estimator such as grpo, or use "
                       "trainer.strategy=fsdp2.")),
    _p(r"context parallel is only supported with sample packing", ("skyrl.megatron.cp_needs_packing",), MEGATRON,
       "AssertionError: context parallel is only supported with sample packing",
       hint=lambda x: ("Megatron context parallel (trainer.policy/ref.megatron_config.context_parallel_size > 1) "
                       "needs trainer.use_sample_packing=true; turn it on, or set context_parallel_size=1.")),
    _p(r"ulysses style sequence parallel is not supported for megatron", ("skyrl.megatron.no_ulysses",), MEGATRON,
       "AssertionError: found policy.sequence_parallel_size=2, ulysses style sequence parallel is not supported for "
       "megatron",
       hint=lambda x: ("trainer.strategy=megatron has no Ulysses sequence parallel; set "
                       "trainer.policy.sequence_parallel_size=1 (and trainer.ref.sequence_parallel_size) and use "
                       "megatron_config.context_parallel_size for long sequences.")),
    _p(r"Inference (?:data|expert) parallelism is not yet supported for SGLang backend",
       ("skyrl.generator.sglang_no_engine_dp_ep",), GEN,
       "AssertionError: Inference data parallelism is not yet supported for SGLang backend.",
       hint=lambda x: ("SGLang engines have no data or expert parallel here; set "
                       "generator.inference_engine_data_parallel_size=1 and "
                       "inference_engine_expert_parallel_size=1 (more engines: generator.num_inference_engines), "
                       "or use generator.backend=vllm.")),
    _p(r"data parallel size \* tensor parallel size must equal expert parallel size(?:\. Got dp_size=(?P<dp>\d+), "
       r"tp_size=(?P<tp>\d+), ep_size=(?P<ep>\d+))?",
       ("skyrl.generator.ep_is_dp_times_tp",), GEN,
       "AssertionError: If inference expert parallel is enabled, data parallel size * tensor parallel size must equal "
       "expert parallel size. Got dp_size=1, tp_size=2, ep_size=4",
       hint=lambda x: (f"generator.inference_engine_expert_parallel_size {x['ep']} must equal "
                       "inference_engine_data_parallel_size x inference_engine_tensor_parallel_size = "
                       f"{x['dp']}x{x['tp']} = {x['dp'] * x['tp']}; set the expert size to {x['dp'] * x['tp']}, or "
                       f"pick dp and tp whose product is {x['ep']}."),
       numbers=("dp", "tp", "ep")),
    _p(r"`trainer\.critic\.model\.path` should be provided for PPO training", ("skyrl.algorithm.gae_needs_critic",),
       CFG, "AssertionError: `trainer.critic.model.path` should be provided for PPO training, got `None`",
       hint=lambda x: ("trainer.algorithm.advantage_estimator=gae trains a critic: set trainer.critic.model.path, "
                       "or use a critic-free estimator such as grpo.")),
    _p(r"use_kl_in_reward and use_kl_loss should be mutually exclusive", ("skyrl.algorithm.kl_one_place",), CFG,
       "AssertionError: use_kl_in_reward and use_kl_loss should be mutually exclusive",
       hint=lambda x: ("KL in the reward (trainer.algorithm.use_kl_in_reward) and KL in the loss "
                       "(trainer.algorithm.use_kl_loss) are both on; set one of them to false.")),
    _p(r"fwd pass cpu offloading is not supported for FSDP1", ("skyrl.fsdp1.no_cpu_offload",), CFG,
       "AssertionError: fwd pass cpu offloading is not supported for FSDP1 policy worker, use FSDP2 instead",
       hint=lambda x: ("trainer.strategy=fsdp (FSDP1) cannot CPU-offload the forward pass; set "
                       "trainer.strategy=fsdp2, or trainer.policy.fsdp_config.cpu_offload=false "
                       "(trainer.critic.fsdp_config.cpu_offload too).")),
    _p(r"only deepspeed stage 3 is currently supported", ("skyrl.deepspeed.stage3",), CFG,
       "AssertionError: only deepspeed stage 3 is currently supported!",
       hint=lambda x: ("SkyRL's DeepSpeed backend runs ZeRO stage 3 only; set "
                       "trainer.policy.deepspeed_config.zero_optimization.stage=3, or use trainer.strategy=fsdp2.")),
    _p(r"policy_world_size (?P<world>\d+) should be divisible by \(pp \* cp \* tp\) (?P<mp>\d+)",
       ("skyrl.megatron.policy_world_divisible",), BATCH,
       "AssertionError: policy_world_size 6 should be divisible by (pp * cp * tp) 4. This ensures that the data "
       "parallel size is an integer.",
       hint=lambda x: (f"trainer.policy.megatron_config tp x pp x cp = {x['mp']} does not divide the {x['world']} "
                       f"policy GPUs; products that do: {some_divisors(int(x['world']))}"), numbers=("world", "mp")),
    _p(r"ref_world_size (?P<world>\d+) should be divisible by \(pp \* cp \* tp\) (?P<mp>\d+)",
       ("skyrl.megatron.ref_world_divisible",), BATCH,
       "AssertionError: ref_world_size 6 should be divisible by (pp * cp * tp) 4. This ensures that the data parallel "
       "size is an integer.",
       hint=lambda x: (f"the {x['world']} reference GPUs (trainer.placement.ref_num_nodes x ref_num_gpus_per_node) "
                       f"do not split into trainer.ref.megatron_config tp x pp x cp = {x['mp']}; use sizes whose "
                       f"product divides {x['world']}: {some_divisors(x['world'])}."),
       numbers=("world", "mp")),
    _p(r"train_batch_size (?P<tbs>\d+) should be divisible by policy_mini_batch_size (?P<mini>\d+)",
       ("skyrl.batch.train_divisible_by_mini",), BATCH,
       "AssertionError: train_batch_size 1000 should be divisible by policy_mini_batch_size 256",
       hint=lambda x: (f"policy_mini_batch_size {x['mini']} does not divide train_batch_size {x['tbs']}; sizes that "
                       f"do: {some_divisors(int(x['tbs']))}"),
       numbers=("tbs", "mini")),
    _p(r"train_batch_size (?P<tbs>\d+) should be divisible by critic_mini_batch_size (?P<mini>\d+)",
       ("skyrl.batch.train_divisible_by_critic_mini",), BATCH,
       "AssertionError: train_batch_size 1000 should be divisible by critic_mini_batch_size 256",
       hint=lambda x: (f"trainer.critic_mini_batch_size {x['mini']} does not divide trainer.train_batch_size "
                       f"{x['tbs']}; sizes that do: {some_divisors(x['tbs'])}."),
       numbers=("tbs", "mini")),
    _p(r"Invalid policy_mini_batch_size_per_gpu(?:: -?\d+\. mini_batch_size=(?P<mini>\d+), "
       r"n_samples_per_prompt=(?P<n>\d+), dp_size=(?P<dp>\d+))?", ("skyrl.batch.mini_covers_dp",), BATCH,
       "AssertionError: Invalid policy_mini_batch_size_per_gpu: 0. mini_batch_size=1, n_samples_per_prompt=2, "
       "dp_size=4",
       hint=lambda x: (f"trainer.policy_mini_batch_size {x['mini']} x generator.n_samples_per_prompt {x['n']} = "
                       f"{x['mini'] * x['n']} samples is fewer than the {x['dp']} policy data-parallel ranks; "
                       f"raise trainer.policy_mini_batch_size to at least {-(-x['dp'] // x['n'])}."),
       numbers=("mini", "n", "dp")),
    _p(r"Invalid critic_mini_batch_size_per_gpu(?:: -?\d+\. mini_batch_size=(?P<mini>\d+), "
       r"n_samples_per_prompt=(?P<n>\d+), dp_size=(?P<dp>\d+))?", ("skyrl.batch.critic_mini_covers_dp",), BATCH,
       "AssertionError: Invalid critic_mini_batch_size_per_gpu: 0. mini_batch_size=1, n_samples_per_prompt=2, "
       "dp_size=4",
       hint=lambda x: (f"trainer.critic_mini_batch_size {x['mini']} x generator.n_samples_per_prompt {x['n']} = "
                       f"{x['mini'] * x['n']} samples is fewer than the {x['dp']} critic data-parallel ranks; "
                       f"raise trainer.critic_mini_batch_size to at least {-(-x['dp'] // x['n'])}."),
       numbers=("mini", "n", "dp")),
    _p(r"normalized policy_mini_batch_size_per_gpu (?P<per_gpu>\d+) should be divisible by "
       r"micro_train_batch_size_per_gpu (?P<micro>\d+)", ("skyrl.batch.mini_divisible_by_micro",), BATCH,
       "AssertionError: normalized policy_mini_batch_size_per_gpu 320 should be divisible by "
       "micro_train_batch_size_per_gpu 64",
       hint=lambda x: (f"micro_train_batch_size_per_gpu {x['micro']} does not divide the {x['per_gpu']} update samples "
                       f"per GPU; sizes that do: {some_divisors(int(x['per_gpu']))}"),
       numbers=("per_gpu", "micro")),
    _p(r"normalized critic_mini_batch_size_per_gpu (?P<per_gpu>\d+) should be divisible by "
       r"micro_train_batch_size_per_gpu (?P<micro>\d+)",
       ("skyrl.batch.critic_mini_divisible_by_micro",), BATCH,
       "AssertionError: normalized critic_mini_batch_size_per_gpu 320 should be divisible by "
       "micro_train_batch_size_per_gpu 64",
       hint=lambda x: (f"trainer.micro_train_batch_size_per_gpu {x['micro']} does not divide the critic's "
                       f"{x['per_gpu']} update samples per GPU; sizes that do: {some_divisors(x['per_gpu'])}."),
       numbers=("per_gpu", "micro")),
    _p(r"normalized policy_train_batch_size_per_gpu (?:\([^)]*\) )?(?P<local>\d+) should be divisible by "
       r"policy_mini_batch_size_per_gpu (?:\([^)]*\) )?(?P<per_gpu>\d+)",
       ("skyrl.batch.train_per_gpu_divisible_by_mini",), BATCH,
       "AssertionError: normalized policy_train_batch_size_per_gpu (train_batch_size * n_samples_per_prompt // "
       "policy_dp_size) 213 should be divisible by policy_mini_batch_size_per_gpu (policy_mini_batch_size * "
       "n_samples_per_prompt // policy_dp_size) 53",
       hint=lambda x: (f"each policy GPU's {x['local']} samples of a step are not a whole number of its "
                       f"{x['per_gpu']}-sample mini batches (trainer.policy_mini_batch_size x n_samples_per_prompt "
                       f"/ dp); pick a policy_mini_batch_size whose per-GPU share divides {x['local']}: "
                       f"{some_divisors(x['local'])}."),
       numbers=("local", "per_gpu")),
    _p(r"normalized critic_train_batch_size_per_gpu (?:\([^)]*\) )?(?P<local>\d+) should be divisible by "
       r"critic_mini_batch_size_per_gpu (?:\([^)]*\) )?(?P<per_gpu>\d+)",
       ("skyrl.batch.critic_train_per_gpu_divisible_by_mini",), BATCH,
       "AssertionError: normalized critic_train_batch_size_per_gpu (train_batch_size * n_samples_per_prompt // "
       "critic_dp_size) 213 should be divisible by critic_mini_batch_size_per_gpu (critic_mini_batch_size * "
       "n_samples_per_prompt // critic_dp_size) 53",
       hint=lambda x: (f"each critic GPU's {x['local']} samples of a step are not a whole number of its "
                       f"{x['per_gpu']}-sample mini batches (trainer.critic_mini_batch_size x n_samples_per_prompt "
                       f"/ dp); pick a critic_mini_batch_size whose per-GPU share divides {x['local']}: "
                       f"{some_divisors(x['local'])}."),
       numbers=("local", "per_gpu")),
    _p(r"(?:\((?P<samples>\d+)\) )?should be larger than or equal to the least common multiple of the data "
       r"parallel sizes(?:[^\n]*?lcm_dp_size=(?P<lcm>\d+))?",
       ("skyrl.batch.samples_cover_lcm_dp",), BATCH,
       "AssertionError: train_batch_size * n_samples_per_prompt (4) should be larger than or equal to the least common "
       "multiple of the data parallel sizes of the enabled models: policy_dp_size=8, ref_dp_size=8, lcm_dp_size=8",
       hint=lambda x: (f"a step has {x['samples']} samples (trainer.train_batch_size x "
                       f"generator.n_samples_per_prompt) for {x['lcm']} data-parallel ranks (the lcm of the "
                       "policy's and reference's dp); raise trainer.train_batch_size until train_batch_size x "
                       f"n_samples_per_prompt is at least {x['lcm']}."),
       numbers=("samples", "lcm")),
    _p(r"`offload_after_step=False` is not supported for DeepSpeed", ("skyrl.deepspeed.offload_after_step",), CFG,
       "ValueError: `offload_after_step=False` is not supported for DeepSpeed, please set `offload_after_step` to "
       "`true` for both policy and critic",
       hint=lambda x: ("SkyRL's DeepSpeed backend needs trainer.policy.optimizer_config.offload_after_step=true "
                       "and trainer.critic.optimizer_config.offload_after_step=true; set both.")),
    _p(r"LoRA enabled requires vLLM backend", ("skyrl.lora.needs_vllm",), CFG,
       "AssertionError: LoRA enabled requires vLLM backend",
       hint=lambda x: ("LoRA (trainer.policy.model.lora.rank > 0) syncs its adapter to vLLM only; set "
                       "generator.backend=vllm, or lora.rank=0.")),
    _p(r"LoRA enabled requires fsdp/fsdp2/megatron training backend", ("skyrl.lora.not_deepspeed",), CFG,
       "AssertionError: LoRA enabled requires fsdp/fsdp2/megatron training backend",
       hint=lambda x: ("LoRA does not run on trainer.strategy=deepspeed; use trainer.strategy=fsdp2 (or fsdp / "
                       "megatron), or set trainer.policy.model.lora.rank=0.")),
    _p(r"num_policy_gpus \((?P<policy>\d+)\) and num_rollout_gpus \((?P<rollout>\d+)\) must be the same when "
       r"colocating all models", ("skyrl.placement.colocate_all_same_gpus",), CFG,
       "AssertionError: num_policy_gpus (8) and num_rollout_gpus (4) must be the same when colocating all models",
       hint=lambda x: (f"with colocate_all, num_inference_engines x inference_engine_tensor_parallel_size (x pp x dp) "
                       f"must be the {x['policy']} policy GPUs, not {x['rollout']}"), numbers=("policy", "rollout")),
    _p(r"policy_num_nodes \((?P<policy>\d+)\) and ref_num_nodes \((?P<ref>\d+)\) must be the same when "
       r"colocate policy and ref",
       ("skyrl.placement.policy_ref_same_nodes",), CFG,
       "AssertionError: policy_num_nodes (2) and ref_num_nodes (1) must be the same when colocate policy and ref "
       "model.",
       hint=lambda x: ("trainer.placement.colocate_policy_ref=true puts policy and reference on the same GPUs: "
                       f"ref_num_nodes ({x['ref']}) must equal policy_num_nodes ({x['policy']}); make them equal, "
                       "or set colocate_policy_ref=false."),
       numbers=("policy", "ref")),
    _p(r"policy_num_gpus_per_node \((?P<policy>\d+)\) and ref_num_gpus_per_node \((?P<ref>\d+)\) must be the "
       r"same when colocate",
       ("skyrl.placement.policy_ref_same_gpus_per_node",), CFG,
       "AssertionError: policy_num_gpus_per_node (4) and ref_num_gpus_per_node (2) must be the same when colocate "
       "policy and ref model.",
       hint=lambda x: ("trainer.placement.colocate_policy_ref=true puts policy and reference on the same GPUs: "
                       f"ref_num_gpus_per_node ({x['ref']}) must equal policy_num_gpus_per_node ({x['policy']}); "
                       "make them equal, or set colocate_policy_ref=false."),
       numbers=("policy", "ref")),
    _p(r"num_policy_gpus and num_ref_gpus must be the same when colocating policy and ref model",
       ("skyrl.placement.colocate_all_ref_same_gpus",), BUILD,
       "AssertionError: num_policy_gpus and num_ref_gpus must be the same when colocating policy and ref model",
       hint=lambda x: ("trainer.placement.colocate_all=true with a reference (use_kl_loss or use_kl_in_reward): "
                       "it needs as many GPUs as the policy (ref_num_nodes x ref_num_gpus_per_node = "
                       "policy_num_nodes x policy_num_gpus_per_node); make them equal.")),
    _p(r"num_policy_gpus and num_critic_gpus must be the same when colocating policy and critic model",
       ("skyrl.placement.colocate_all_critic_same_gpus",), BUILD,
       "AssertionError: num_policy_gpus and num_critic_gpus must be the same when colocating policy and critic model",
       hint=lambda x: ("trainer.placement.colocate_all=true: the critic needs as many GPUs as the policy "
                       "(critic_num_nodes x critic_num_gpus_per_node = policy_num_nodes x "
                       "policy_num_gpus_per_node); make them equal.")),
    _p(r"Failed to create placement group with \d+ bundles \(requiring (?P<need>\d+) GPUs",
       ("skyrl.ray.gpu_budget",), f"{UTILS}:get_ray_pg_ready_with_timeout",
       "RuntimeError: Failed to create placement group with 8 bundles (requiring 8 GPUs, 8 CPUs total) in 180 "
       "seconds. This might indicate insufficient GPU resources.",
       hint=lambda x: (f"a placement group asked for {x['need']} GPUs that the Ray cluster does not have free: "
                       "set trainer.placement.colocate_all=true, or fewer generator.num_inference_engines / "
                       "trainer.placement.*_num_gpus_per_node"),
       numbers=("need",)),
    _p(r"num_attention_heads (?P<heads>\d+) must be divisible by ulysses_sp_size (?P<sp>\d+)",
       ("skyrl.ulysses.heads_divisible",),
       ULYSSES, "AssertionError: num_attention_heads 12 must be divisible by ulysses_sp_size 8",
       hint=lambda x: (f"trainer.policy.sequence_parallel_size {x['sp']} does not divide the model's {x['heads']} "
                       f"attention heads; use a divisor of {x['heads']}: {some_divisors(x['heads'])}."),
       numbers=("heads", "sp")),
    _p(r"num_key_value_heads (?P<kv_heads>\d+) must be divisible by ulysses_sp_size (?P<sp>\d+) ?or vise versa",
       ("skyrl.ulysses.kv_heads_divisible",), ULYSSES,
       "AssertionError: num_key_value_heads 6 must be divisible by ulysses_sp_size 4or vise versa. Upon "
       "ulysses_sp_size % num_key_value_heads == 0,kv heads are repeated to ensure correctness.",
       hint=lambda x: (f"the model's {x['kv_heads']} key/value heads and trainer.policy.sequence_parallel_size "
                       f"{x['sp']} must divide one another; use a divisor of {x['kv_heads']} "
                       f"({some_divisors(x['kv_heads'])}) or a multiple of it that still divides the attention "
                       "heads."),
       numbers=("kv_heads", "sp")),
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

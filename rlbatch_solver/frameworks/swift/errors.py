"""ms-swift 4.6.0's own error messages (and megatron-core's, where it delegates), mapped to our rules.

``tests/test_explain.py`` checks that every rule id exists in the ms-swift rule sets and that each
pattern matches the message the framework really prints (``example``).
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern


n = r"\((?P<{}>\d+)\)".format
hf_gen = "swift/rlhf_trainers/args_mixin.py:RolloutTrainerArgumentsMixin._init_generation_batch_params"
mg_gen = "swift/megatron/arguments/megatron_args.py:RLHFMegatronArgumentsMixin"
colocate = ErrorPattern(
    "swift", rf"vllm_tensor_parallel_size {n('tp')} must divide world size {n('world')} evenly",
    ("swift.rollout.colocate_tp_divides_world",), "swift/rlhf_trainers/rollout_mixin.py:RolloutTrainerMixin._prepare_vllm",
    "ValueError: vllm_tensor_parallel_size (3) must divide world size (8) evenly.")
PATTERNS: list[ErrorPattern] = [
    ErrorPattern("swift", rf"generation_batch_size {n('gen')} must be divisible by the global batch size {n('gbs')}",
                 ("swift.args.gen_divisible_by_base",), hf_gen,
                 "ValueError: generation_batch_size (500) must be divisible by the global batch size (16)."),
    ErrorPattern("swift", rf"generation_batch_size {n('gen')} must equal per_device_train_batch_size \* world_size",
                 ("swift.args.gen_equals_base_times_spg",), hf_gen,
                 "ValueError: generation_batch_size (96) must equal per_device_train_batch_size * world_size * "
                 "steps_per_generation = 64."),
    ErrorPattern("swift", rf"generation_batch_size {n('gen')} must be evenly divisible by num_generations {n('g')}",
                 ("swift.args.gen_divisible_by_num_generations",), hf_gen,
                 "ValueError: generation_batch_size (16) must be evenly divisible by num_generations (12). "
                 "Valid values: [2, 4, 8, 16]."),
    ErrorPattern("swift", r"global eval batch size .{0,40}must be\s+evenly divisible by num_generations_eval",
                 ("swift.args.eval_batch_divisible_by_num_generations_eval",), hf_gen,
                 "ValueError: The global eval batch size (4 x 1) must be evenly divisible by num_generations_eval "
                 "(8). Valid values: [1, 2, 4]."),
    ErrorPattern("swift", r"num_generations must be greater than 1 for GRPO",
                 ("swift.args.num_generations_at_least_two",), "swift/arguments/rlhf_args.py:RLHFArguments._check_teacher",
                 "ValueError: num_generations must be greater than 1 for GRPO"),
    ErrorPattern("swift", r"vllm_mode is required when use_vllm is true", ("swift.args.vllm_mode_required",),
                 "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                 "ValueError: vllm_mode is required when use_vllm is true"),
    ErrorPattern("swift", r"vllm_mode is not supported when use_vllm is false",
                 ("swift.args.vllm_mode_needs_use_vllm",), "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                 "ValueError: vllm_mode is not supported when use_vllm is false"),
    ErrorPattern("swift", r"async generate require vllm_mode == server", ("swift.args.async_generate_needs_server",),
                 "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                 "AssertionError: async generate require vllm_mode == server, "),
    colocate,
    ErrorPattern("swift-megatron", colocate.pattern, colocate.rules,
                 "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin._init_rollout_engine", colocate.example),
    ErrorPattern("swift-megatron",
                 rf"generation_batch_size {n('gen')} must be divisible by global_batch_size {n('gbs')}",
                 ("swift.args.gen_divisible_by_base",), f"{mg_gen}.resolve_generation_batch_size",
                 "ValueError: generation_batch_size (100) must be divisible by global_batch_size (16)"),
    ErrorPattern("swift-megatron", rf"generation_batch_size {n('gen')} must equal global_batch_size {n('gbs')}",
                 ("swift.args.gen_equals_base_times_spg",), f"{mg_gen}.resolve_generation_batch_size",
                 "ValueError: generation_batch_size (96) must equal global_batch_size (16) * steps_per_generation "
                 "(4) = 64."),
    ErrorPattern("swift-megatron", rf"generation_batch_size {n('gen')} must be divisible by num_generations {n('g')}",
                 ("swift.args.gen_divisible_by_num_generations",), f"{mg_gen}.resolve_generation_batch_size",
                 "ValueError: generation_batch_size (16) must be divisible by num_generations (3)."),
    ErrorPattern("swift-megatron", rf"num_rollout_prompt {n('prompts')} = generation_batch_size .{{0,80}}must be "
                 rf"divisible by dp_size {n('dp')}",
                 ("swift_megatron.args.rollout_prompts_divisible_by_dp",), f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: num_rollout_prompt (4) = generation_batch_size (16) // num_generations (4) must be "
                 "divisible by dp_size (8). Please adjust generation_batch_size/steps_per_generation/num_generations."),
    ErrorPattern("swift-megatron", r"per_device_num_rollout_prompt \((?P<prompts>\d+)\) must be (>= 1|greater than)",
                 ("swift_megatron.args.rollout_prompts_per_dp_at_least_one",),
                 f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: per_device_num_rollout_prompt (0) must be >= 1, please adjust "
                 "generation_batch_size/steps_per_generation/num_generations."),
    ErrorPattern("swift-megatron", rf"Per-device rollout prompt count {n('prompts')} .{{0,160}}must be divisible by "
                 rf"micro_batch_size {n('micro')}",
                 ("swift_megatron.args.rollout_prompts_per_dp_divisible_by_micro",),
                 f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: Per-device rollout prompt count (3) = (generation_batch_size (96) // num_generations "
                 "(4)) // dp_size (8) must be divisible by micro_batch_size (2)."),
    ErrorPattern("swift-megatron", r"per_device_generation_batch_size \((?P<per_device>\d+)\) must be >= 1",
                 ("swift_megatron.args.generation_per_device_at_least_one",), f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: per_device_generation_batch_size (0) must be >= 1."),
    ErrorPattern("swift-megatron", rf"global batch size {n('gbs')} is not divisible by micro batch size {n('micro')} "
                 rf"times data parallel size {n('dp')}",
                 ("swift_megatron.args.global_batch_divisible_by_micro_dp",),
                 "swift/megatron/arguments/megatron_args.py:MegatronArguments._init_distributed",
                 "ValueError: global batch size (12) is not divisible by micro batch size (2) times data parallel "
                 "size (4)."),
    ErrorPattern("swift-megatron", rf"world_size {n('world')} is not divisible by (?P<mp>\d+)\b",
                 ("swift_megatron.mcore.world_divisible_by_model_parallel",),
                 "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)",
                 "RuntimeError: world_size (8) is not divisible by 3"),
    ErrorPattern("swift-megatron", rf"world_size {n('world')} is not divisible by "
                 rf"expert_tensor_model_pipeline_parallel size {n('expert_mp')}",
                 ("swift_megatron.mcore.world_divisible_by_expert_parallel",),
                 "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)",
                 "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (6)"),
    ErrorPattern("swift-megatron", r"Invalid vllm_mode: None", ("swift_megatron.rollout.vllm_mode_required",),
                 "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin._init_rollout_engine",
                 "ValueError: Invalid vllm_mode: None"),
    ErrorPattern("swift-megatron", r"use_vllm must be True for Megatron GRPO",
                 ("swift_megatron.args.use_vllm_required",), f"{mg_gen}._init_grpo",
                 "AssertionError: use_vllm must be True for Megatron GRPO"),
    ErrorPattern("swift-megatron", r"GRPO currently does not support VPP", ("swift_megatron.step.vpp_needs_beta_zero",),
                 "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer._maybe_compute_logps",
                 "AssertionError: GRPO currently does not support VPP."),
    ErrorPattern("swift-megatron", r"rollout_group_size \* per_device_batch_size == len\(global_rollout_batch\)",
                 ("swift_megatron.runtime.generation_divisible_by_world", "swift_megatron.runtime.eval_rollout_slice"),
                 "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer.get_local_rollout_batch (an assert "
                 "without a message: the traceback shows the line)",
                 "    assert rollout_group_size * per_device_batch_size == len(global_rollout_batch)\n"
                 "AssertionError"),
    ErrorPattern("swift-megatron", r"num_iters_per_step=0 <= 0", ("swift_megatron.runtime.eval_rollout_prompts",),
                 "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer.get_num_iters_per_step",
                 "AssertionError: num_iters_per_step=0 <= 0. This means no prompts will be generated"),
    ErrorPattern("swift-megatron", rf"num_attention_heads {n('heads')} must be a multiple of "
                 rf"tensor_model_parallel_size {n('tp')}",
                 ("swift_megatron.mcore.heads_divisible_by_tp",),
                 "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)",
                 "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8)."),
    ErrorPattern("swift-megatron", rf"num_query_groups {n('groups')} must be a multiple or divisor of "
                 rf"tensor_model_parallel_size {n('tp')}",
                 ("swift_megatron.mcore.query_groups_vs_tp",),
                 "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)",
                 "ValueError: num_query_groups (4) must be a multiple or divisor of tensor_model_parallel_size (7)."),
    *[ErrorPattern(fw, r"local_device_count \((?P<devices>\d+)\) must be greater than or equal to the product of "
                   r"vllm_data_parallel_size \((?P<dp>\d+)\) and vllm_tensor_parallel_size \((?P<tp>\d+)\)",
                   ("swift.gpus.budget",), "swift/arguments/deploy_args.py:RolloutArguments._check_device_count",
                   "ValueError: Error: local_device_count (2) must be greater than or equal to the product of "
                   "vllm_data_parallel_size (2) and vllm_tensor_parallel_size (2). Current required_device_count = 4.")
      for fw in ("swift", "swift-megatron")],
    ErrorPattern("swift", r"assert not self\.use_vllm or self\.vllm_server_host is not None",
                 ("swift.rollout.server_needs_host",), "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout "
                 "(an assert without a message)",
                 "    assert not self.use_vllm or self.vllm_server_host is not None or self.vllm_server_base_url "
                 "is not None\nAssertionError"),
    ErrorPattern("swift-megatron", r"num_iterations > 1 is not supported for Megatron GRPO",
                 ("swift_megatron.args.num_iterations_unsupported",), f"{mg_gen}._init_grpo",
                 "ValueError: num_iterations > 1 is not supported for Megatron GRPO right now"),
    ErrorPattern("swift-megatron", r"async_generate is not supported for Megatron GRPO",
                 ("swift_megatron.args.async_generate_unsupported",), f"{mg_gen}._init_grpo",
                 "ValueError: async_generate is not supported for Megatron GRPO right now"),
    ErrorPattern("swift-megatron", r"sync_ref_model is not supported for Megatron GRPO",
                 ("swift_megatron.args.sync_ref_model_unsupported",), f"{mg_gen}._init_grpo",
                 "ValueError: sync_ref_model is not supported for Megatron GRPO right now"),
    ErrorPattern("swift-megatron", rf"REAL loss requires that the training micro_batch_size {n('micro')} is a "
                 rf"multiple of num_generations {n('g')}",
                 ("swift_megatron.args.real_loss_micro_divisible_by_num_generations",), f"{mg_gen}._init_grpo",
                 "AssertionError: \"REAL loss requires that the training micro_batch_size (4) is a multiple of "
                 "num_generations (8). Please adjust your batch parameters."),
    ErrorPattern("swift-megatron", r"num_layers should be divisible by pipeline_model_parallel_size",
                 ("swift_megatron.mcore.layers_divisible_by_pp",),
                 "megatron/core/transformer/transformer_block.py:get_num_layers_to_build (megatron-core)",
                 "AssertionError: num_layers should be divisible by pipeline_model_parallel_size"),
]


# ----------------------------------------------------------------------------- out of memory (frameworks/oom_text.py)
# ms-swift's GRPO trainer (swift/rlhf_trainers/grpo_trainer.py, rollout_mixin.py): the loss, the log-prob passes
# (the reference's call names ref_model / ref_per_token_logps), generation; the Megatron trainer's forward_backward.
# transformers' Trainer.training_step is the outer frame of generation too (it prepares the inputs), so it names
# no phase; the weight sync into vLLM (move_model_to_vllm) runs inside the loss's frames' parent, first.
OOM_FRAMES = (
    (r"ref_per_token_logps\s*=|self\.ref_model|null_ref_context", Phase.REF),
    (r"move_model_to_vllm|_move_model_to_vllm|load_weights", "rollout"),  # the weight sync before generating
    (r"compute_loss|_compute_loss|forward_backward_func|\.backward\(|optimizer\.step|torch/optim/|_multi_tensor_adam"
     r"|step_with_ready_grads", Phase.ACTOR_UPDATE),
    (r"_get_per_token_logps|old_per_token_logps", Phase.OLD_LOG_PROB),
    (r"_generate_completions|_fast_infer|_infer_single_or_multi_turn|_generate_and_score|vllm|\.generate\(",
     Phase.ROLLOUT),
)
OOM_ADVICE = {
    Phase.ROLLOUT: (
        "--vllm_gpu_memory_utilization lower (colocate: the trainer's states come on top)",
        "--sleep_level 1 and --offload_model true / --offload_optimizer true: the trainer leaves the GPU while "
        "vLLM generates",
        "--vllm_tensor_parallel_size higher, or --vllm_mode server on GPUs of its own",
        "--vllm_max_model_len lower"),
    "engine_start": (
        "--vllm_max_model_len lower: one sequence of it must fit the KV cache",
        "--vllm_gpu_memory_utilization higher, where the trainer's states leave room (--offload_model true)",
        "--vllm_tensor_parallel_size higher"),
    Phase.OLD_LOG_PROB: (
        "--per_device_train_batch_size lower: the log-prob passes run on the same micro batch",
        "--padding_free true: no padding tokens"),
    Phase.REF: (
        "--per_device_train_batch_size lower",
        "--beta 0: no reference model (or LoRA: the reference is the model with its adapter off)"),
    Phase.ACTOR_UPDATE: (
        "--per_device_train_batch_size lower (keep the batch with --gradient_accumulation_steps)",
        "--gradient_checkpointing true",
        "--deepspeed zero3 (or zero3_offload): states sharded (and on the CPU)",
        "--train_type lora: adapter states only"),
    Phase.HOST: (
        "--sleep_level 1 backs vLLM's weights up in host RAM: --sleep_level 2 does not",
        "--deepspeed zero3_offload keeps the optimizer in host RAM: plain zero3 where it fits the GPU",
        "more nodes for the same GPUs, or nodes with more RAM (--host-mem to check a node)"),
}
MEGATRON_OOM_ADVICE = {
    **OOM_ADVICE,
    Phase.ACTOR_UPDATE: (
        "--micro_batch_size lower (keep --global_batch_size)",
        "--recompute_granularity full (--recompute_method uniform --recompute_num_layers 1)",
        "--tensor_model_parallel_size / --pipeline_model_parallel_size / --context_parallel_size higher",
        "--optimizer_cpu_offload true"),
}

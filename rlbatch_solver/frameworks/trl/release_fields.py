"""The fields each TRL release's ``GRPOConfig`` declares itself (not those it inherits from transformers'
``TrainingArguments``), read from ``trl/trainer/grpo_config.py`` in each release's wheel (the annotated class
attributes of ``GRPOConfig``). Names only. ``versions.py`` dates a pasted config by them (a field only some
releases have) and names the fields a release's parser refuses.
"""

RELEASE_FIELDS: dict[str, frozenset[str]] = {
    "0.14.0": frozenset({
        "beta", "gradient_accumulation_steps", "learning_rate", "max_completion_length", "max_prompt_length",
        "model_init_kwargs", "num_generations", "per_device_train_batch_size", "remove_unused_columns",
        "temperature", "use_vllm", "vllm_device", "vllm_gpu_memory_utilization"
    }),
    "0.16.1": frozenset({
        "beta", "cache_implementation", "ds3_gather_for_generation", "epsilon", "epsilon_high", "learning_rate",
        "log_completions", "max_completion_length", "max_prompt_length", "min_p", "model_init_kwargs",
        "num_generations", "num_iterations", "ref_model_mixup_alpha", "ref_model_sync_steps",
        "remove_unused_columns", "repetition_penalty", "reward_weights", "scale_rewards", "sync_ref_model",
        "temperature", "top_k", "top_p", "use_vllm", "vllm_device", "vllm_dtype", "vllm_enable_prefix_caching",
        "vllm_gpu_memory_utilization", "vllm_guided_decoding_regex", "vllm_max_model_len", "vllm_server_host",
        "vllm_server_port", "vllm_server_timeout"
    }),
    "0.19.1": frozenset({
        "beta", "bf16", "cache_implementation", "delta", "disable_dropout", "ds3_gather_for_generation", "epsilon",
        "epsilon_high", "generation_batch_size", "generation_kwargs", "learning_rate", "log_completions",
        "logging_steps", "loss_type", "mask_truncated_completions", "max_completion_length", "max_prompt_length",
        "min_p", "model_init_kwargs", "num_completions_to_print", "num_generations", "num_iterations",
        "ref_model_mixup_alpha", "ref_model_sync_steps", "remove_unused_columns", "repetition_penalty",
        "reward_weights", "scale_rewards", "shuffle_dataset", "steps_per_generation", "sync_ref_model",
        "temperature", "top_k", "top_p", "use_liger_loss", "use_vllm", "vllm_gpu_memory_utilization",
        "vllm_guided_decoding_regex", "vllm_mode", "vllm_server_base_url", "vllm_server_host", "vllm_server_port",
        "vllm_server_timeout", "vllm_tensor_parallel_size", "wandb_log_unique_prompts"
    }),
    "0.29.1": frozenset({
        "beta", "cache_implementation", "cast_lm_head_to_fp32", "chat_template_kwargs", "delta", "disable_dropout",
        "ds3_gather_for_generation", "epsilon", "epsilon_high", "generation_batch_size", "generation_kwargs",
        "importance_sampling_level", "learning_rate", "log_completions", "log_completions_hub_repo",
        "log_unique_prompts", "loss_type", "mask_truncated_completions", "max_completion_length",
        "max_tool_calling_iterations", "min_p", "model_init_kwargs", "multi_objective_aggregation",
        "num_completions_to_print", "num_generations", "num_generations_eval", "num_iterations",
        "off_policy_mask_threshold", "ref_model_mixup_alpha", "ref_model_sync_steps", "remove_unused_columns",
        "repetition_penalty", "reward_weights", "sapo_temperature_neg", "sapo_temperature_pos", "scale_rewards",
        "shuffle_dataset", "steps_per_generation", "sync_ref_model", "temperature", "top_entropy_quantile", "top_k",
        "top_p", "use_bias_correction_kl", "use_transformers_paged", "use_vllm", "vllm_enable_sleep_mode",
        "vllm_gpu_memory_utilization", "vllm_group_port", "vllm_importance_sampling_cap",
        "vllm_importance_sampling_correction", "vllm_importance_sampling_mode", "vllm_max_model_length",
        "vllm_mode", "vllm_model_impl", "vllm_server_base_url", "vllm_server_host", "vllm_server_port",
        "vllm_server_timeout", "vllm_structured_outputs_regex", "vllm_tensor_parallel_size"
    }),
    "1.16.0": frozenset({
        "beta", "cache_implementation", "cast_lm_head_to_fp32", "chat_template_kwargs", "delta", "disable_dropout",
        "ds3_gather_for_generation", "entropy_coef", "entropy_coef_delta", "entropy_coef_max", "entropy_coef_min",
        "entropy_target", "epsilon", "epsilon_high", "generation_batch_size", "generation_kwargs",
        "importance_sampling_level", "learning_rate", "log_completions", "log_completions_hub_repo",
        "log_multimodal", "log_unique_prompts", "loss_type", "mask_truncated_completions", "max_completion_length",
        "max_tool_calling_iterations", "min_p", "model_init_kwargs", "multi_objective_aggregation",
        "num_completions_to_print", "num_generations", "num_generations_eval", "num_iterations",
        "off_policy_mask_threshold", "pad_to_multiple_of", "ref_model_mixup_alpha", "ref_model_sync_steps",
        "remove_unused_columns", "repetition_penalty", "reward_weights", "router_aux_loss_coef",
        "sapo_temperature_neg", "sapo_temperature_pos", "scale_rewards", "shuffle_dataset", "steps_per_generation",
        "sync_ref_model", "temperature", "top_entropy_quantile", "top_k", "top_p",
        "transformers_continuous_batching_config", "trust_remote_code", "use_adaptive_entropy",
        "use_bias_correction_kl", "use_transformers_continuous_batching", "use_transformers_paged", "use_vllm",
        "vespo_k_neg", "vespo_k_pos", "vespo_lambda_neg", "vespo_lambda_pos", "vllm_enable_sleep_mode",
        "vllm_gpu_memory_utilization", "vllm_group_port", "vllm_importance_sampling_cap",
        "vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min",
        "vllm_importance_sampling_correction", "vllm_importance_sampling_mode", "vllm_max_model_length",
        "vllm_mode", "vllm_model_impl", "vllm_server_base_url", "vllm_server_host", "vllm_server_port",
        "vllm_server_timeout", "vllm_structured_outputs_regex", "vllm_tensor_parallel_size"
    }),
}

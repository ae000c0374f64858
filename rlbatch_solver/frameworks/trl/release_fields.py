"""The fields each TRL release's ``GRPOConfig`` declares itself (not those it inherits from transformers'
``TrainingArguments``), read from ``trl/trainer/grpo_config.py`` in each release's wheel (the annotated class
attributes of ``GRPOConfig``). Names only. ``versions.py`` dates a pasted config by them (a field only some
releases have) and names the fields a release's parser refuses. One table per minor release from 0.14 to 0.29 (its
last patch) and 1.0.0, 1.16.0; ``versions.RULES_OF`` names the pack that judges a release with no pack of its own.
Written as each release's change from the one before it (fields added, fields removed), in release order.
"""

from ..base import cumulative_names

# release -> (fields it adds, fields it removes), against the release before it
CHANGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "0.14.0": ((
        "beta", "gradient_accumulation_steps", "learning_rate", "max_completion_length", "max_prompt_length",
        "model_init_kwargs", "num_generations", "per_device_train_batch_size", "remove_unused_columns",
        "temperature", "use_vllm", "vllm_device", "vllm_gpu_memory_utilization",
    ), ()),
    "0.15.2": ((
        "ds3_gather_for_generation", "log_completions", "ref_model_mixup_alpha", "ref_model_sync_steps",
        "reward_weights", "sync_ref_model", "vllm_dtype", "vllm_max_model_len",
    ), ("gradient_accumulation_steps", "per_device_train_batch_size",)),
    "0.16.1": ((
        "cache_implementation", "epsilon", "epsilon_high", "min_p", "num_iterations", "repetition_penalty",
        "scale_rewards", "top_k", "top_p", "vllm_enable_prefix_caching", "vllm_guided_decoding_regex",
        "vllm_server_host", "vllm_server_port", "vllm_server_timeout",
    ), ()),
    "0.17.0": ((
        "disable_dropout", "loss_type", "mask_truncated_completions", "num_completions_to_print", "shuffle_dataset",
        "use_liger_loss", "wandb_log_unique_prompts",
    ), ()),
    "0.18.2": ((
        "delta", "generation_batch_size", "steps_per_generation", "vllm_mode", "vllm_server_base_url",
        "vllm_tensor_parallel_size",
    ), ("vllm_device", "vllm_dtype", "vllm_enable_prefix_caching", "vllm_max_model_len",)),
    "0.19.1": (("bf16", "generation_kwargs", "logging_steps",), ()),
    "0.20.0": (("importance_sampling_level", "top_entropy_quantile", "use_transformers_paged",), ()),
    "0.21.0": (("vllm_model_impl",), ()),
    "0.22.2": (("gradient_checkpointing",), ()),
    "0.23.1": ((
        "vllm_enable_sleep_mode", "vllm_importance_sampling_cap", "vllm_importance_sampling_correction",
    ), ()),
    "0.24.0": ((), ()),
    "0.25.1": (("cast_lm_head_to_fp32", "chat_template_kwargs", "lr_scheduler_kwargs",), ()),
    "0.26.2": ((
        "log_unique_prompts", "num_generations_eval", "sapo_temperature_neg", "sapo_temperature_pos",
        "use_bias_correction_kl", "vllm_importance_sampling_mode", "vllm_max_model_length",
    ), ()),
    "0.27.2": ((
        "max_tool_calling_iterations", "multi_objective_aggregation", "off_policy_mask_threshold",
        "vllm_group_port", "vllm_structured_outputs_regex",
    ), ("wandb_log_unique_prompts",)),
    "0.28.0": (("log_completions_hub_repo",), ("max_prompt_length", "use_liger_loss", "vllm_guided_decoding_regex",)),
    "0.29.1": ((), ("bf16", "gradient_checkpointing", "logging_steps", "lr_scheduler_kwargs",)),
    "1.0.0": ((
        "pad_to_multiple_of", "vespo_k_neg", "vespo_k_pos", "vespo_lambda_neg", "vespo_lambda_pos",
    ), ()),
    "1.16.0": ((
        "entropy_coef", "entropy_coef_delta", "entropy_coef_max", "entropy_coef_min", "entropy_target",
        "log_multimodal", "router_aux_loss_coef", "transformers_continuous_batching_config", "trust_remote_code",
        "use_adaptive_entropy", "use_transformers_continuous_batching", "vllm_importance_sampling_clip_max",
        "vllm_importance_sampling_clip_min",
    ), ()),
}



RELEASE_FIELDS: dict[str, frozenset[str]] = cumulative_names(CHANGES)

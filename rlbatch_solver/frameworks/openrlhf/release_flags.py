"""The flags of ``openrlhf/cli/train_ppo_ray.py`` per release (its ``parser.add_argument`` calls, read from each
release's wheel; 0.4.0's from 0.4.0.post2, the first 0.4 wheel on PyPI, 0.5.9's from 0.5.9.post1): what dates a pasted config
(``versions.detect``).
Written as each release's change from the one before it (flags added, flags removed), in release order."""

from __future__ import annotations

from ..base import cumulative_names

# release -> (flags it adds, flags it removes), against the release before it, space-separated
CHANGES: dict[str, tuple[str, str]] = {
    "0.4.0": ((
        "actor_init_on_gpu actor_learning_rate actor_num_gpus_per_node actor_num_nodes adam_betas "
        "adam_offload apply_chat_template aux_loss_coef bf16 ckpt_path colocate_actor_ref "
        "colocate_critic_reward critic_learning_rate critic_num_gpus_per_node critic_num_nodes "
        "critic_pretrain disable_fast_tokenizer disable_trace_cache enable_ema enable_prefix_caching eps_clip "
        "eval_steps flash_attn freezing_actor_steps gamma generate_max_len grad_accum_dtype "
        "gradient_checkpointing gradient_checkpointing_use_reentrant init_kl_coef input_key input_template "
        "kl_target l2 lambd load_checkpoint load_in_4bit local_rank logging_steps lora_alpha lora_dropout "
        "lora_rank max_ckpt_mem max_ckpt_num max_epochs max_len max_norm max_samples micro_rollout_batch_size "
        "micro_train_batch_size n_samples_per_prompt normalize_reward num_episodes perf pretrain "
        "pretrain_data pretrain_data_probs pretrain_split prompt_data prompt_data_probs prompt_max_len "
        "prompt_split ptx_coef ref_num_gpus_per_node ref_num_nodes ref_reward_offload remote_rm_url "
        "reward_num_gpus_per_node reward_num_nodes reward_pretrain rollout_batch_size save_path save_steps "
        "save_value_network seed target_modules top_p train_batch_size use_wandb value_clip value_head_prefix "
        "vllm_num_engines vllm_sync_backend vllm_tensor_parallel_size wandb_group wandb_org wandb_project "
        "wandb_run_name zero_stage zpg "
    ),
              ""),
    "0.5.9": ((
        "advantage_estimator colocate_all_models disable_ds_ckpt enforce_eager lr_warmup_ratio overlap_comm "
        "packing_samples reward_clip_range save_hf_ckpt temperature use_kl_estimator_k3 use_ms "
        "use_tensorboard vllm_enable_sleep vllm_gpu_memory_utilization vllm_sync_with_ray "
    ),
              "disable_trace_cache"),
    "0.6.2": ((
        "deepspeed_enable_sleep full_determinism kl_estimator label_key ring_attn_size ring_head_stride "
        "torch_compile use_kl_loss use_liger_kernel "
    ),
              "use_kl_estimator_k3"),
    "0.7.5": ((
        "deepcompile ds_tensor_parallel_size ema_beta entropy_loss_coef eval_dataset "
        "eval_n_samples_per_prompt eval_split eval_temperature kl_horizon no_advantage_std_norm "
        "use_ds_universal_ckpt "
    ),
              "pretrain_data pretrain_data_probs pretrain_split torch_compile"),
    "0.8.11": ((
        "agent_func_path async_train attn_implementation dual_clip dynamic_filtering "
        "dynamic_filtering_reward_range enable_vllm_is_correction eps_clip_low_high lr_scheduler "
        "overlong_buffer_len overlong_penalty_factor policy_loss_type rollout_max_tokens_per_gpu "
        "train_max_tokens_per_gpu use_dynamic_batch vllm_generate_batch_size vllm_is_truncated_threshold "
    ),
              "flash_attn"),
    "0.9.10": ((
        "async_queue_size best_metric_key dataloader_num_workers max_new_tokens param_dtype partial_rollout "
        "stop_properly_penalty_coef vllm_is_correction_type "
    ),
              "bf16 generate_max_len prompt_max_len"),
    "0.10.4": ((
        "actor.aux_loss_coef actor.dual_clip actor.entropy_coef actor.eps_clip actor.eps_clip_low_high "
        "actor.freeze_visual_encoder actor.gradient_checkpointing_enable "
        "actor.gradient_checkpointing_reentrant actor.model_name_or_path actor.num_gpus_per_node "
        "actor.num_nodes actor.policy_loss_type algo.advantage.estimator algo.advantage.gamma "
        "algo.advantage.is_correction_enable algo.advantage.is_correction_threshold "
        "algo.advantage.is_correction_type algo.advantage.lambd algo.advantage.no_std_norm "
        "algo.dynamic_filtering_enable algo.dynamic_filtering_range algo.kl.estimator algo.kl.horizon "
        "algo.kl.init_coef algo.kl.target algo.kl.use_loss ckpt.best_metric_key ckpt.disable_ds "
        "ckpt.load_enable ckpt.max_mem ckpt.max_num ckpt.output_dir ckpt.path ckpt.save_hf ckpt.save_steps "
        "critic.freezing_steps critic.model_name_or_path critic.num_gpus_per_node critic.num_nodes "
        "critic.save_value_network critic.value_clip data.apply_chat_template data.dataloader_num_workers "
        "data.disable_fast_tokenizer data.image_key data.input_key data.input_template data.label_key "
        "data.max_images_per_prompt data.max_len data.max_samples data.prompt_dataset data.prompt_probs "
        "data.prompt_split ds.adam_offload ds.attn_implementation ds.deepcompile ds.enable_sleep "
        "ds.experts_implementation ds.grad_accum_dtype ds.load_in_4bit ds.lora.alpha ds.lora.dropout "
        "ds.lora.rank ds.lora.target_modules ds.overlap_comm ds.packing_samples ds.param_dtype "
        "ds.ring_attn_head_stride ds.ring_attn_size ds.tensor_parallel_size ds.use_liger_kernel "
        "ds.use_universal_ckpt ds.value_head_prefix ds.zero_stage ds.zpg eval.dataset "
        "eval.n_samples_per_prompt eval.split eval.steps eval.temperature logger.logging_steps "
        "logger.tensorboard_dir logger.wandb.group logger.wandb.key logger.wandb.org logger.wandb.project "
        "logger.wandb.run_name ref.num_gpus_per_node ref.num_nodes ref.offload reward.clip_range "
        "reward.model_name_or_path reward.normalize_enable reward.num_gpus_per_node reward.num_nodes "
        "reward.offload reward.overlong_buffer_len reward.overlong_penalty_factor reward.remote_url "
        "reward.stop_properly_penalty_coef rollout.batch_size rollout.max_new_tokens "
        "rollout.max_tokens_per_gpu rollout.micro_batch_size rollout.n_samples_per_prompt rollout.temperature "
        "rollout.top_p rollout.vllm_generate_batch_size train.agent_func_path train.async_enable "
        "train.async_queue_size train.batch_size train.colocate_actor_ref train.colocate_all "
        "train.colocate_critic_reward train.dynamic_batch_enable train.ema_beta train.enable_ema "
        "train.full_determinism_enable train.max_epochs train.max_tokens_per_gpu train.micro_batch_size "
        "train.num_episodes train.partial_rollout_enable train.seed vllm.enable_prefix_caching "
        "vllm.enable_sleep vllm.enforce_eager vllm.gpu_memory_utilization vllm.num_engines vllm.sync_backend "
        "vllm.sync_with_ray vllm.tensor_parallel_size "
        # the optimizer, scheduler and clip flags train_ppo_ray.py adds in a loop over ("actor", "critic")
        # (parser.add_argument(f"--{prefix}.adam.lr", ...) and its neighbours)
        + " ".join(f"{who}.{flag}" for who in ("actor", "critic") for flag in (
            "optim muon.lr muon.momentum muon.ns_steps muon.nesterov muon.no_nesterov adam.lr adam.betas adam.eps "
            "adam.weight_decay lr_scheduler lr_warmup_ratio min_lr_ratio max_norm").split()) + " "
    ),
              (
        "actor_init_on_gpu actor_learning_rate actor_num_gpus_per_node actor_num_nodes adam_betas "
        "adam_offload advantage_estimator agent_func_path apply_chat_template async_queue_size async_train "
        "attn_implementation aux_loss_coef best_metric_key ckpt_path colocate_actor_ref colocate_all_models "
        "colocate_critic_reward critic_learning_rate critic_num_gpus_per_node critic_num_nodes "
        "critic_pretrain dataloader_num_workers deepcompile deepspeed_enable_sleep disable_ds_ckpt "
        "disable_fast_tokenizer ds_tensor_parallel_size dual_clip dynamic_filtering "
        "dynamic_filtering_reward_range ema_beta enable_ema enable_prefix_caching enable_vllm_is_correction "
        "enforce_eager entropy_loss_coef eps_clip eps_clip_low_high eval_dataset eval_n_samples_per_prompt "
        "eval_split eval_steps eval_temperature freezing_actor_steps full_determinism gamma grad_accum_dtype "
        "gradient_checkpointing gradient_checkpointing_use_reentrant init_kl_coef input_key input_template "
        "kl_estimator kl_horizon kl_target l2 label_key lambd load_checkpoint load_in_4bit logging_steps "
        "lora_alpha lora_dropout lora_rank lr_scheduler lr_warmup_ratio max_ckpt_mem max_ckpt_num max_epochs "
        "max_len max_new_tokens max_norm max_samples micro_rollout_batch_size micro_train_batch_size "
        "n_samples_per_prompt no_advantage_std_norm normalize_reward num_episodes overlap_comm "
        "overlong_buffer_len overlong_penalty_factor packing_samples param_dtype partial_rollout perf "
        "policy_loss_type pretrain prompt_data prompt_data_probs prompt_split ptx_coef ref_num_gpus_per_node "
        "ref_num_nodes ref_reward_offload remote_rm_url reward_clip_range reward_num_gpus_per_node "
        "reward_num_nodes reward_pretrain ring_attn_size ring_head_stride rollout_batch_size "
        "rollout_max_tokens_per_gpu save_hf_ckpt save_path save_steps save_value_network seed "
        "stop_properly_penalty_coef target_modules temperature top_p train_batch_size "
        "train_max_tokens_per_gpu use_ds_universal_ckpt use_dynamic_batch use_kl_loss use_liger_kernel "
        "use_tensorboard use_wandb value_clip value_head_prefix vllm_enable_sleep vllm_generate_batch_size "
        "vllm_gpu_memory_utilization vllm_is_correction_type vllm_is_truncated_threshold vllm_num_engines "
        "vllm_sync_backend vllm_sync_with_ray vllm_tensor_parallel_size wandb_group wandb_org wandb_project "
        "wandb_run_name zero_stage zpg "
    )),
    "0.11.2": ((
        "actor.loss_agg_mode algo.advantage.is_correction_gating algo.advantage.is_correction_level "
        "algo.advantage.is_correction_mode algo.kl.unbiased_gradient "
    ),
              "algo.advantage.is_correction_enable algo.advantage.is_correction_type"),
}

RELEASE_FLAGS: dict[str, frozenset[str]] = cumulative_names(CHANGES)

"""OpenRLHF 0.11.2's own error messages (and those of the older releases we follow, ``versions=``) (and DeepSpeed's, as its model groups hit them), mapped to our rules.

``tests/test_explain.py`` checks that every rule id exists in the OpenRLHF rule set and that each
pattern matches the message the framework really prints (``example``).
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern, _n, _near

PATTERNS: list[ErrorPattern] = [
    # ---- OpenRLHF 0.6.2, 0.5.9 and 0.4.0 (frameworks/openrlhf/versions.py; cli/train_ppo_ray.py _validate_args)
    ErrorPattern(
        "openrlhf",
        r"rollout_bach_size must be divisible by actor_world_size, got (?P<rollout>\d+) and (?P<world>\d+)",
        ("openrlhf.driver.rollout_divisible_by_actor_world",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: rollout_bach_size must be divisible by actor_world_size, got 100 and 8",
        hint=lambda n: f"{n['rollout']} prompts do not split evenly over the {n['world']} actor ranks",
        numbers=("rollout", "world"),
        versions=("0.6.2", "0.5.9"),
    ),
    ErrorPattern(
        "openrlhf",
        r"ZeRO-3 is only supported when vLLM enabled",
        ("openrlhf.driver.zero3_needs_vllm",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: ZeRO-3 is only supported when vLLM enabled",
        versions=("0.6.2", "0.5.9", "0.4.0"),
    ),
    ErrorPattern(
        "openrlhf",
        r"actor_world_size must be divisible by vllm_num_engines",
        ("openrlhf.driver.vllm_engines_match_actor_world",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: actor_world_size must be divisible by vllm_num_engines, got 8 and 3",
        versions=("0.6.2", "0.5.9"),
    ),
    ErrorPattern(
        "openrlhf",
        r"actor_world_size must be divisible by critic_world_size",
        ("openrlhf.driver.actor_world_divisible_by_critic_world",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: actor_world_size must be divisible by critic_world_size, got 6 and 4",
        versions=("0.6.2", "0.5.9", "0.4.0"),
    ),
    ErrorPattern(
        "openrlhf",
        r"actor_world_size must be power of 2",
        ("openrlhf.driver.actor_world_power_of_two",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: actor_world_size must be power of 2, got 6",
        versions=("0.4.0",),
    ),
    ErrorPattern(
        "openrlhf",
        r"critic_world_size must be power of 2",
        ("openrlhf.driver.critic_world_power_of_two",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: critic_world_size must be power of 2, got 3",
        versions=("0.4.0",),
    ),
    ErrorPattern(
        "openrlhf",
        r"'>=?' not supported between instances of 'NoneType' and 'int'",
        ("openrlhf.driver.vllm_num_engines_required",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args (0.4.0: the __main__ block)",
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
        versions=("0.6.2", "0.5.9", "0.4.0"),
    ),
    # ---- OpenRLHF 0.8.11, 0.7.5 (trainer/ray/launcher.py RayActorGroup.async_run_method_batch, PPORayActorGroup in
    # 0.7.5: an assert, 0.9 raises)
    ErrorPattern(
        "openrlhf",
        rf"Total length {_n('batches')} must be greater than or equal to effective actors {_n('actors')}",
        ("openrlhf.launcher.ref_batches_cover_group", "openrlhf.launcher.critic_batches_cover_group",
         "openrlhf.launcher.reward_batches_cover_group"),
        "openrlhf/trainer/ray/launcher.py:RayActorGroup.async_run_method_batch",
        "AssertionError: Total length 2 must be greater than or equal to effective actors 4",
        hint=lambda x: (f"{x['batches']} experience batches (n_samples_per_prompt*rollout_batch_size / "
                        f"micro_rollout_batch_size) are dealt to {x['actors']} ranks of a model group; each needs "
                        "at least one."),
        numbers=("batches", "actors"),
        versions=("0.8.11", "0.7.5"),
    ),
    # ---- OpenRLHF 0.11.2 (cli/train_ppo_ray.py, trainer/ray/launcher.py, utils/deepspeed/deepspeed.py)
    ErrorPattern(
        "openrlhf",
        # argparse's refusal of a pre-0.10.2 underscore flag (--micro_train_batch_size): a name with an underscore
        # before any dot; the dotted names (--train.micro_batch_size) of a newer script on an old release do not match
        r"unrecognized arguments:[^\n]*?--[a-z0-9]+_[a-z0-9_]*(?=[\s=]|$)",
        ("openrlhf.driver.legacy_flag_names",),
        "openrlhf/cli/train_ppo_ray.py (argparse: only the dotted names exist since 0.10.2)",
        "train_ppo_ray.py: error: unrecognized arguments: --micro_train_batch_size 8 --train_batch_size 128",
    ),
    ErrorPattern(
        "openrlhf",
        r"The number of sample batches must be greater than or equal to the effective number of actor processes",
        ("openrlhf.driver.sample_batches_cover_actor",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: The number of sample batches must be greater than or equal to the effective number of "
        "actor processes.",
    ),
    ErrorPattern(
        "openrlhf",
        r"(?P<estimator>rloo|reinforce_baseline|group_norm|dr_grpo) requires n_samples_per_prompt > 1",
        ("openrlhf.driver.group_estimator_needs_n",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: group_norm requires n_samples_per_prompt > 1",
    ),
    ErrorPattern(
        "openrlhf",
        r"n_samples_per_prompt must be greater than 1 when using dynamic filtering",
        ("openrlhf.driver.dynamic_filtering_needs_n",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: n_samples_per_prompt must be greater than 1 when using dynamic filtering",
    ),
    ErrorPattern(
        "openrlhf",
        r"remote_rm_url or agent_func_path must be specified when using dynamic filtering",
        ("openrlhf.driver.dynamic_filtering_needs_remote_reward",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: remote_rm_url or agent_func_path must be specified when using dynamic filtering",
    ),
    ErrorPattern(
        "openrlhf",
        r"Only support `?--packing_samples`? with vLLM",
        ("openrlhf.driver.packing_needs_vllm",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: Only support `--packing_samples` with vLLM.",
    ),
    ErrorPattern(
        "openrlhf",
        r"vllm_generate_batch_size > --rollout\.batch_size requires --train\.async_enable",
        ("openrlhf.driver.generate_batch_needs_async",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: --rollout.vllm_generate_batch_size > --rollout.batch_size requires --train.async_enable "
        "(over-sampling needs async queue to buffer extra batches).",
    ),
    ErrorPattern(
        "openrlhf",
        r"Async RLHF is not supported with --vllm\.enable_sleep",
        ("openrlhf.driver.async_forbids_vllm_sleep",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: Async RLHF is not supported with --vllm.enable_sleep.",
    ),
    ErrorPattern(
        "openrlhf",
        r"--train\.partial_rollout_enable requires --train\.async_enable",
        ("openrlhf.driver.partial_rollout_needs_async",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: --train.partial_rollout_enable requires --train.async_enable.",
    ),
    ErrorPattern(
        "openrlhf",
        r"num_nodes and num_gpus_per_node must be the same when colocate actor and ref model",
        ("openrlhf.colocate.actor_ref_same_size",),
        "openrlhf/cli/train_ppo_ray.py:train",
        "AssertionError: num_nodes and num_gpus_per_node must be the same when colocate actor and ref model.",
    ),
    ErrorPattern(
        "openrlhf",
        r"num_nodes and num_gpus_per_node must be the same when colocate critic and reward model",
        ("openrlhf.colocate.critic_reward_same_size",),
        "openrlhf/cli/train_ppo_ray.py:train",
        "AssertionError: num_nodes and num_gpus_per_node must be the same when colocate critic and reward model.",
    ),
    ErrorPattern(
        "openrlhf",
        rf"actor_num_nodes \* actor_num_gpus_per_node must be equal to vllm_num_engines \* vllm_tensor_parallel_size"
        rf", got {_n('actor')} and {_n('vllm')}",
        ("openrlhf.colocate.vllm_matches_actor",),
        "openrlhf/cli/train_ppo_ray.py:train",
        "AssertionError: actor_num_nodes * actor_num_gpus_per_node must be equal to vllm_num_engines * "
        "vllm_tensor_parallel_size, got 8 and 4",
        hint=lambda x: (f"with train.colocate_all the {x['actor']} actor GPUs must also hold exactly the vLLM "
                        f"engines, but vllm.num_engines*vllm.tensor_parallel_size = {x['vllm']}."),
        numbers=("actor", "vllm"),
    ),
    ErrorPattern(
        "openrlhf",
        rf"Insufficient batch size for async_run_method_batch: total_length={_n('batches')}, "
        rf"effective_actors={_n('actors')}",
        ("openrlhf.launcher.ref_batches_cover_group", "openrlhf.launcher.critic_batches_cover_group",
         "openrlhf.launcher.reward_batches_cover_group"),
        "openrlhf/trainer/ray/launcher.py:RayActorGroup.async_run_method_batch",
        "ValueError: Insufficient batch size for async_run_method_batch: total_length=2, effective_actors=4",
        hint=lambda x: (f"{x['batches']} experience batches (n_samples_per_prompt*rollout.batch_size / "
                        f"rollout.micro_batch_size) are dealt to {x['actors']} ranks of a model group; each needs "
                        "at least one."),
        numbers=("batches", "actors"),
    ),
    ErrorPattern(
        "openrlhf",
        r"BF16 is required for tensor parallel training",
        ("openrlhf.deepspeed.tp_needs_bf16",),
        "openrlhf/utils/deepspeed/deepspeed.py:DeepspeedStrategy.__init__",
        "AssertionError: BF16 is required for tensor parallel training",
    ),
    # ---- DeepSpeed 0.19.8 (runtime/config.py), as OpenRLHF's model groups hit it
    ErrorPattern(
        "openrlhf",
        rf"train_batch_size is not equal to micro_batch_per_gpu \* gradient_acc_step \* world_size\s*"
        rf"{_n('train')} != {_n('micro')} \* {_n('grad_acc')} \* {_n('world')}",
        ("openrlhf.deepspeed.actor_batch", "openrlhf.deepspeed.critic_batch", "openrlhf.deepspeed.ref_batch",
         "openrlhf.deepspeed.reward_batch", "openrlhf.deepspeed.ema_batch"),
        "deepspeed/runtime/config.py:DeepSpeedConfig._batch_assertion (DeepSpeed 0.19.8)",
        "AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
        "gradient_acc_step * world_size 32 != 1 * 10 * 3",
        hint=lambda x: (f"DeepSpeed derives gradient accumulation = {x['train']} // ({x['micro']}*{x['world']}) = "
                        f"{x['grad_acc']} and then needs {x['train']} == {x['micro']}*{x['grad_acc']}*{x['world']} "
                        f"= {x['micro'] * x['grad_acc'] * x['world']}: the train batch (OpenRLHF: train.batch_size "
                        f"times ring_attn_size*ds.tensor_parallel_size) must be a multiple of micro_batch*world_size "
                        f"= {x['micro'] * x['world']}, e.g. {_near(x['train'], x['micro'] * x['world'])}. "
                        f"world_size {x['world']} is the GPU count of the model group that failed (actor, ref, "
                        "critic, reward or EMA model)."),
        numbers=("train", "micro", "grad_acc", "world"),
    ),
    ErrorPattern(
        "openrlhf",
        rf"Gradient accumulation steps: {_n('grad_acc')} has to be greater than 0",
        ("openrlhf.deepspeed.actor_batch", "openrlhf.deepspeed.critic_batch", "openrlhf.deepspeed.ref_batch",
         "openrlhf.deepspeed.reward_batch", "openrlhf.deepspeed.ema_batch"),
        "deepspeed/runtime/config.py:DeepSpeedConfig._batch_assertion (DeepSpeed 0.19.8)",
        "AssertionError: Gradient accumulation steps: 0 has to be greater than 0",
        hint=lambda x: ("DeepSpeed derived gradient accumulation = train_batch_size // (micro_batch*world_size) = "
                        f"{x['grad_acc']}: the train batch is smaller than one micro batch on every rank of the "
                        "model group."),
        numbers=("grad_acc",),
    ),
]


# ----------------------------------------------------------------------------- out of memory (frameworks/oom_text.py)
# OpenRLHF's Ray actors as ray prints them (openrlhf/trainer/ray/launcher.py ReferenceModelActor / RewardModelActor,
# ppo_actor.py PolicyModelActor, ppo_critic.py CriticModelActor; older releases: *RayActor) and the experience
# maker's and trainers' functions (make_experience_list, training_step_actor/_critic, ppo_train).
OOM_FRAMES = (
    (r"Reference\w*Actor|initial_model", Phase.REF),
    (r"training_step_critic|Critic\w*Actor\.fit|critic_loss|Critic\w*Actor\.forward|\bvalue\s*=\s*self\.critic",
     Phase.CRITIC_UPDATE),
    (r"training_step_actor|ppo_train|Policy\w*Actor\.fit|ActorModel\w*Actor\.fit|actor_loss|torch/optim/"
     r"|_multi_tensor_adam|cpu_adam|DeepSpeedCPUAdam", Phase.ACTOR_UPDATE),
    (r"make_experience|action_log_probs\s*=|Policy\w*Actor\.forward", Phase.OLD_LOG_PROB),
    (r"generate_samples|vllm_engine|LLMRayActor|_generate_vllm", Phase.ROLLOUT),
)
OOM_ADVICE = {
    Phase.ROLLOUT: (
        "--vllm.gpu_memory_utilization lower (with colocation, what the DeepSpeed models keep on the GPU comes on top)",
        "--ds.enable_sleep and --vllm.enable_sleep: the models leave the GPU while the engine generates",
        "--vllm.tensor_parallel_size higher, or more engines (--vllm.num_engines)"),
    "engine_start": (
        "--vllm.gpu_memory_utilization higher, where the models on the same GPUs leave room",
        "--vllm.tensor_parallel_size higher: the weights split, more of the budget is KV cache",
        "--rollout.max_new_tokens / --data.max_len lower: vLLM's max_model_len follows them"),
    Phase.OLD_LOG_PROB: (
        "--rollout.micro_batch_size lower, or with --train.dynamic_batch_enable --rollout.max_tokens_per_gpu lower",
        "--ds.packing_samples: no padding in the micro batches",
        "--ds.ring_attn_size higher: a sequence's tokens split over GPUs"),
    Phase.REF: (
        "--rollout.micro_batch_size lower (the reference forward uses it too)",
        "--ref.num_gpus_per_node higher, or --ref.offload off the actor's GPUs",
        "--train.colocate_actor_ref off: the reference on GPUs of its own"),
    Phase.ACTOR_UPDATE: (
        "--train.micro_batch_size lower, or with --train.dynamic_batch_enable --train.max_tokens_per_gpu lower",
        "--actor.gradient_checkpointing_enable: one layer's activations instead of all",
        "--ds.zero_stage 3 and --ds.adam_offload: states sharded, Adam on the CPU",
        "--actor.num_gpus_per_node higher (ZeRO shards over more GPUs)"),
    Phase.CRITIC_UPDATE: (
        "--train.micro_batch_size lower (the critic uses it too)",
        "--ds.zero_stage 3 / --ds.adam_offload",
        "--critic.num_gpus_per_node higher"),
    Phase.HOST: (
        "--vllm.enable_sleep puts the engines to sleep at level 1: their weights go to host RAM; leave it off on a "
        "small node",
        "--ds.adam_offload keeps fp32 master weights and moments in host RAM (16 B per parameter): on GPUs where "
        "they fit, leave it off",
        "more nodes for the same GPUs, or nodes with more RAM (--host-mem to check a node)"),
}

"""OpenRLHF 0.11.2's own error messages (and those of the older releases we follow, ``versions=``) (and DeepSpeed's, as its model groups hit them), mapped to our rules.

``tests/test_explain.py`` checks that every rule id exists in the OpenRLHF rule set and that each
pattern matches the message the framework really prints (``example``).
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern, _n, _near, some_divisors
from .names import LEGACY_FLAGS, UNSAID_OLD


def _pow2(world: int) -> str:
    """The powers of two either side of ``world`` (\"4 or 8\")."""
    lo = 1 << (max(world, 1).bit_length() - 1)
    return str(lo) if lo == world else f"{lo} or {lo * 2}"

PATTERNS: list[ErrorPattern] = [
    # ---- OpenRLHF 0.6.2, 0.5.9 and 0.4.0 (frameworks/openrlhf/versions.py; cli/train_ppo_ray.py _validate_args)
    ErrorPattern(
        "openrlhf",
        r"rollout_bach_size must be divisible by actor_world_size, got (?P<rollout>\d+) and (?P<world>\d+)",
        ("openrlhf.driver.rollout_divisible_by_actor_world",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: rollout_bach_size must be divisible by actor_world_size, got 100 and 8",
        hint=lambda n: (f"--rollout_batch_size {n['rollout']} prompts do not split evenly over the {n['world']} "
                        f"actor ranks (--actor_num_nodes x --actor_num_gpus_per_node); use a multiple of "
                        f"{n['world']}: {_near(n['rollout'], n['world'])}."),
        numbers=("rollout", "world"),
        versions=("0.6.2", "0.5.9"),
    ),
    ErrorPattern(
        "openrlhf",
        r"ZeRO-3 is only supported when vLLM enabled",
        ("openrlhf.driver.zero3_needs_vllm",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: ZeRO-3 is only supported when vLLM enabled",
        hint=lambda x: ("--zero_stage 3 needs vLLM engines to generate (this release): give --vllm_num_engines 1 "
                        "or more, or use --zero_stage 2."),
        versions=("0.6.2", "0.5.9", "0.4.0"),
    ),
    ErrorPattern(
        "openrlhf",
        r"actor_world_size must be divisible by vllm_num_engines"
        r"(?:, got (?P<actor>\d+) and (?P<engines>\d+))?",
        ("openrlhf.driver.vllm_engines_match_actor_world",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: actor_world_size must be divisible by vllm_num_engines, got 8 and 3",
        hint=lambda x: (f"the {x['actor']} actor GPUs (--actor_num_nodes x --actor_num_gpus_per_node) do not split "
                        f"evenly over --vllm_num_engines {x['engines']}; use an engine count that divides "
                        f"{x['actor']}: {some_divisors(x['actor'])} (0.6.2 also takes a multiple of {x['actor']})."),
        numbers=("actor", "engines"),
        versions=("0.6.2", "0.5.9"),
    ),
    ErrorPattern(
        "openrlhf",
        r"actor_world_size must be divisible by critic_world_size"
        r"(?:, got (?P<actor>\d+) and (?P<critic>\d+))?",
        ("openrlhf.driver.actor_world_divisible_by_critic_world",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: actor_world_size must be divisible by critic_world_size, got 6 and 4",
        hint=lambda x: (f"the {x['actor']} actor GPUs are not a multiple of the {x['critic']} critic GPUs "
                        "(--critic_num_nodes x --critic_num_gpus_per_node); give the critic a divisor of "
                        f"{x['actor']}: {some_divisors(x['actor'])}."),
        numbers=("actor", "critic"),
        versions=("0.6.2", "0.5.9", "0.4.0"),
    ),
    ErrorPattern(
        "openrlhf",
        r"actor_world_size must be power of 2(?:, got (?P<world>\d+))?",
        ("openrlhf.driver.actor_world_power_of_two",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: actor_world_size must be power of 2, got 6",
        hint=lambda x: ("this release needs a power-of-two actor world (--actor_num_nodes x "
                        f"--actor_num_gpus_per_node), not {x['world']}; use {_pow2(x['world'])} actor GPUs."),
        numbers=("world",),
        versions=("0.4.0",),
    ),
    ErrorPattern(
        "openrlhf",
        r"critic_world_size must be power of 2(?:, got (?P<world>\d+))?",
        ("openrlhf.driver.critic_world_power_of_two",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args",
        "AssertionError: critic_world_size must be power of 2, got 3",
        hint=lambda x: ("this release needs a power-of-two critic world (--critic_num_nodes x "
                        f"--critic_num_gpus_per_node), not {x['world']}; use {_pow2(x['world'])} critic GPUs."),
        numbers=("world",),
        versions=("0.4.0",),
    ),
    ErrorPattern(
        "openrlhf",
        r"'>=?' not supported between instances of 'NoneType' and 'int'",
        ("openrlhf.driver.vllm_num_engines_required",),
        "openrlhf/cli/train_ppo_ray.py:_validate_args (0.4.0: the __main__ block)",
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
        hint=lambda x: ("--vllm_num_engines is not set (its default None is compared with 0); give "
                        "--vllm_num_engines with the engine count, or --vllm_num_engines 0 for the actor to "
                        "generate itself."),
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
        # (another release's flag the rule does not say, --enforce_eager, is openrlhf.launch.unknown_key's: explain
        # reads it as the parser's refusal, with its successor or none)
        # (train_ppo.py's parser, the launcher without Ray, is of the releases before 0.6.2, whose flags are the
        # underscore names: its refusal is of a flag it lacks, openrlhf.launch.unknown_key's, never of an old name)
        r"(?<!train_ppo\.py: error: )unrecognized arguments:[^\n]*?--(?!(?:" + "|".join(sorted(UNSAID_OLD, key=len, reverse=True))
        + r")(?=[\s=]|$))(?P<flag>[a-z0-9]+_[a-z0-9_]*)(?=[\s=]|$)",
        ("openrlhf.driver.legacy_flag_names",),
        "openrlhf/cli/train_ppo_ray.py (argparse: only the dotted names exist since 0.10.2)",
        "train_ppo_ray.py: error: unrecognized arguments: --micro_train_batch_size 8 --train_batch_size 128",
        hint=lambda x: (f"--{x['flag']} "
                        + (f"is --{LEGACY_FLAGS[x['flag']]} " if x["flag"] in LEGACY_FLAGS else "is an old name ")
                        + "since OpenRLHF 0.10.2 (every train_ppo_ray flag got a dotted name, with no alias); rename "
                        "the script's flags (--train_batch_size -> --train.batch_size), or pin the release it was "
                        "written for."),
        numbers=("flag",),
    ),
    ErrorPattern(
        "openrlhf",
        r"The number of sample batches must be greater than or equal to the effective number of actor processes",
        ("openrlhf.driver.sample_batches_cover_actor",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: The number of sample batches must be greater than or equal to the effective number of "
        "actor processes.",
        hint=lambda x: ("every actor data-parallel rank needs one experience batch: "
                        "--rollout.n_samples_per_prompt x --rollout.batch_size / --rollout.micro_batch_size must "
                        "reach the actor GPUs / (--ds.ring_attn_size x --ds.tensor_parallel_size); lower "
                        "--rollout.micro_batch_size or raise --rollout.batch_size."),
    ),
    ErrorPattern(
        "openrlhf",
        r"(?P<estimator>rloo|reinforce_baseline|group_norm|dr_grpo) requires n_samples_per_prompt > 1",
        ("openrlhf.driver.group_estimator_needs_n",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: group_norm requires n_samples_per_prompt > 1",
        hint=lambda x: (f"--algo.advantage.estimator {x['estimator']} compares several answers to one prompt; set "
                        "--rollout.n_samples_per_prompt to 2 or more (or use the gae or reinforce estimator)."),
    ),
    ErrorPattern(
        "openrlhf",
        r"n_samples_per_prompt must be greater than 1 when using dynamic filtering",
        ("openrlhf.driver.dynamic_filtering_needs_n",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: n_samples_per_prompt must be greater than 1 when using dynamic filtering",
        hint=lambda x: ("--algo.dynamic_filtering_enable keeps prompts by the spread of their answers' rewards; "
                        "set --rollout.n_samples_per_prompt to 2 or more, or drop dynamic filtering."),
    ),
    ErrorPattern(
        "openrlhf",
        r"remote_rm_url or agent_func_path must be specified when using dynamic filtering",
        ("openrlhf.driver.dynamic_filtering_needs_remote_reward",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: remote_rm_url or agent_func_path must be specified when using dynamic filtering",
        hint=lambda x: ("dynamic filtering needs rewards from --reward.remote_url or --train.agent_func_path, not "
                        "a reward model; give one of them, or drop --algo.dynamic_filtering_enable."),
    ),
    ErrorPattern(
        "openrlhf",
        r"Only support `?--packing_samples`? with vLLM",
        ("openrlhf.driver.packing_needs_vllm",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: Only support `--packing_samples` with vLLM.",
        hint=lambda x: ("sample packing (--ds.packing_samples, also switched on by --ds.ring_attn_size > 1 and "
                        "--train.dynamic_batch_enable) needs vLLM engines; set --vllm.num_engines to 1 or more, "
                        "or turn those off."),
    ),
    ErrorPattern(
        "openrlhf",
        r"vllm_generate_batch_size > --rollout\.batch_size requires --train\.async_enable",
        ("openrlhf.driver.generate_batch_needs_async",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: --rollout.vllm_generate_batch_size > --rollout.batch_size requires --train.async_enable "
        "(over-sampling needs async queue to buffer extra batches).",
        hint=lambda x: ("--rollout.vllm_generate_batch_size above --rollout.batch_size over-samples prompts, "
                        "which needs the async queue; add --train.async_enable, or lower "
                        "--rollout.vllm_generate_batch_size to --rollout.batch_size."),
    ),
    ErrorPattern(
        "openrlhf",
        r"Async RLHF is not supported with --vllm\.enable_sleep",
        ("openrlhf.driver.async_forbids_vllm_sleep",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: Async RLHF is not supported with --vllm.enable_sleep.",
        hint=lambda x: ("with --train.colocate_all, async training cannot put vLLM to sleep; drop "
                        "--vllm.enable_sleep (or --train.async_enable)."),
    ),
    ErrorPattern(
        "openrlhf",
        r"--train\.partial_rollout_enable requires --train\.async_enable",
        ("openrlhf.driver.partial_rollout_needs_async",),
        "openrlhf/cli/train_ppo_ray.py (the __main__ block)",
        "AssertionError: --train.partial_rollout_enable requires --train.async_enable.",
        hint=lambda x: ("--train.partial_rollout_enable only works with async training; add --train.async_enable, "
                        "or drop partial rollout."),
    ),
    ErrorPattern(
        "openrlhf",
        r"num_nodes and num_gpus_per_node must be the same when colocate actor and ref model",
        ("openrlhf.colocate.actor_ref_same_size",),
        "openrlhf/cli/train_ppo_ray.py:train",
        "AssertionError: num_nodes and num_gpus_per_node must be the same when colocate actor and ref model.",
        hint=lambda x: ("--train.colocate_actor_ref (or --train.colocate_all) puts actor and reference on the "
                        "same GPUs (when the reference runs, --algo.kl.init_coef > 0): --ref.num_nodes and "
                        "--ref.num_gpus_per_node must equal --actor.num_nodes and --actor.num_gpus_per_node; make "
                        "them equal."),
    ),
    ErrorPattern(
        "openrlhf",
        r"num_nodes and num_gpus_per_node must be the same when colocate critic and reward model",
        ("openrlhf.colocate.critic_reward_same_size",),
        "openrlhf/cli/train_ppo_ray.py:train",
        "AssertionError: num_nodes and num_gpus_per_node must be the same when colocate critic and reward model.",
        hint=lambda x: ("--train.colocate_critic_reward puts critic and reward model on the same GPUs: "
                        "--reward.num_nodes and --reward.num_gpus_per_node must equal --critic.num_nodes and "
                        "--critic.num_gpus_per_node (checked even with a remote reward); make them equal, or drop "
                        "--train.colocate_critic_reward."),
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
        hint=lambda x: ("DeepSpeed tensor parallel (--ds.tensor_parallel_size > 1) needs bf16 parameters; set "
                        "--ds.param_dtype bf16, or --ds.tensor_parallel_size 1."),
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

# The launcher without Ray (openrlhf/cli/train_ppo.py, the releases before 0.6.2): one DeepSpeed strategy over every
# GPU for the actor, critic, reward and reference models (train_ppo.py train: strategy.prepare of all four), rollouts
# generated by the actor's own HF generate in micro_rollout_batch_size batches (trainer/ppo_utils/experience_maker.py
# NaiveExperienceMaker), no vLLM: what helps, in its parser's own flags (versions.non_ray_flags: no group GPU counts,
# no --ref_reward_offload, no packing)
NON_RAY_OOM_ADVICE = {
    Phase.ROLLOUT: (
        "--micro_rollout_batch_size lower: the actor generates that many prompts at a time",
        "--generate_max_len lower: the KV cache of HF generate grows with it",
        "--zero_stage 3: every model's weights sharded over the GPUs"),
    Phase.OLD_LOG_PROB: (
        "--micro_rollout_batch_size lower (the experience forwards use it)",
        "--zero_stage 3: every model's weights sharded over the GPUs"),
    Phase.REF: (
        "--micro_rollout_batch_size lower (the reference forward uses it too)",
        "--zero_stage 3: the reference's weights sharded too"),
    Phase.ACTOR_UPDATE: (
        "--micro_train_batch_size lower",
        "--gradient_checkpointing: one layer's activations instead of all",
        "--zero_stage 3 and --adam_offload: states sharded, Adam on the CPU",
        "more GPUs in the launcher's world (ZeRO shards over more GPUs)"),
    Phase.CRITIC_UPDATE: (
        "--micro_train_batch_size lower (the critic uses it too)",
        "--zero_stage 3 / --adam_offload",
        "--gradient_checkpointing"),
    Phase.HOST: (
        "--adam_offload keeps fp32 master weights and moments in host RAM (16 B per parameter): on GPUs where they "
        "fit, leave it off",
        "more nodes for the same GPUs, or nodes with more RAM (--host-mem to check a node)"),
}

"""The flag names of each OpenRLHF release we follow: the 0.11.2 dotted names the rules use (``--train.batch_size``),
the underscore names the releases before 0.10.2 read (``--train_batch_size``), and which of them a release's
train_ppo_ray has (release_flags.RELEASE_FLAGS). Import, export, input errors and rule messages all spell a flag
through ``release_key``."""

from __future__ import annotations

import re

from ...release_numbers import release_numbers
from .release_flags import RELEASE_FLAGS

NEWEST = max(RELEASE_FLAGS, key=release_numbers)

# pre-0.10.2 underscore flag -> 0.11.2 dotted flag (same default and meaning; checked against both wheels)
LEGACY_FLAGS: dict[str, str] = {
    "ref_num_nodes": "ref.num_nodes",
    "ref_num_gpus_per_node": "ref.num_gpus_per_node",
    "reward_num_nodes": "reward.num_nodes",
    "reward_num_gpus_per_node": "reward.num_gpus_per_node",
    "actor_num_nodes": "actor.num_nodes",
    "actor_num_gpus_per_node": "actor.num_gpus_per_node",
    "critic_num_nodes": "critic.num_nodes",
    "critic_num_gpus_per_node": "critic.num_gpus_per_node",
    "colocate_actor_ref": "train.colocate_actor_ref",
    "colocate_critic_reward": "train.colocate_critic_reward",
    "colocate_all_models": "train.colocate_all",
    "vllm_num_engines": "vllm.num_engines",
    "vllm_tensor_parallel_size": "vllm.tensor_parallel_size",
    "vllm_enable_sleep": "vllm.enable_sleep",
    "vllm_gpu_memory_utilization": "vllm.gpu_memory_utilization",
    "async_train": "train.async_enable",
    "partial_rollout": "train.partial_rollout_enable",
    "zero_stage": "ds.zero_stage",
    "gradient_checkpointing": "actor.gradient_checkpointing_enable",
    "enable_ema": "train.enable_ema",
    "adam_offload": "ds.adam_offload",
    "ds_tensor_parallel_size": "ds.tensor_parallel_size",
    "packing_samples": "ds.packing_samples",
    "use_dynamic_batch": "train.dynamic_batch_enable",
    "rollout_max_tokens_per_gpu": "rollout.max_tokens_per_gpu",
    "train_max_tokens_per_gpu": "train.max_tokens_per_gpu",
    "rollout_batch_size": "rollout.batch_size",
    "vllm_generate_batch_size": "rollout.vllm_generate_batch_size",
    "micro_rollout_batch_size": "rollout.micro_batch_size",
    "max_epochs": "train.max_epochs",
    "max_len": "data.max_len",
    "max_new_tokens": "rollout.max_new_tokens",
    "micro_train_batch_size": "train.micro_batch_size",
    "train_batch_size": "train.batch_size",
    "n_samples_per_prompt": "rollout.n_samples_per_prompt",
    "init_kl_coef": "algo.kl.init_coef",
    "advantage_estimator": "algo.advantage.estimator",
    "use_kl_loss": "algo.kl.use_loss",
    "ring_attn_size": "ds.ring_attn_size",
    "ring_head_stride": "ds.ring_attn_head_stride",
    "pretrain": "actor.model_name_or_path",
    "reward_pretrain": "reward.model_name_or_path",
    "remote_rm_url": "reward.remote_url",
    "critic_pretrain": "critic.model_name_or_path",
    "agent_func_path": "train.agent_func_path",
    "dynamic_filtering": "algo.dynamic_filtering_enable",
    "deepspeed_enable_sleep": "ds.enable_sleep",
    "num_episodes": "train.num_episodes",
    "load_in_4bit": "ds.load_in_4bit",
}
# 0.11.2 dotted flag -> the underscore flag the releases before 0.10.2 read (what fix and export write for them)
OLD_NAMES: dict[str, str] = {new: old for old, new in LEGACY_FLAGS.items()}
OLD_NAMES["rollout.max_new_tokens"] = "generate_max_len"
OLD_NAMES["algo.kl.estimator"] = "kl_estimator"  # read by no rule: an --algo's setting, exported as it is
OLD_NAMES["actor.policy_loss_type"] = "policy_loss_type"
# the example's data flags (run_command), as the releases before 0.10.2 name them
OLD_NAMES.update({"data.prompt_dataset": "prompt_data", "data.input_key": "input_key",
                  "data.apply_chat_template": "apply_chat_template"})
# the launch scripts' other flags no rule reads, each the same argument (type, default, help) in 0.9.10's and
# 0.11.2's train_ppo_ray.py: read and printed in the release's name (fix renames them for 0.10.2 and later)
OLD_NAMES.update({"actor.adam.lr": "actor_learning_rate", "critic.adam.lr": "critic_learning_rate",
                  "algo.advantage.gamma": "gamma", "ckpt.output_dir": "save_path", "ckpt.path": "ckpt_path",
                  "ckpt.save_hf": "save_hf_ckpt", "data.max_samples": "max_samples",
                  "reward.normalize_enable": "normalize_reward", "vllm.sync_backend": "vllm_sync_backend"})


def _dotted(version: str) -> bool:
    """Whether the release's flags are the dotted names (0.10.2 renamed every flag, keeping no aliases)."""
    return "train.batch_size" in RELEASE_FLAGS[version]


# a dotted flag -> every underscore name that meant it, the usual one first (0.9.10 renamed --generate_max_len to
# --max_new_tokens before 0.10.2 dotted it: rollout.max_new_tokens is one or the other, by release)
_SPELLINGS: dict[str, list[str]] = {new: [old] for new, old in OLD_NAMES.items()}
for _old, _new in LEGACY_FLAGS.items():
    if _old not in _SPELLINGS.setdefault(_new, []):
        _SPELLINGS[_new].append(_old)
# an underscore name -> the dotted flag it spells
DOTTED_OF = {name: new for new, names in _SPELLINGS.items() for name in names}
# before 0.10.2 one flag offloaded both models (train_ppo_ray.py: --ref_reward_offload, read by the reference and the
# reward model actors alike); 0.10.2 split it in two. The legacy rules hold the two equal (versions.py V0910)
for _new in ("ref.offload", "reward.offload"):
    _SPELLINGS.setdefault(_new, []).append("ref_reward_offload")


def release_key(key: str, version: str) -> str:
    """A 0.11.2 flag name as ``version`` spells it: itself from 0.10.2 on; before, the underscore name that release's
    train_ppo_ray has (the usual one where it has none: a flag it lacks, said as the releases around it name it)."""
    if _dotted(version):
        return key
    names = _SPELLINGS.get(key, [key])
    return next((n for n in names if n in RELEASE_FLAGS[version]), names[0])


def release_has(key: str, version: str) -> bool:
    """Whether ``version``'s train_ppo_ray has the flag named ``key`` in 0.11.2 (release_flags.py)."""
    return version == NEWEST or release_key(key, version) in RELEASE_FLAGS[version]


# a dotted flag name in running text: not inside a longer name or a path
_DOTTED = re.compile(r"(?<![\w./-])(" + "|".join(sorted(map(re.escape, _SPELLINGS), key=len, reverse=True))
                     + r")(?![\w])")


def spelled(text: str, version: str) -> str:
    """``text`` (a rule's message) with each 0.11.2 dotted flag name in it as ``version`` spells it."""
    if not text or _dotted(version):
        return text
    return _DOTTED.sub(lambda m: release_key(m.group(1), version), text)


# Flags of the releases before 0.10.2 that the dotted releases took with another name and the same meaning, where the
# rules read neither (so no rename reads them in: framework.KEPT_LEGACY), from 0.11.2's cli/train_ppo_ray.py parser:
# --vllm.enforce_eager ("Disable CUDA graph in vLLM", 0.9.10's --enforce_eager help word for word),
# --vllm.enable_prefix_caching, --actor.eps_clip ("PPO clip range"), --critic.value_clip ("PPO value clip range"),
# --algo.advantage.lambd ("PPO GAE lambd"), --rollout.temperature, --rollout.top_p, --data.input_template,
# --data.label_key, --logger.logging_steps, --ckpt.save_steps, --eval.steps, --ckpt.load_enable (--load_checkpoint),
# --logger.wandb.project. None: no flag of the same spelling and meaning (--bf16: bf16 is the default of
# --ds.param_dtype, 0.9.10's --param_dtype; --flash_attn: --ds.attn_implementation takes the kernel's name)
SUCCESSOR_OF: dict[str, str | None] = {
    "enforce_eager": "vllm.enforce_eager", "enable_prefix_caching": "vllm.enable_prefix_caching",
    "eps_clip": "actor.eps_clip", "value_clip": "critic.value_clip", "lambd": "algo.advantage.lambd",
    "temperature": "rollout.temperature", "top_p": "rollout.top_p", "input_template": "data.input_template",
    "label_key": "data.label_key", "logging_steps": "logger.logging_steps", "save_steps": "ckpt.save_steps",
    "eval_steps": "eval.steps", "load_checkpoint": "ckpt.load_enable", "wandb_project": "logger.wandb.project",
    "bf16": None, "flash_attn": None,
}
# why a flag of SUCCESSOR_OF has none, in words
NO_SUCCESSOR_WHY = {"bf16": "bf16 is the default of --ds.param_dtype",
                    "flash_attn": "--ds.attn_implementation names the attention kernel"}


def releases_with(flag: str) -> list[str]:
    """The releases we follow whose train_ppo_ray has ``flag``, oldest first."""
    return sorted((v for v, flags in RELEASE_FLAGS.items() if flag in flags), key=release_numbers)


# old flags with no one-to-one successor (still mark the config as using old names)
LEGACY_ONLY = frozenset({
    "ref_reward_offload", "prompt_max_len", "generate_max_len", "bf16", "flash_attn", "save_path", "prompt_data",
    "input_key", "label_key", "apply_chat_template", "normalize_reward", "actor_learning_rate",
    "critic_learning_rate", "max_samples", "ckpt_path", "save_steps", "logging_steps", "eval_steps", "use_wandb",
    "wandb_project", "kl_estimator", "save_hf_ckpt", "load_checkpoint", "vllm_sync_backend", "enforce_eager",
    "enable_prefix_caching", "input_template", "eps_clip", "value_clip", "lambd", "gamma", "temperature", "top_p",
})

# old flags of LEGACY_ONLY read back into the config, so that a printed answer keeps them where its release has them:
# those that spell a later dotted flag no rule reads under its dotted name (--prompt_data: data.prompt_dataset, printed
# as the release spells it), the others under their own names (--bf16, --save_path ...); prompt_max_len,
# generate_max_len and ref_reward_offload are converted (normalize_flags), and kl_estimator is the algorithm's
CONVERTED_LEGACY = frozenset({"ref_reward_offload", "prompt_max_len", "generate_max_len", "kl_estimator"})
RENAMED_LEGACY = {old: new for old, new in DOTTED_OF.items() if old in LEGACY_ONLY - CONVERTED_LEGACY}
KEPT_LEGACY = LEGACY_ONLY - CONVERTED_LEGACY - set(RENAMED_LEGACY)
ALL_RELEASE_FLAGS = frozenset().union(*RELEASE_FLAGS.values())
# the flags of older releases the newest's argparse refuses and the legacy-names rule does not say
# (openrlhf.launch.unknown_key: framework.other_release_flags): --bf16, --enforce_eager, 0.5.9's --use_kl_estimator_k3 ...
UNSAID_OLD = ALL_RELEASE_FLAGS - RELEASE_FLAGS[NEWEST] - set(LEGACY_FLAGS) - set(RENAMED_LEGACY) - CONVERTED_LEGACY

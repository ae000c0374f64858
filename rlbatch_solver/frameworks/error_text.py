"""The frameworks' own error messages, mapped to our rules.

Users paste the line their job died on. Each entry is a regular expression
over that text (written from the message in the framework's source, cited),
the framework, and the rule ids it corresponds to. Named groups pick the
numbers out of the message so the explanation can repeat them.

``tests/test_explain.py`` checks that every rule id here exists in its rule
set, and that each pattern matches the message the framework really prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorPattern:
    framework: str
    pattern: str
    rules: tuple[str, ...]
    source: str
    example: str  # the framework's message with sample numbers (tested to match)

    def match(self, text: str) -> re.Match | None:
        return re.search(self.pattern, text, re.IGNORECASE | re.DOTALL)


N = r"(?P<{}>-?\d+)"


def _n(name: str) -> str:
    return N.format(name)


PATTERNS: list[ErrorPattern] = [
    # ---- verl 0.9.1
    ErrorPattern(
        "verl",
        rf"real_train_batch_size \({_n('samples')}\) must be divisible by minimal possible batch size \({_n('minimal')}\)",
        ("verl.driver.batch_divisible_by_gpus",),
        "verl/utils/config.py:validate_config",
        "AssertionError: real_train_batch_size (520) must be divisible by minimal possible batch size (8)",
    ),
    ErrorPattern(
        "verl",
        r"You have set both '(?P<who>actor|critic|[\w.]+)\.(ppo_micro_batch_size|log_prob_micro_batch_size)' AND",
        ("verl.actor.micro_exactly_one", "verl.critic.micro_exactly_one", "verl.rollout.logprob_micro_exactly_one",
         "verl.ref.logprob_micro_exactly_one"),
        "verl/workers/config/actor.py:ActorConfig.__post_init__, verl/utils/config.py:check_mutually_exclusive",
        "ValueError: [actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'.",
    ),
    ErrorPattern(
        "verl",
        r"Please set at least one of '(?P<who>[\w.]+)\.(ppo_micro_batch_size|log_prob_micro_batch_size)'",
        ("verl.actor.micro_exactly_one", "verl.critic.micro_exactly_one", "verl.rollout.logprob_micro_exactly_one",
         "verl.ref.logprob_micro_exactly_one"),
        "verl/workers/config/actor.py:ActorConfig.__post_init__, verl/utils/config.py:check_mutually_exclusive",
        "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or 'actor.ppo_micro_batch_size_per_gpu' "
        "if use_dynamic_bsz is not enabled.",
    ),
    ErrorPattern(
        "verl",
        rf"train_batch_size \({_n('train')}\) must be >= (?P<who>actor|critic)\.ppo_mini_batch_size \({_n('mini')}\)",
        ("verl.actor.mini_le_train", "verl.critic.mini_le_train"),
        "verl/workers/config/actor.py:ActorConfig.validate",
        "ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)",
    ),
    ErrorPattern(
        "verl",
        rf"ppo_mini_batch_size \({_n('mini')}\) must be divisible by ppo_micro_batch_size \({_n('micro')}\)",
        ("verl.actor.global_micro_divides_mini", "verl.critic.global_micro_divides_mini"),
        "verl/workers/config/actor.py:ActorConfig.validate",
        "ValueError: ppo_mini_batch_size (32) must be divisible by ppo_micro_batch_size (12)",
    ),
    ErrorPattern(
        "verl",
        rf"ppo_micro_batch_size \({_n('micro')}\) \* .{{0,40}}must be >= n_gpus \({_n('gpus')}\)",
        ("verl.actor.global_micro_covers_gpus", "verl.critic.global_micro_covers_gpus"),
        "verl/workers/config/actor.py:ActorConfig.validate",
        "ValueError: ppo_micro_batch_size (4) * ulysses_sequence_parallel_size (1) must be >= n_gpus (8)",
    ),
    ErrorPattern(
        "verl",
        r"(normalized ppo_mini_batch_size should be divisible by ppo_micro_batch_size_per_gpu"
        r"|data size must be divisible by force_group_size \* micro_batch_size_per_gpu)",
        ("verl.step.mini_divisible_by_micro", "verl.step.logprob_micro_divides_local_batch",
         "verl.step.ref_micro_divides_local_batch"),
        "verl/workers/engine/utils.py:prepare_micro_batches (older releases: workers/fsdp_workers.py)",
        "AssertionError: data size must be divisible by force_group_size * micro_batch_size_per_gpu",
    ),
    ErrorPattern(
        "verl",
        r"expert_parallel_size must be equal to tensor_model_parallel_size \* data_parallel_size",
        ("verl.rollout.ep_equals_tp_dp",),
        "verl/workers/config/rollout.py:RolloutConfig.__post_init__",
        "ValueError: expert_parallel_size must be equal to tensor_model_parallel_size * data_parallel_size",
    ),
    ErrorPattern(
        "verl",
        rf"rollout world_size: {_n('world')} is not divisible by infer_world_size: {_n('infer')}",
        ("verl.worker.rollout_world_divides_gpus",),
        "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model",
        "AssertionError: rollout world_size: 8 is not divisible by infer_world_size: 3",
    ),
    ErrorPattern(
        "verl",
        rf"world_size {_n('world')} must be divisible by gpus_per_node {_n('per_node')}",
        ("verl.rollout.replica_fits_nodes",),
        "verl/workers/rollout/replica.py:RolloutReplica.__init__",
        "AssertionError: world_size 12 must be divisible by gpus_per_node 8",
    ),
    ErrorPattern(
        "verl",
        r"gpus_per_node should be divisible by tensor_model_parallel_size",
        ("verl.vllm.dp_needs_tp_within_node",),
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
        "AssertionError: gpus_per_node should be divisible by tensor_model_parallel_size",
    ),
    ErrorPattern(
        "verl",
        rf"max_model_len \({_n('model_len')}\) should be less than or equal to",
        ("verl.vllm.model_len_le_positions",),
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
        "max_model_len (65536) should be less than or equal to max_position_embeddings (32768)",
    ),
    ErrorPattern(
        "verl",
        rf"num_attention_heads {_n('heads')} must be divisible by ulysses_sp_size {_n('sp')}"
        rf"|num_heads \({_n('heads2')}\) must be divisible by ulysses sequence size\({_n('sp2')}\)",
        ("verl.ulysses.actor_heads_divisible",),
        "verl/models/transformers/monkey_patch.py, verl/utils/ulysses.py",
        "AssertionError: num_attention_heads 28 must be divisible by ulysses_sp_size 8",
    ),
    ErrorPattern(
        "verl",
        rf"num_key_value_heads {_n('kv_heads')} must be divisible by ulysses_sp_size",
        ("verl.ulysses.actor_kv_heads",),
        "verl/models/transformers/monkey_patch.py",
        "AssertionError: num_key_value_heads 4 must be divisible by ulysses_sp_size 8or vise versa.",
    ),
    ErrorPattern(
        "verl",
        rf"max_token_len must be greater than the sequence length\. Got max_token_len={_n('budget')} and "
        rf"max_seq_len={_n('longest')}",
        ("verl.step.actor_token_budget", "verl.step.logprob_token_budget", "verl.step.ref_token_budget",
         "verl.step.critic_token_budget"),
        "verl/utils/seqlen_balancing.py:rearrange_micro_batches",
        "AssertionError: max_token_len must be greater than the sequence length. Got max_token_len=2000 and "
        "max_seq_len=2160",
    ),
    ErrorPattern(
        "verl",
        rf"Total number of attention heads \({_n('heads')}\) must be divisible by tensor parallel size \({_n('tp')}\)",
        ("verl.vllm.heads_divisible_by_tp",),
        "vLLM config check of num_attention_heads vs tensor_parallel_size (raised inside verl's rollout workers)",
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).",
    ),
]


def register(patterns: list[ErrorPattern]) -> None:
    """Frameworks add their messages here (one list per framework module)."""
    PATTERNS.extend(patterns)


def match_error(text: str, framework: str | None = None) -> list[tuple[ErrorPattern, dict[str, str]]]:
    """Every known message the pasted text contains, with the numbers it names."""
    out = []
    for p in PATTERNS:
        if framework and p.framework != framework:
            continue
        m = p.match(text)
        if m:
            out.append((p, {k: v for k, v in m.groupdict().items() if v is not None}))
    return out

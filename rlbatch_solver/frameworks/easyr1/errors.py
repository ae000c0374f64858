"""EasyR1 0.3.2's own error messages, mapped to our rules (``explain``), and its out-of-memory phases.

``tests/test_explain.py`` checks that every rule id exists and that each pattern matches its example.
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern, some_divisors
from ..verl import errors as verl_errors
from .rules import BALANCE, CHUNK, MESH, ROLLOUT, SPLIT, TRAINER, VLLM


PATTERNS: list[ErrorPattern] = [
    ErrorPattern("easyr1", r"Rollout batch size must be divisible by actor global batch size",
                 ("easyr1.trainer.rollout_divisible_by_global",), TRAINER,
                 "ValueError: Rollout batch size must be divisible by actor global batch size.",
                 hint=lambda x: ("data.rollout_batch_size (prompts per step) must be a multiple of "
                                 "worker.actor.global_batch_size (prompts per update); use a global_batch_size "
                                 "that divides rollout_batch_size, or make rollout_batch_size a multiple of it.")),
    ErrorPattern("easyr1", r"Rollout batch size \* rollout\.n must be divisible by actor micro batch size for experience",
                 ("easyr1.trainer.samples_divisible_by_experience_micro",), TRAINER,
                 "ValueError: Rollout batch size * rollout.n must be divisible by actor micro batch size for experience.",
                 hint=lambda x: ("data.rollout_batch_size x worker.rollout.n must be a multiple of "
                                 "worker.actor.micro_batch_size_per_device_for_experience; use a micro size that "
                                 "divides it.")),
    ErrorPattern("easyr1", r"Rollout batch size must be divisible by critic global batch size",
                 ("easyr1.trainer.critic_rollout_divisible_by_global",), TRAINER,
                 "ValueError: Rollout batch size must be divisible by critic global batch size.",
                 hint=lambda x: ("data.rollout_batch_size (prompts per step) must be a multiple of "
                                 "worker.critic.global_batch_size; use a critic global_batch_size that divides "
                                 "rollout_batch_size, or make rollout_batch_size a multiple of it.")),
    ErrorPattern("easyr1", r"Rollout batch size \* rollout\.n must be divisible by critic micro batch size for experience",
                 ("easyr1.trainer.critic_samples_divisible_by_experience_micro",), TRAINER,
                 "ValueError: Rollout batch size * rollout.n must be divisible by critic micro batch size for experience.",
                 hint=lambda x: ("data.rollout_batch_size x worker.rollout.n must be a multiple of "
                                 "worker.critic.micro_batch_size_per_device_for_experience; use a micro size that "
                                 "divides it.")),
    ErrorPattern("easyr1", r"GRPO and RLOO algorithm need `?config\.worker\.rollout\.n > 1",
                 ("easyr1.trainer.group_needs_n",), TRAINER,
                 "ValueError: GRPO and RLOO algorithm need `config.worker.rollout.n > 1`.",
                 hint=lambda x: ("GRPO and RLOO compare several answers to one prompt; set worker.rollout.n to 2 "
                                 "or more.")),
    ErrorPattern("easyr1", r"(?P<role>actor|critic) global batch size \* ulysses size must be larger than num gpus",
                 ("easyr1.actor.global_covers_gpus", "easyr1.critic.global_covers_gpus"), MESH,
                 "ValueError: actor global batch size * ulysses size must be larger than num gpus.",
                 hint=lambda x: (f"worker.{x['role']}.global_batch_size x worker.rollout.n samples per update is "
                                 "fewer than the data-parallel GPUs (GPU count / "
                                 f"worker.{x['role']}.ulysses_size); raise worker.{x['role']}.global_batch_size "
                                 "until it covers them.")),
    ErrorPattern("easyr1", r"(?P<role>actor|critic) global batch size per device must be divisible by the micro batch size",
                 ("easyr1.actor.micro_divides_per_device", "easyr1.critic.micro_divides_per_device"), MESH,
                 "ValueError: actor global batch size per device must be divisible by the micro batch size.",
                 hint=lambda x: (f"each GPU's update share (worker.{x['role']}.global_batch_size x "
                                 "worker.rollout.n / data-parallel GPUs) is not a multiple of "
                                 f"worker.{x['role']}.micro_batch_size_per_device_for_update; use a micro size "
                                 "that divides that share.")),
    ErrorPattern("easyr1", r"(?P<role>actor|critic) cannot use FSDP's CPU offload when gradient accumulation is enabled",
                 ("easyr1.actor.cpu_offload_no_accumulation", "easyr1.critic.cpu_offload_no_accumulation"), MESH,
                 "ValueError: actor cannot use FSDP's CPU offload when gradient accumulation is enabled.",
                 hint=lambda x: (f"worker.{x['role']}.fsdp.enable_cpu_offload=true cannot accumulate gradients: "
                                 f"set worker.{x['role']}.micro_batch_size_per_device_for_update to each GPU's "
                                 "whole update share (global_batch_size x rollout.n / GPUs), or turn "
                                 "enable_cpu_offload off.")),
    ErrorPattern("easyr1", r"rollout world size (?P<world>\d+) is not divisible by tp size (?P<tp>\d+)",
                 ("easyr1.rollout.tp_divides_gpus",), ROLLOUT,
                 "ValueError: rollout world size 6 is not divisible by tp size 4.",
                 hint=lambda x: (f"worker.rollout.tensor_parallel_size {x['tp']} does not divide the {x['world']} GPUs; "
                                 f"sizes that do: {some_divisors(x['world'])}"), numbers=("world", "tp")),
    ErrorPattern("easyr1", r"Tensor parallelism size should be less than world size",
                 ("easyr1.rollout.tp_le_gpus",), VLLM,
                 "ValueError: Tensor parallelism size should be less than world size.",
                 hint=lambda x: ("worker.rollout.tensor_parallel_size is more than the GPU count "
                                 "(trainer.n_gpus_per_node x trainer.nnodes); lower it to a divisor of the GPU "
                                 "count.")),
    ErrorPattern("easyr1", r"max_num_batched_tokens should be greater than prompt_length \+ response_length",
                 ("easyr1.rollout.batched_tokens_cover_sample",), VLLM,
                 "ValueError: max_num_batched_tokens should be greater than prompt_length + response_length.",
                 hint=lambda x: ("worker.rollout.max_num_batched_tokens is below data.max_prompt_length + "
                                 "data.max_response_length; raise it to at least that sum.")),
    ErrorPattern("easyr1", r"only support equal chunk\. Got size of DataProto (?P<size>\d+) and chunk (?P<chunks>\d+)",
                 ("easyr1.dispatch.prompts_divisible_by_gpus", "easyr1.dispatch.samples_divisible_by_gpus"), CHUNK,
                 "AssertionError: only support equal chunk. Got size of DataProto 100 and chunk 8.",
                 hint=lambda x: (f"a batch of {x['size']} does not split over {x['chunks']} GPUs: make "
                                 "data.rollout_batch_size (and mini_rollout_batch_size) and rollout_batch_size * n "
                                 f"multiples of {x['chunks']}"), numbers=("size", "chunks")),
    ErrorPattern("easyr1", r"AssertionError: (?P<size>\d+) % (?P<chunks>\d+) != 0",
                 ("easyr1.dispatch.samples_divisible_by_gpus",), BALANCE,
                 "AssertionError: 36 % 8 != 0",
                 hint=lambda x: (f"the step's {x['size']} samples do not split over {x['chunks']} GPUs: make "
                                 f"data.rollout_batch_size * worker.rollout.n a multiple of {x['chunks']}"),
                 numbers=("size", "chunks")),
    ErrorPattern("easyr1", r"only support equal split\. Got size of DataProto (?P<size>\d+) and split (?P<split>\d+)",
                 ("easyr1.actor.update_batches_split_step", "easyr1.actor.experience_micro_splits_local",
                  "easyr1.critic.update_batches_split_step", "easyr1.critic.experience_micro_splits_local"), SPLIT,
                 "AssertionError: only support equal split. Got size of DataProto 80 and split 48.",
                 hint=lambda x: (f"a GPU's {x['size']} samples do not split into batches of {x['split']} "
                                 "(worker.actor/critic.global_batch_size x rollout.n per GPU, or "
                                 "micro_batch_size_per_device_for_experience / _for_update); sizes that do: "
                                 f"{some_divisors(x['size'])}"), numbers=("size", "split")),
]

# EasyR1's workers run verl's functions under verl's names (dp_actor.update_policy, compute_log_prob,
# compute_ref_log_prob, generate_sequences): verl's frames name the phases
OOM_FRAMES = verl_errors.OOM_FRAMES
A = "worker.actor"
OOM_ADVICE = {
    Phase.ROLLOUT: (
        "worker.rollout.gpu_memory_utilization lower: vLLM reserves that share of the whole GPU",
        f"{A}.offload.offload_params=true and offload_optimizer=true: the actor's states leave the GPU while vLLM "
        "generates",
        "worker.rollout.tensor_parallel_size higher: the engine's weights and KV cache split over more GPUs",
        "worker.rollout.max_num_batched_tokens lower: a smaller prefill batch"),
    Phase.OLD_LOG_PROB: (
        f"{A}.micro_batch_size_per_device_for_experience lower (with dynamic_batching a token budget of that many "
        "longest samples)",
        f"{A}.ulysses_size higher: a sequence's tokens split over GPUs",
        f"{A}.offload.offload_params=true"),
    Phase.REF: (
        f"{A}.micro_batch_size_per_device_for_experience lower (the reference copies it)",
        "worker.ref.offload.offload_params=true or worker.ref.fsdp.enable_cpu_offload=true"),
    Phase.ACTOR_UPDATE: (
        f"{A}.micro_batch_size_per_device_for_update lower",
        f"{A}.model.enable_gradient_checkpointing=true",
        f"{A}.ulysses_size higher",
        f"{A}.offload.offload_optimizer=true / offload_params=true"),
    Phase.CRITIC_UPDATE: (
        "worker.critic.micro_batch_size_per_device_for_update lower",
        "worker.critic.model.enable_gradient_checkpointing=true",
        "worker.critic.offload.offload_params=true / offload_optimizer=true"),
    Phase.HOST: verl_errors.OOM_ADVICE[Phase.HOST],
}

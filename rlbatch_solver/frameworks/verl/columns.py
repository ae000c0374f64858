"""verl's columns in the enumerate table (render.py): the seed guide's names for FSDP, derived values for both."""

from __future__ import annotations

from typing import Mapping

from ...rules.base import Value

# verl FSDP: the seed guide's columns, always these (Framework.table_columns)
TABLE_COLUMNS = (
    ("train_batch_size", "train"),
    ("actor_mini", "mini"),
    ("actor_micro_per_gpu", "micro/gpu"),
    ("grad_accum", "grad acc"),
    ("logprob_micro_per_gpu", "logprob micro"),
    ("ref_micro_per_gpu", "ref micro"),
    ("actor_sp", "ulysses sp"),
    ("rollout_tp", "rollout TP"),
    ("rollout_replicas", "rollout replicas"),
)

FSDP_DERIVED = (("grad_accum", "grad acc"), ("rollout_replicas", "rollout replicas"))
MEGATRON_DERIVED = (("dp", "dp"), ("grad_accum", "grad acc"), ("rollout_replicas", "rollout replicas"))
# what a derived column holds, in the table's legend: the replicas are not a key of verl's, and its key
# rollout.data_parallel_size is the data parallel inside one engine (verl/workers/rollout/replica.py:
# RolloutReplica.__init__: a replica's world size is tensor x data x pipeline parallel), which the printed overrides
# show beside them
COLUMN_NOTES = (("rollout_replicas", "inference engines: the rollout GPUs / (rollout TP x DP x PP); not "
                                     "actor_rollout_ref.rollout.data_parallel_size, the DP inside one engine"),)

# native key words -> column words, longest first: the Megatron backend's keys, and verl's (both backends)
_PARALLEL_WORDS = (
    ("virtual_pipeline_model_parallel_size", "VPP"), ("expert_tensor_parallel_size", "ETP"),
    ("expert_model_parallel_size", "EP"), ("tensor_model_parallel_size", "TP"),
    ("pipeline_model_parallel_size", "PP"), ("context_parallel_size", "CP"), ("data_parallel_size", "DP"),
    ("expert_parallel_size", "EP"),
)
_BATCH_WORDS = (
    ("log_prob_micro_batch_size_per_gpu", "logprob micro"), ("ppo_micro_batch_size_per_gpu", "micro/gpu"),
    ("ppo_mini_batch_size", "mini"), ("micro_batch_size", "micro"), ("train_batch_size", "train"),
    ("n_gpus_per_node", "GPUs/node"), ("gpu_memory_utilization", "gpu mem"),
)
MEGATRON_WORDS = _PARALLEL_WORDS + _BATCH_WORDS
COLUMN_WORDS = _PARALLEL_WORDS + (("ulysses_sequence_parallel_size", "ulysses sp"),) + _BATCH_WORDS


def column_values(env: Mapping[str, Value]) -> dict[str, Value]:
    """The rollout replicas (inference engines: the rollout GPUs over one engine's world size), which no rule
    derives."""
    if "N" in env and "rollout_ws" in env:
        return {"rollout_replicas": env["N"] // max(1, env["rollout_ws"])}
    return {}

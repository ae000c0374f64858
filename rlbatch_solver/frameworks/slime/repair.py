"""What ``rlbatch fix`` may change in slime 0.3.1, and in which order: the micro batch and token budget first, then
the global and rollout batches, the Megatron layout and the SGLang engine size, the memory switches last. GPU counts,
n_samples_per_prompt and the lengths stay as the user has them. The fields are described in
``frameworks/repair_policies.py``."""

from __future__ import annotations

from ..repair_policies import RepairPolicy

SLIME = RepairPolicy(
    rules=("micro_batch_size", "max_tokens_per_gpu", "global_batch_size", "steps_per_rollout", "train_batch_size",
           "over_sampling", "tp", "pp", "cp", "gpus_per_engine", "dynamic_batch"),
    memory=("gmu_permille", "megatron_recompute", "megatron_cpu_optimizer_permille"),
    ranks={"gmu_permille": 1, "micro_batch_size": 2, "max_tokens_per_gpu": 2, "megatron_recompute": 3,
           "global_batch_size": 4, "steps_per_rollout": 4, "train_batch_size": 5, "over_sampling": 5,
           "gpus_per_engine": 6, "tp": 6, "pp": 7, "cp": 7, "megatron_cpu_optimizer_permille": 8,
           "dynamic_batch": 9},
    parallel=frozenset({"tp", "pp", "cp", "gpus_per_engine"}),
    token_budgets=frozenset({"max_tokens_per_gpu"}),
    permille=frozenset({"gmu_permille", "megatron_cpu_optimizer_permille"}),
    hardware={"actor_gpus_per_node": "per_node", "actor_nodes": "count", "rollout_gpus": "count"},
    algorithm=("n",),
    algorithm_batch=frozenset({"train_batch_size"}),  # --rollout-batch-size: the prompts per rollout
    lengths=("max_response_length",),
    grows_memory=frozenset({"gmu_permille", "micro_batch_size", "max_tokens_per_gpu"}),
)

"""What ``rlbatch fix`` may change in SkyRL 0.3.1, and in which order: the micro batches first, then the mini and
train batches, the engines' tensor parallel size and count, the Ulysses sizes, the memory switches last. GPU counts
and n_samples_per_prompt stay as the user has them. The fields are described in ``frameworks/repair_policies.py``."""

from __future__ import annotations

from ..repair_policies import RepairPolicy

SKYRL = RepairPolicy(
    rules=("actor_micro_per_gpu", "logprob_micro_per_gpu", "train_batch_size", "actor_mini", "critic_mini",
           "num_engines", "rollout_tp", "actor_sp", "ref_sp", "critic_sp", "max_input_length", "batched"),
    memory=("gmu_permille", "grad_ckpt", "actor_cpu_offload", "ref_cpu_offload", "critic_cpu_offload"),
    ranks={"gmu_permille": 1, "actor_micro_per_gpu": 2, "logprob_micro_per_gpu": 3, "grad_ckpt": 4,
           "max_input_length": 4, "batched": 4, "train_batch_size": 5, "actor_mini": 5, "critic_mini": 5,
           "num_engines": 6, "rollout_tp": 6, "actor_sp": 7, "ref_sp": 7, "critic_sp": 7, "actor_cpu_offload": 8,
           "ref_cpu_offload": 8, "critic_cpu_offload": 8},
    parallel=frozenset({"rollout_tp", "num_engines", "actor_sp", "ref_sp", "critic_sp"}),
    permille=frozenset({"gmu_permille"}),
    anchors={"logprob_micro_per_gpu": "actor_micro_per_gpu", "ref_sp": "actor_sp", "critic_sp": "actor_sp"},
    hardware={"gpus_per_node": "per_node", "nnodes": "count"},
    algorithm=("n",),
    algorithm_batch=frozenset({"train_batch_size"}),  # trainer.train_batch_size: the prompts per step
    lengths=("max_response_length",),
    grows_memory=frozenset({"gmu_permille", "actor_micro_per_gpu", "logprob_micro_per_gpu"}),
)

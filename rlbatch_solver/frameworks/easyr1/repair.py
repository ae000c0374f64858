"""What ``rlbatch fix`` may change in EasyR1 0.3.2, and in which order: the micro batches first, then the update
and rollout batches, the rollout's tensor parallel size, the Ulysses size, the memory switches last. GPU counts
and rollout.n stay as the user has them. The fields are described in ``frameworks/repair_policies.py``."""

from __future__ import annotations

from ..repair_policies import RepairPolicy

EASYR1 = RepairPolicy(
    rules=("actor_micro_per_gpu", "logprob_micro_per_gpu", "critic_micro_per_gpu", "critic_exp_micro",
           "train_batch_size", "gen_batch", "actor_mini", "critic_mini", "rollout_tp", "actor_sp", "critic_sp",
           "max_num_batched_tokens", "actor_cpu_offload", "critic_cpu_offload", "actor_dyn",
           "critic_dyn_batching"),
    memory=("gmu_permille", "grad_ckpt", "param_offload", "optimizer_offload", "ref_param_offload",
            "critic_grad_ckpt", "critic_param_offload", "critic_optimizer_offload"),
    ranks={"gmu_permille": 1, "actor_micro_per_gpu": 2, "critic_micro_per_gpu": 2, "logprob_micro_per_gpu": 3,
           "critic_exp_micro": 3, "actor_cpu_offload": 3, "critic_cpu_offload": 3, "grad_ckpt": 4,
           "critic_grad_ckpt": 4, "max_num_batched_tokens": 4, "train_batch_size": 5, "gen_batch": 5,
           "actor_mini": 5, "critic_mini": 5, "rollout_tp": 6, "actor_sp": 7, "critic_sp": 7, "param_offload": 8,
           "optimizer_offload": 8, "ref_param_offload": 8, "critic_param_offload": 8, "critic_optimizer_offload": 8,
           "actor_dyn": 9, "critic_dyn_batching": 9},
    parallel=frozenset({"rollout_tp", "actor_sp", "critic_sp"}),
    token_budgets=frozenset({"max_num_batched_tokens"}),
    permille=frozenset({"gmu_permille"}),
    anchors={"critic_micro_per_gpu": "actor_micro_per_gpu", "logprob_micro_per_gpu": "actor_micro_per_gpu",
             "critic_exp_micro": "logprob_micro_per_gpu"},
    hardware={"gpus_per_node": "per_node", "nnodes": "count"},
    algorithm=("n",),
    algorithm_batch=frozenset({"train_batch_size"}),  # data.rollout_batch_size: the prompts per step
    lengths=("max_response_length",),
    grows_memory=frozenset({"gmu_permille", "actor_micro_per_gpu", "logprob_micro_per_gpu", "critic_micro_per_gpu",
                            "critic_exp_micro"}),
)

"""What ``rlbatch fix`` may change in OpenRLHF 0.11.2, and in which order (fields: ``frameworks/repair_policies.py``)."""

from __future__ import annotations

from ..repair_policies import RepairPolicy

# Batch sizes first (micro sizes, then the train batch, then the
# rollout batch), then the vLLM layout, DeepSpeed's ring/TP sizes, the ref/critic/reward groups' GPU
# counts (the actor's count and the cluster are the hardware), and the switches last.
OPENRLHF = RepairPolicy(
    rules=("micro_train_batch_size", "micro_rollout_batch_size", "train_batch_size", "rollout_batch_size",
           "vllm_generate_batch_size", "train_max_tokens", "vllm_num_engines", "vllm_tp", "ring_attn_size", "ds_tp",
           "fp16", "vllm_sleep", "packing_samples", "ref_gpus_per_node", "critic_gpus_per_node",
           "reward_gpus_per_node", "colocate_actor_ref", "colocate_critic_reward", "colocate_all", "async_train",
           "partial_rollout", "dynamic_batch"),
    memory=("gmu_permille", "zero_stage", "grad_ckpt", "adam_offload", "ref_offload", "reward_offload"),
    ranks={
        "micro_train_batch_size": 2, "micro_rollout_batch_size": 2, "gmu_permille": 1, "vllm_generate_batch_size": 3,
        "train_batch_size": 4, "train_max_tokens": 4, "grad_ckpt": 4, "rollout_batch_size": 5,
        "vllm_num_engines": 5, "vllm_tp": 5, "fp16": 6, "vllm_sleep": 6, "zero_stage": 6,
        "ring_attn_size": 7, "ds_tp": 7, "packing_samples": 7,
        "ref_gpus_per_node": 8, "critic_gpus_per_node": 8, "reward_gpus_per_node": 8, "adam_offload": 8,
        "ref_offload": 8, "reward_offload": 8, "colocate_actor_ref": 8, "colocate_critic_reward": 8,
        "colocate_all": 9, "async_train": 9, "partial_rollout": 8, "dynamic_batch": 9,
    },
    parallel=frozenset({"vllm_num_engines", "vllm_tp", "ring_attn_size", "ds_tp", "ref_gpus_per_node",
                        "critic_gpus_per_node", "reward_gpus_per_node"}),
    token_budgets=frozenset({"train_max_tokens"}),
    permille=frozenset({"gmu_permille"}),
    unset_only=frozenset({"vllm_generate_batch_size"}),
    hardware={"actor_gpus_per_node": "per_node", "cluster_num_gpus": "count"},
    algorithm=("n",),
    algorithm_batch=frozenset({"rollout_batch_size"}),  # rollout.batch_size: the prompts per rollout
    lengths=("max_new_tokens",),
    grows_memory=frozenset({"gmu_permille", "micro_train_batch_size", "micro_rollout_batch_size", "train_max_tokens"}),
    choices={"zero_stage": (0, 1, 2, 3)},
    within_node=frozenset({"ds_tp"}),  # DeepSpeed AutoTP  # the stages DeepSpeed has (framework.py refuses others on input)
)

"""What ``rlbatch fix`` may change in verl 0.9.1 (FSDP and Megatron backends), and in which order.

The verl order follows the seed guide's out-of-memory advice ("lower gpu_memory_utilization, lower
micro, lower log-prob micro, lower train and mini together", then the memory features: gradient
checkpointing, entropy chunking, offload); the deprecated global micro sizes come last, since verl
0.9.1's workers need the per-GPU ones. The fields are described in ``frameworks/repair_policies.py``.
"""

from __future__ import annotations

from ..repair_policies import RepairPolicy

VERL = RepairPolicy(
    rules=(
        "actor_micro", "logprob_micro", "ref_micro", "critic_micro",
        "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "critic_micro_per_gpu",
        "train_batch_size", "actor_mini", "critic_mini",
        "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
        "actor_dyn", "logprob_dyn", "ref_dyn", "critic_dyn", "remove_padding",
        "actor_sp", "ref_sp", "critic_sp", "rollout_tp", "rollout_dp", "rollout_ep", "fsdp_size",
        "rollout_gpus_per_node", "max_model_len", "rollout_sync",
        # split placements: the weight-sync backend, the hybrid engine on the trainer GPUs (docs/async.md)
        "ckpt_naive", "hybrid_engine",
    ),
    memory=("gmu_permille", "grad_ckpt", "entropy_chunking", "param_offload", "optimizer_offload",
            "ref_param_offload", "critic_grad_ckpt", "critic_param_offload", "critic_optimizer_offload"),
    ranks={
        # deprecated global micro sizes: last resort (verl 0.9.1 workers need the per-GPU keys)
        "actor_micro": 9, "logprob_micro": 9, "ref_micro": 9, "critic_micro": 9,
        "gmu_permille": 1, "rollout_sync": 0,  # an old script's rollout.mode=sync: 0.7+ has only async
        "ckpt_naive": 0, "hybrid_engine": 1,  # a backend name, a switch: no batch or layout moves
        "actor_micro_per_gpu": 2, "critic_micro_per_gpu": 2,
        "logprob_micro_per_gpu": 3, "ref_micro_per_gpu": 3,
        "grad_ckpt": 4, "critic_grad_ckpt": 4, "entropy_chunking": 4,
        "actor_max_tokens": 4, "logprob_max_tokens": 4, "ref_max_tokens": 4, "critic_max_tokens": 4,
        "train_batch_size": 5, "actor_mini": 5, "critic_mini": 5,
        "rollout_tp": 6, "rollout_dp": 6, "rollout_ep": 6, "rollout_gpus_per_node": 6, "max_model_len": 6,
        "actor_sp": 7, "ref_sp": 7, "critic_sp": 7, "fsdp_size": 7,
        "param_offload": 8, "optimizer_offload": 8, "ref_param_offload": 8,
        "critic_param_offload": 8, "critic_optimizer_offload": 8,
        "actor_dyn": 9, "logprob_dyn": 9, "ref_dyn": 9, "critic_dyn": 9, "remove_padding": 9,
    },
    parallel=frozenset({"actor_sp", "ref_sp", "critic_sp", "rollout_tp", "rollout_dp", "rollout_ep", "fsdp_size",
                        "rollout_gpus_per_node"}),
    token_budgets=frozenset({"actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
                             "max_model_len"}),
    permille=frozenset({"gmu_permille"}),
    unset_only=frozenset({"actor_micro", "logprob_micro", "ref_micro", "critic_micro"}),
    anchors={"critic_micro_per_gpu": "actor_micro_per_gpu", "logprob_micro_per_gpu": "actor_micro_per_gpu",
             "ref_micro_per_gpu": "logprob_micro_per_gpu", "actor_micro_per_gpu": "logprob_micro_per_gpu"},
    # verl <= 0.4 divided the global micro sizes by the world size (workers/fsdp_workers.py, ActorRolloutRefWorker
    # __init__: ppo_micro_batch_size //= device_mesh.size() // ulysses_sequence_parallel_size)
    per_gpu_of={"actor_micro_per_gpu": "actor_micro", "logprob_micro_per_gpu": "logprob_micro",
                "ref_micro_per_gpu": "ref_micro", "critic_micro_per_gpu": "critic_micro"},
    hardware={"gpus_per_node": "per_node", "nnodes": "count"},
    algorithm=("n",),
    # the prompts per step (n never moves): verl's data.train_batch_size
    algorithm_batch=frozenset({"train_batch_size"}),
    lengths=("max_response_length",),
    grows_memory=frozenset({"gmu_permille", "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu",
                            "critic_micro_per_gpu", "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens"}),
    # read by memory through the token budgets' share of a batch (cost.py BATCH_SHARE)
    batch_grows_memory=frozenset({"train_batch_size", "actor_mini", "critic_mini", "n"}),
)

# verl 0.9.1, Megatron backend (rules_megatron.py). The batch keys move as under FSDP; then the
# parallel layout: the ref and critic sizes first (verl's v0.9 examples copy the actor's sizes into
# them), the rollout's data parallel before its tensor parallel (more replicas of a small TP, as the
# seeds' perf notes advise), the actor's TP/PP/EP before CP/VPP and the uneven-pipeline overrides.
_MEGATRON_PARALLEL = ("tp", "pp", "cp", "ep", "etp", "ref_tp", "ref_pp", "ref_cp", "ref_ep", "ref_etp",
                      "critic_tp", "critic_pp", "critic_cp", "critic_ep", "critic_etp")
_VERL_BATCH = ("actor_micro", "logprob_micro", "ref_micro", "critic_micro",
               "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "critic_micro_per_gpu",
               "train_batch_size", "actor_mini", "critic_mini",
               "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
               "actor_dyn", "logprob_dyn", "ref_dyn", "critic_dyn")
VERL_MEGATRON = RepairPolicy(
    rules=_VERL_BATCH + ("rollout_tp", "rollout_dp", "rollout_ep", "rollout_pp", "rollout_gpus_per_node",
                         "max_model_len", "rollout_sync", "ckpt_naive", "hybrid_engine") + _MEGATRON_PARALLEL
    + ("vpp", "ref_vpp", "critic_vpp", "first_stage_layers", "last_stage_layers", "pp_account_embedding",
       "pp_account_loss"),
    memory=("gmu_permille", "megatron_param_offload", "megatron_optimizer_offload", "ref_megatron_param_offload",
            "critic_megatron_param_offload", "critic_megatron_optimizer_offload"),
    ranks={
        **{k: v for k, v in VERL.ranks.items() if k in _VERL_BATCH or k.startswith("rollout_")
           or k in ("gmu_permille", "max_model_len", "ckpt_naive", "hybrid_engine")},  # rollout_sync among them
        "rollout_dp": 5, "rollout_pp": 5,
        "ref_tp": 5, "ref_pp": 5, "ref_cp": 5, "ref_ep": 5, "ref_etp": 5, "ref_vpp": 5,
        "critic_tp": 5, "critic_pp": 5, "critic_cp": 5, "critic_ep": 5, "critic_etp": 5, "critic_vpp": 5,
        "etp": 6, "ep": 6, "tp": 7, "pp": 7, "cp": 8, "vpp": 8,
        "first_stage_layers": 8, "last_stage_layers": 8, "pp_account_embedding": 9, "pp_account_loss": 9,
        "megatron_param_offload": 8, "megatron_optimizer_offload": 8, "ref_megatron_param_offload": 8,
        "critic_megatron_param_offload": 8, "critic_megatron_optimizer_offload": 8,
        "megatron_recompute": 4, "megatron_cpu_optimizer_permille": 8,
    },
    parallel=frozenset({"rollout_tp", "rollout_dp", "rollout_ep", "rollout_pp", "rollout_gpus_per_node",
                        *_MEGATRON_PARALLEL}),
    token_budgets=VERL.token_budgets,
    permille=VERL.permille,
    unset_only=VERL.unset_only,
    anchors=dict(VERL.anchors),
    hardware=dict(VERL.hardware),
    algorithm=VERL.algorithm,
    algorithm_batch=VERL.algorithm_batch,
    lengths=VERL.lengths,
    grows_memory=VERL.grows_memory,
    batch_grows_memory=VERL.batch_grows_memory,
    # full activation recompute (the FSDP policy's gradient checkpointing, rank 4 there too) and megatron-core's
    # CPU optimizer for all of the optimizer states (HybridDeviceOptimizer, offload fraction 1.0), as verl's
    # large-MoE examples set them (run_qwen3-235b_megatron_96gb.sh: optimizer_cpu_offload, fraction 1.)
    cost_knobs={"megatron_recompute": (0, 2), "megatron_cpu_optimizer_permille": (0, 1000)},
    within_node=frozenset({"tp", "etp", "ref_tp", "ref_etp", "critic_tp", "critic_etp"}),
)


# The fully_async recipe's train_batch_size is not a key of its own: it is ppo_mini_batch_size x require_batches x
# trigger_parameter_sync_step (fsdp.py config_to_values), so fix does not move it, nor the mini batches it is made of.
RECIPE_BATCH = frozenset({"train_batch_size", "actor_mini", "critic_mini"})


def for_values(policy: RepairPolicy, values, version: str = "") -> RepairPolicy:
    """``policy`` as it applies to a config: the fully_async recipe's batch stays as its keys say; a config of a
    release with only the global micro keys (``versions.GLOBAL_MICRO_ONLY``) that names no per-GPU key keeps them:
    that verl's yaml has no per-GPU key (Hydra refuses one added), and where rollout.n scales the global keys
    (cost.py ``n_scale``) one added would only date the config after them, not shrink what it runs."""
    from dataclasses import replace

    from .cost import PER_GPU_MICRO_KEYS
    from .versions import GLOBAL_MICRO_ONLY

    if values is not None and int(values.get("async_mode") or 0) == 3:
        policy = replace(policy, rules=tuple(r for r in policy.rules if r not in RECIPE_BATCH))
    if values is not None and version in GLOBAL_MICRO_ONLY and not any(values.get(k) for k in PER_GPU_MICRO_KEYS):
        policy = replace(policy, rules=tuple(r for r in policy.rules if r not in PER_GPU_MICRO_KEYS))
    return policy

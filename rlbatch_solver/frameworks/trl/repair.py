"""What ``rlbatch fix`` may change in TRL 1.16.0 GRPO, and in which order.

The batch sizes first (the per-device batch, then gradient accumulation and the generation batch), then the
evaluation sizes and the colocated vLLM engine's tensor parallel size; switching vLLM off or to server mode
last. Process counts, num_generations and the model stay as the user has them. The fields are described in
``frameworks/repair_policies.py``.
"""

from __future__ import annotations

from ..repair_policies import RepairPolicy

_RANKS = {"removed_fields": 0, "gmu_permille": 1, "sleep_level": 4, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 3, "generation_batch_size": 3,
          "steps_per_generation": 3, "per_device_eval_batch_size": 4, "num_generations_eval": 4,
          "auto_find_batch_size": 1, "sync_ref_model": 1, "vllm_tp": 5, "server_tp": 6, "server_dp": 6,
          "vllm_server": 8, "use_vllm": 9}

TRL = RepairPolicy(
    rules=tuple(n for n in _RANKS if n not in ("gmu_permille", "sleep_level")), ranks=_RANKS, parallel=frozenset({"vllm_tp", "server_tp", "server_dp"}),
    algorithm=("num_generations",),
    hardware={"gpus_per_node": "per_node", "nnodes": "count", "cluster_num_gpus": "count"},
    grows_memory=frozenset({"per_device_train_batch_size", "gmu_permille"}),
    # vLLM's memory share and sleep mode (cost-model inputs; frameworks/trl/cost.py)
    cost_knobs={"gmu_permille": (300, 400, 500, 600, 700), "sleep_level": (0, 2)},
    # unset, steps_per_generation is gradient_accumulation_steps (trl/trainer/grpo_config.py:GRPOConfig.__post_init__):
    # setting it near that value changes the least of what TRL does
    anchors={"steps_per_generation": "gradient_accumulation_steps"},
)

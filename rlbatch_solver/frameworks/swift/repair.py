"""What ``rlbatch fix`` may change in ms-swift 4.6.0 (HF and Megatron paths), and in which order.

Adding a missing ``--vllm_mode colocate`` comes first; then the batch sizes, the generation
batch, the vLLM and parallel layout; switching vLLM off or to server mode last. GPU counts,
num_generations and the model stay as the user has them. The fields are described in
``frameworks/repair_policies.py``.
"""

from __future__ import annotations

from ..repair_policies import RepairPolicy

_COMMON = {"vllm_mode_given": 0, "generation_batch_size": 3, "steps_per_generation": 3, "num_generations_eval": 4,
           "vllm_tp": 5, "server_tp": 6, "server_dp": 6, "async_generate": 8, "vllm_server": 8, "use_vllm": 9}
_HF_RANKS = {**_COMMON, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 3,
             "per_device_eval_batch_size": 4, "sequence_parallel_size": 6, "padding_free": 7}
_MEGATRON_RANKS = {**_COMMON, "micro_batch_size": 2, "global_batch_size": 3, "tp": 6, "pp": 6, "cp": 7, "ep": 6,
                   "etp": 7, "vpp": 7, "first_pp_layers": 7, "last_pp_layers": 7, "num_iterations": 1,
                   "sync_ref_model": 1}
_PARALLEL = frozenset({"vllm_tp", "server_tp", "server_dp", "sequence_parallel_size", "tp", "pp", "cp", "ep", "etp",
                       "vpp"})


def _policy(ranks: dict[str, int]) -> RepairPolicy:
    return RepairPolicy(
        rules=tuple(ranks), ranks=ranks, parallel=_PARALLEL, algorithm=("num_generations",),
        hardware={"gpus_per_node": "per_node", "nnodes": "count", "cluster_num_gpus": "count"},
        grows_memory=frozenset({"gmu_permille", "per_device_train_batch_size", "micro_batch_size"}),
        within_node=frozenset({"tp", "etp"}))  # Megatron's tensor parallel


SWIFT_HF = _policy(_HF_RANKS)
SWIFT_MEGATRON = _policy(_MEGATRON_RANKS)

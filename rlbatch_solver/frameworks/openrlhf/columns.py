"""OpenRLHF's columns in the enumerate table (render.py): derived values, and short words for its flags."""

from __future__ import annotations

DERIVED = (("actor_dp", "actor dp"), ("grad_accum", "grad acc"), ("rollout_samples", "samples/rollout"),
           ("gpus_needed", "GPUs used"))

# native key words -> column words, longest first
WORDS = (
    ("tensor_parallel_size", "TP"), ("micro_batch_size", "micro"), ("batch_size", "batch"),
    ("num_gpus_per_node", "GPUs/node"), ("num_engines", "engines"), ("gpu_memory_utilization", "gpu mem"),
    ("ring_attn_size", "ring"), ("colocate_", "coloc "), ("_enable", ""), ("max_tokens_per_gpu", "tokens/gpu"),
)

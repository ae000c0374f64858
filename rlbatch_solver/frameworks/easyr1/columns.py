"""EasyR1's columns in the enumerate table (render.py): derived values (rules.py), and short words for its keys."""

from __future__ import annotations

# the GPUs, the update batch per GPU (EasyR1's global_batch_size_per_device) and its micro batches
DERIVED = (("N", "GPUs"), ("mini_per_gpu", "update/GPU"), ("grad_accum", "grad accum"))

# native key words -> column words, longest first
WORDS = (("micro_batch_size_per_device_for_experience", "exp micro"),
         ("micro_batch_size_per_device_for_update", "upd micro"), ("gpu_memory_utilization", "gmu"),
         ("tensor_parallel_size", "TP"), ("rollout_batch_size", "rollout batch"),
         ("global_batch_size", "global batch"), ("ulysses_size", "SP"))

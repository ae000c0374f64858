"""SkyRL's columns in the enumerate table (render.py): derived values (rules.py), and short words for its keys."""

from __future__ import annotations

# the policy's GPUs, the update batch per GPU (validate_batch_sizes' normalized mini batch) and its micro batches
DERIVED = (("N", "GPUs"), ("mini_per_gpu", "update/GPU"), ("grad_accum", "grad accum"))

# native key words -> column words, longest first
WORDS = (("inference_engine_tensor_parallel_size", "engine TP"), ("micro_forward_batch_size_per_gpu", "fwd micro"),
         ("micro_train_batch_size_per_gpu", "train micro"), ("policy_mini_batch_size", "policy mini"),
         ("num_inference_engines", "engines"), ("gpu_memory_utilization", "gmu"),
         ("n_samples_per_prompt", "n"), ("sequence_parallel_size", "SP"))

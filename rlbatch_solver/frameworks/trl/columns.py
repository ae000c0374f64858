"""TRL's columns in the enumerate table (render.py): derived values (rules.py), and short words for its keys."""

from __future__ import annotations

# the world size, the generation batch and the optimizer steps it feeds (rules.py: W, gen, spg)
DERIVED = (("W", "world"), ("gen", "generation batch"), ("spg", "steps/generation"))

# native key words -> column words, longest first
WORDS = (
    ("data_parallel_size", "DP"), ("vllm_tensor_parallel_size", "vLLM TP"), ("tensor_parallel_size", "TP"),
    ("per_device_train_batch_size", "batch/dev"), ("per_device_eval_batch_size", "eval batch/dev"),
    ("gradient_accumulation_steps", "grad acc steps"), ("generation_batch_size", "gen batch"),
    ("steps_per_generation", "steps/gen"), ("batch_size", "batch"),
)

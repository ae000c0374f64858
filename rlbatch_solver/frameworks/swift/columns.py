"""ms-swift's columns in the enumerate table (render.py): derived values, and short words for its keys."""

from __future__ import annotations

SWIFT_DERIVED = (("W", "world"), ("gen", "generation batch"), ("spg", "steps/generation"),
                 ("effective_ga", "grad acc"))
MEGATRON_DERIVED = (("dp", "dp"), ("num_microbatches", "grad acc"), ("gen", "generation batch"),
                    ("spg", "steps/generation"), ("rollout_prompts", "prompts/rollout"))

# native key words -> column words, longest first
SWIFT_WORDS = (
    ("data_parallel_size", "DP"), ("vllm_tensor_parallel_size", "vLLM TP"), ("sequence_parallel_size", "sp"),
    ("per_device_train_batch_size", "batch/dev"), ("per_device_eval_batch_size", "eval batch/dev"),
    ("gradient_accumulation_steps", "grad acc steps"), ("generation_batch_size", "gen batch"),
    ("steps_per_generation", "steps/gen"),
)
MEGATRON_WORDS = (
    ("virtual_pipeline_model_parallel_size", "VPP"), ("expert_tensor_parallel_size", "ETP"),
    ("expert_model_parallel_size", "EP"), ("tensor_model_parallel_size", "TP"),
    ("pipeline_model_parallel_size", "PP"), ("context_parallel_size", "CP"), ("data_parallel_size", "DP"),
    ("vllm_tensor_parallel_size", "vLLM TP"), ("generation_batch_size", "gen batch"),
    ("steps_per_generation", "steps/gen"), ("micro_batch_size", "micro"), ("global_batch_size", "global batch"),
)

"""slime's columns in the enumerate table (render.py): derived values (rules.py), and short words for its flags."""

from __future__ import annotations

# the actor's GPUs, its data-parallel size, the global batch and the optimizer steps of a rollout
DERIVED = (("W", "actor GPUs"), ("dp", "DP"), ("gbs", "global batch"), ("steps", "steps/rollout"))

# native key words -> column words, longest first
WORDS = (("rollout-num-gpus-per-engine", "GPUs/engine"), ("tensor-model-parallel-size", "TP"),
         ("pipeline-model-parallel-size", "PP"), ("context-parallel-size", "CP"),
         ("sglang-mem-fraction-static", "mem frac"), ("n-samples-per-prompt", "n"),
         ("rollout-batch-size", "rollout batch"), ("global-batch-size", "global batch"),
         ("micro-batch-size", "micro"), ("max-tokens-per-gpu", "tokens/GPU"))

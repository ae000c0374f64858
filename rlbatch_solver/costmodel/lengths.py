"""The response-length profile a step time assumes when the data's mean is not given (--mean-response-len).

A profile is chosen by the model's family where a source says how long that family answers in RL training; other
models take the default profile. Each profile states the mean response as a share of the limit; within a step
the lengths are exponential with that mean, capped at the limit (constants.RESPONSE_LENGTHS), and a synchronous
rollout waits for the step's longest response (``straggler_tokens``), which reaches the limit when the limit
truncates: generation time then follows the limit, not the mean (docs/cost-model.md section 4).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from .constants import DEFAULT_AVG_RESPONSE_FRACTION

EULER_GAMMA = 0.5772156649


@dataclass(frozen=True)
class LengthProfile:
    name: str
    response_fraction: float  # mean response / max_response_length
    why: str  # the source, in a few words (printed with the assumption)


DEFAULT = LengthProfile("default", DEFAULT_AVG_RESPONSE_FRACTION,
                        "the median of four published runs' mean/limit, docs/cost-model.md section 4")
# Reasoning models think before they answer and fill most of the limit. DeepScaleR (R1-Distill-Qwen-1.5B, GRPO at
# an 8K limit; Agentica's DeepScaleR blog, Feb 2025, "Iterative Context Lengthening"): the mean response fell from
# 5,500 to 3,500 tokens of 8,192 in that stage, 0.43-0.67 of the limit, with truncated responses common; we take
# the middle, 4,500 / 8,192 = 0.55. Qwen3 models think by default (Qwen3 model cards: enable_thinking=True is the
# chat template's default), so they take it too; a non-thinking variant (Instruct-2507) does not.
REASONING = LengthProfile("reasoning", 0.55,
                          "reasoning model: DeepScaleR's R1-Distill-1.5B answered 3,500-5,500 of 8,192 tokens")
REASONING_MODELS = re.compile(r"(r1-distill|qwq|deepscaler|^qwen3(?!.*instruct))", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def profile_for(model_name: str) -> LengthProfile:
    """The length profile of a model card's name (the default where no source says how its family answers)."""
    return REASONING if REASONING_MODELS.search(model_name or "") else DEFAULT


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + ... + 1/n: the expected largest of n unit exponentials (ln n + Euler's constant + 1/2n
    above a thousand, within 1e-7)."""
    n = max(1, int(n))
    if n <= 1000:
        return sum(1.0 / k for k in range(1, n + 1))
    return math.log(n) + EULER_GAMMA + 0.5 / n


def straggler_tokens(mean: float, cap: float, samples: int) -> float:
    """The expected longest of ``samples`` responses, exponential with capped mean ``mean``, at most ``cap``:
    lam x H_n, the expected largest of n exponentials (what a synchronous rollout waits for)."""
    from .time import length_scale

    lam = length_scale(mean, cap)
    if lam <= 0:
        return 0.0
    if math.isinf(lam):
        return float(cap)
    return min(float(cap), lam * harmonic(samples))

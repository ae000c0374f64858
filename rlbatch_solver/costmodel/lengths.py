"""The response-length profile a step time assumes when the data's mean is not given (--mean-response-len).

A profile says how long a model answers in RL training, from the published runs of docs/cost-model.md section 4
(the table "Mean response lengths in published RL runs"). Two kinds:

- a **share of the limit**: reasoning models think until the limit stops them, so their mean follows
  max_response_length (``reasoning``); so does the ``default`` profile, for a model and data no source covers;
- a **natural length** ``lam``: a non-reasoning model answers a task at its own length, which a larger limit does
  not lengthen. Within a step the lengths are exponential with scale ``lam``, capped at the limit
  (constants.RESPONSE_LENGTHS), so the mean is ``lam x (1 - e^(-limit/lam))``: short for GSM8K-style word
  problems (``gsm8k``), longer for competition math (``math``).

The profile is chosen by the user (``--response-profile NAME``), else by the model's family (a reasoning model
takes ``reasoning`` whatever its data), else by the training data the config names (``dataset_of``: verl's
``data.train_files``, OpenRLHF's ``--prompt_data``, TRL's ``dataset_name``, ms-swift's ``--dataset``), else
``default``. The mean prompt is the training data's where a source gives it (``data_prompt``: DAPO-Math-17k),
else the profile's (``gsm8k``), else DEFAULT_AVG_PROMPT_FRACTION of the limit, the published runs' share (the
``limit`` profile: at the limit). A
synchronous rollout waits for the step's longest response (``straggler_tokens``), which reaches the limit when the
limit truncates: generation time then follows the limit, not the mean. Where a source or a run's log states the
longest response the data reaches (under the limit), the law is capped there instead (``response_cap``), so the
straggler never exceeds it.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

from ..errors import InputError
from .constants import DEFAULT_AVG_PROMPT_FRACTION, DEFAULT_AVG_RESPONSE_FRACTION

EULER_GAMMA = 0.5772156649


@dataclass(frozen=True)
class LengthProfile:
    name: str
    why: str  # the source, in a few words (printed with the assumption)
    response_fraction: Optional[float] = None  # a share of the limit: mean response / max_response_length
    natural_tokens: Optional[float] = None  # a natural length: the uncapped mean (the exponential's scale)
    prompt_tokens: Optional[float] = None  # the data's mean prompt where a source gives it
    # else the mean prompt as a share of max_prompt_length (None: every prompt at the limit)
    prompt_fraction: Optional[float] = DEFAULT_AVG_PROMPT_FRACTION
    # a share that falls as the limit grows: response_fraction at reference_limit, times (limit/reference)^-exponent
    share_exponent: float = 0.0
    reference_limit: float = 8192.0
    # the longest of the profile's published runs, for the memory verdict at the data's lengths (``upper``): a
    # natural profile's largest natural length, a share profile's largest run over its line (None: no such bound,
    # the default and limit profiles)
    upper_natural: Optional[float] = None
    upper_share_ratio: Optional[float] = None
    # that longest run's own mean prompt where its source gives it (None: the profile's prompt_tokens)
    upper_prompt_tokens: Optional[float] = None

    def share(self, limit: float) -> float:
        """A share-of-the-limit profile's mean / limit at this limit (at most 1)."""
        f = max(0.0, self.response_fraction or 0.0)
        if self.share_exponent and limit > 0:
            f *= (limit / self.reference_limit) ** (-self.share_exponent)
        return min(1.0, f)

    def mean_response(self, limit: float) -> float:
        """The mean response (tokens) at this limit."""
        limit = max(0.0, float(limit))
        if self.natural_tokens is not None:
            lam = self.natural_tokens
            return lam * (1.0 - math.exp(-limit / lam)) if limit > 0 else 0.0
        return limit * self.share(limit)

    def fraction(self, limit: float) -> float:
        """The mean response as a share of the limit (what Plan.avg_response_fraction holds)."""
        return self.mean_response(limit) / limit if limit > 0 else 0.0

    def upper(self) -> Optional["LengthProfile"]:
        """The same law at the longest of the profile's published runs (the natural length or share of the run that
        answered longest), or None where the profile has no runs to bound it: what the memory verdict prices a
        packed micro batch at when it judges at the data's lengths (commands/check.py ``typical_peaks``), so that
        which of its sources the data resembles cannot turn a run that does not fit into one that does."""
        if self.natural_tokens is not None and self.upper_natural is not None:
            prompt = self.prompt_tokens
            if prompt is not None and self.upper_prompt_tokens is not None:
                prompt = max(prompt, self.upper_prompt_tokens)
            return replace(self, natural_tokens=max(self.natural_tokens, self.upper_natural), prompt_tokens=prompt)
        if self.response_fraction is not None and self.upper_share_ratio is not None:
            return replace(self, response_fraction=self.response_fraction * max(1.0, self.upper_share_ratio))
        return None

    def how(self) -> str:
        """The assumption in words: '0.35 of the limit' or 'a natural length of 1,500 tokens, capped at the limit'."""
        if self.natural_tokens is not None:
            return f"a natural length of {self.natural_tokens:,.0f} tokens, capped at the limit"
        if self.share_exponent:
            return (f"{self.response_fraction:g} of the limit at {self.reference_limit:,.0f} tokens x "
                    f"(limit/{self.reference_limit:,.0f})^-{self.share_exponent:g}")
        return f"{self.response_fraction:g} of the limit"


DEFAULT = LengthProfile("default", "no source for this model and data: the median of four published runs' "
                        "mean/limit, docs/cost-model.md section 4", response_fraction=DEFAULT_AVG_RESPONSE_FRACTION)
# Reasoning models think before they answer and fill much of the limit, a share that falls as the limit grows (a
# longer limit lets them think longer, but not in proportion). Four published runs (docs/cost-model.md section 4.2):
# DeepScaleR (R1-Distill-Qwen-1.5B, GRPO at an 8K limit; Agentica's DeepScaleR blog, Feb 2025, "Iterative Context
# Lengthening": 3,500-5,500 tokens of 8,192, the middle 4,500 = 0.55), verl #3816 (Qwen3-4B, DAPO recipe, ~7,000 of
# 20,480 = 0.34), verl #3727 (Qwen3-VL-30B-A3B, 11,018 of 30,000 = 0.37), verl docs/advance/v1_async_trainer.md
# (Qwen3.5-35B-A3B, 12,720 of 32,768 = 0.39). A least-squares line through their log share against log limit:
# 0.52 at 8,192 and exponent 0.28 (0.93 at 1K, 0.40 at 20K, 0.35 at 32K; the four within 1.2x). Qwen3 models think
# by default (Qwen3 model cards: enable_thinking=True is the chat template's default), so they take it too; a
# non-thinking variant (Instruct-2507) does not. Prompts: the default share of the limit. The run furthest above the
# line is v1_async_trainer's, 0.39 against the line's 0.3527 at 32,768 (1.106x; DeepScaleR 1.058x, #3727 1.023x,
# #3816 0.845x): the memory verdict's bound (LengthProfile.upper).
REASONING = LengthProfile("reasoning", "reasoning model: four published runs answered 0.55 of an 8K limit "
                          "(DeepScaleR) and 0.34-0.39 of 20-32K limits", response_fraction=0.52,
                          share_exponent=0.28, upper_share_ratio=1.106)
# GSM8K-style grade-school word problems, a non-reasoning model: the median natural length of seven published verl
# runs (exponential scale solving lam(1 - e^(-limit/lam)) = mean): verl #1208 325 of 1,024 tokens (342), verl's
# MI300 baseline logs with deepseek-llm-7b 170 of 1,024 (171) and 176 of 512 (189), verl PR #7804 with
# Qwen2.5-1.5B-Instruct 273 of 512 (359), and the PPO logs verl's docs/algo/baseline.md links
# (eric-haibin-lin/verl-data, branch experiments, gsm8k/: each run's median response_length/mean over its steps):
# Qwen2.5-0.5B-Instruct 276.5 of 512 (368) and 155.0 of 256 (232), gemma-2-2b-it 145.4 of 512 (150): 232. Their mean
# prompts: 103 (#1208), 83 (MI300), 104 (Qwen2.5-0.5B, both runs), 84 (gemma): 93 (docs/cost-model.md section 4.2).
# The longest of the seven, Qwen2.5-0.5B-Instruct's 368, bounds the memory verdict (LengthProfile.upper), with that
# run's own mean prompt, 103.6 (the verl-data log's prompt_length/mean), not the seven's median 93.
GSM8K = LengthProfile("gsm8k", "GSM8K-style word problems: seven published verl runs answered 145-325 tokens "
                      "at 256-1,024 limits", natural_tokens=232.0, prompt_tokens=93.0, upper_natural=368.0,
                      upper_prompt_tokens=103.6)
# Competition math (MATH, DAPO-Math-17k, DeepScaleR's AIME/AMC data) answered by a non-reasoning model: verl #3816,
# Qwen2.5-3B-Instruct on DAPO's recipe at a 20,480 limit, "~1000 tokens" mean; verl docs/perf/dpsk.md,
# DeepSeek-V3 on verl's math example, 1,960 of 9,632 (scale 1,975): the middle, 1,500. A larger limit does not
# lengthen them (Qwen3-4B on the same #3816 recipe, a reasoning model: ~7,000). DeepSeek-V3's 1,975 bounds the
# memory verdict (LengthProfile.upper).
MATH = LengthProfile("math", "competition math, non-reasoning model: verl #3816's Qwen2.5-3B answered ~1,000 "
                     "tokens at a 20K limit, DeepSeek-V3 1,960 at 9.6K", natural_tokens=1500.0,
                     upper_natural=1975.0)
# Every response runs to the limit: benchmarks that ignore the end-of-sequence token, the worst case.
LIMIT = LengthProfile("limit", "every response runs to the limit (the worst case)", response_fraction=1.0,
                      prompt_fraction=None)

PROFILES: dict[str, LengthProfile] = {p.name: p for p in (DEFAULT, REASONING, GSM8K, MATH, LIMIT)}


@dataclass(frozen=True)
class DataPrompt:
    """A training set's mean prompt (tokens, chat template included) where a source gives it: a property of the
    data, so it holds whichever response profile the model and task choose."""

    name: str
    pattern: re.Pattern
    tokens: float
    why: str  # the source, in a few words (printed with the assumption)


# DAPO-Math-17k (BytedTsinghua-SIA; verl's DAPO recipe and its fully_async / one_step_off / ISEEKYAN scripts train on
# it with max_prompt_length=2048): every prompt is one competition problem inside the same two-sentence answer-format
# instruction, so the mean sits far under the limit. verl docs/advance/v1_async_trainer.md (section Benchmark, both
# tables: Qwen3.5-35B-A3B, train_batch_size 64, DAPO-Math-17k, max_prompt_length 2048) gives per run the training
# time, the aggregate tokens/s (verl's throughput counts prompt and response tokens: trainer/ppo/metric_utils.py
# compute_throughout_metrics) and the mean response. Tokens per step / (64 prompts x 8 samples) - mean response:
# 156 (sync: 22.79 h / 150 steps x 12,053 tokens/s / 512 - 12,720), 154 (colocate_async), 157 (separate_async), 160
# (no-switch), 155 (switch). The doc does not state n; 8 is the only group size that puts every run's prompt between
# 0 and its 2,048 limit (16 gives negative prompts, 7 over 2,048). The median of the five: 156 tokens.
DAPO_MATH_PROMPT = DataPrompt("DAPO-Math-17k", re.compile(r"dapo[-_ ]?math", re.IGNORECASE), 156.0,
                              "DAPO-Math-17k's mean prompt: 154-160 tokens in five runs of verl's "
                              "v1_async_trainer benchmark, docs/cost-model.md section 4.2")
DATA_PROMPTS = (DAPO_MATH_PROMPT,)


def data_prompt(dataset: str) -> Optional[DataPrompt]:
    """The mean prompt of the training data the config names, where a source gives it (DATA_PROMPTS)."""
    for known in DATA_PROMPTS:
        if known.pattern.search(dataset or ""):
            return known
    return None

REASONING_MODELS = re.compile(r"(r1-distill|qwq|deepscaler|^qwen3(?!.*instruct))", re.IGNORECASE)
# the task in the data's name or path, GSM8K's before math's ("gsm8k_math" mixes: the shorter answers first)
TASKS = ((re.compile(r"gsm[-_]?8k", re.IGNORECASE), GSM8K),
         (re.compile(r"math|aime|amc|deepscaler|olympiad|numina|\borz\b|competition", re.IGNORECASE), MATH))
# The config keys that name the training data, per framework: verl and EasyR1 ``data.train_files``
# (verl/trainer/config/data/legacy_data.yaml; EasyR1 verl/trainer/config.py DataConfig), OpenRLHF ``--prompt_data``
# (0.8) and ``--data.prompt_dataset`` (0.11, openrlhf/cli/train_ppo_ray.py), TRL ``dataset_name``
# (trl/scripts/utils.py ScriptArguments), ms-swift ``--dataset`` (swift/llm/argument/base_args/data_args.py), slime
# ``--prompt-data`` (slime/utils/arguments.py add_data_arguments), SkyRL ``data.train_data``
# (skyrl_train/config/ppo_base_config.yaml).
DATASET_KEYS = ("data.train_files", "prompt_data", "data.prompt_dataset", "dataset_name", "dataset", "prompt-data",
                "data.train_data")


def dataset_of(config: Mapping[str, Any]) -> str:
    """The training data a framework's config names (its first key of DATASET_KEYS), as text ('' if none)."""
    for key in DATASET_KEYS:
        value = config.get(key)
        if value not in (None, "", [], ()):
            return " ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
    return ""


def named(name: Optional[str]) -> Optional[LengthProfile]:
    """The profile a user names (--response-profile), None for none; an unknown name is an input error."""
    if name is None or name == "":
        return None
    found = PROFILES.get(str(name).strip().lower())
    if found is None:
        raise InputError("--response-profile", f"{name!r} is not a length profile.",
                         f"use one of {', '.join(PROFILES)} (docs/cost-model.md section 4), or give the data's "
                         "mean with --mean-response-len.")
    return found


@functools.lru_cache(maxsize=512)
def profile_for(model_name: str, dataset: str = "", chosen: Optional[str] = None) -> LengthProfile:
    """The length profile: the one ``chosen`` by name, else a reasoning model's, else the task's of the data the
    config names, else the default."""
    if chosen:
        return named(chosen) or DEFAULT
    if REASONING_MODELS.search(model_name or ""):
        return REASONING
    for pattern, profile in TASKS:
        if pattern.search(dataset or ""):
            return profile
    return DEFAULT


def plan_profile(plan: Any) -> LengthProfile:
    """The profile of a cost-model Plan (its model, the data its config names, the profile its user named)."""
    return profile_for(plan.model.name, plan.dataset or "", plan.response_profile)


def plan_data_prompt(plan: Any) -> Optional[DataPrompt]:
    """The data's mean prompt that times a Plan's prompts (none under the ``limit`` profile: every prompt at the
    limit, the worst case)."""
    return data_prompt(plan.dataset or "") if plan_profile(plan).prompt_fraction is not None else None


def judged_response_fraction(plan: Any) -> Optional[float]:
    """The mean response over max_response_length a packed micro batch is judged at when the memory verdict reads
    the data's lengths (commands/check.py ``typical_peaks``), or None where it may not: the mean the plan holds where
    one was given (``--mean-response-len``, a calibration), else the profile's law at the longest of its published
    runs (``LengthProfile.upper``), following ``time._lengths``'s cap; None for a profile without runs to bound it
    (``default``: no source for this model and data; ``limit``: the maximum already)."""
    if plan.avg_response_fraction is not None:
        return plan.avg_response_fraction
    upper = plan_profile(plan).upper()
    r_max = float(max(0, plan.response_len))
    if upper is None or r_max <= 0:
        return None
    stated = plan.longest_response
    cap = float(stated) if stated is not None and 0 < stated < r_max else r_max
    return upper.fraction(cap) * cap / r_max


def judged_prompt_fraction(plan: Any) -> Optional[float]:
    """The mean prompt over max_prompt_length a packed micro batch is judged at, where it is not the plan's own (None):
    a profile's mean prompt, judged at the run its longest response came from (``LengthProfile.upper``), where no mean
    was given and the data has no published mean prompt of its own (``plan_data_prompt``)."""
    if plan.avg_prompt_fraction is not None or plan_data_prompt(plan) is not None or plan.prompt_len <= 0:
        return None
    upper = plan_profile(plan).upper()
    if upper is None or not upper.prompt_tokens:
        return None
    return min(1.0, upper.prompt_tokens / plan.prompt_len)


def judged_sources(plan: Any) -> Optional[tuple[str, str]]:
    """Where the prompt and the response lengths a packed micro batch is judged at come from, (prompt, response), or
    None where either has no source (the memory verdict then keeps the maximum lengths, docs/cost-model.md 11.1).
    Each is "given" (a mean the plan holds: ``--mean-prompt-len`` / ``--mean-response-len`` or a calibration), else
    for the prompt "data:<name>" (the data's published mean prompt, ``plan_data_prompt``) or "profile:<name>" (the
    profile's own mean prompt), for the response "profile:<name>" (the profile's law at the longest of its published
    runs, ``LengthProfile.upper``). A default share of the limit (the ``default`` profile) is no source."""
    profile = plan_profile(plan)
    if plan.avg_response_fraction is not None:
        response = "given"
    elif judged_response_fraction(plan) is not None:
        response = f"profile:{profile.name}"
    else:
        return None
    if plan.avg_prompt_fraction is not None:
        return "given", response
    data = plan_data_prompt(plan)
    if data is not None:
        return f"data:{data.name}", response
    if profile.prompt_tokens:
        return f"profile:{profile.name}", response
    return None


def chosen_by(plan: Any) -> str:
    """What chose the plan's profile, in words: 'named', 'the model', 'the data' or 'no source' (the default)."""
    if plan.response_profile:
        return "named"
    if REASONING_MODELS.search(plan.model.name or ""):
        return "the model"
    return "the data" if plan_profile(plan) is not DEFAULT else "no source"


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + ... + 1/n: the expected largest of n unit exponentials (ln n + Euler's constant + 1/2n
    above a thousand, within 1e-7)."""
    n = max(1, int(n))
    if n <= 1000:
        return sum(1.0 / k for k in range(1, n + 1))
    return math.log(n) + EULER_GAMMA + 0.5 / n


def response_cap(plan: Any, mean: float) -> float:
    """The cap of the length law a step is timed with: the response limit, or the longest response the data
    reaches where a source or a run's log states it (``Plan.longest_response``), whichever is smaller, and never
    under the mean. A synchronous rollout's straggler never runs past it (``straggler_tokens``), and where the law
    truncates the straggler is the cap itself."""
    limit = float(max(0, plan.response_len))
    stated = getattr(plan, "longest_response", None)
    if stated is None:
        return limit
    return max(float(mean), min(limit, float(stated)))


def straggler_factor(samples: float, group_size: int) -> float:
    """The expected longest of a synchronous step's ``samples`` responses over their mean (exponential lengths: the
    largest of n unit exponentials, H_n, where every response is drawn alone), where each prompt's group of
    ``group_size`` completions (Plan.group_size) shares its prompt's length: the step's g = samples / group_size
    prompts draw their lengths from the exponential law (its largest H_g), and a group's completions spread about
    their prompt's length by GROUP_LENGTH_SPREAD of an exponential (W = 1 - s + s x Exp(1), the largest of m
    1 + s (H_m - 1)): H_g x (1 + s (H_m - 1)); H_n for groups of one. Never above the longest of the g x m
    completions drawn independently, H(g m): a prompt's completions sharing its length can only bring their
    longest closer to the mean (the product law alone crosses it in large steps, 512 prompts x 16: 9.9 against
    9.6). Published TRL runs log each generation batch's mean and longest completion
    (trl/trainer/grpo_trainer.py ``_generate_and_score_completions``: ``completions/mean_length``,
    ``completions/max_length``): constants.GROUP_LENGTH_SPREAD's source."""
    from . import constants as C

    m = max(1, min(int(group_size), int(math.ceil(samples))))
    g = max(1, math.ceil(float(samples) / m - 1e-9))
    return min(harmonic(g * m), harmonic(g) * (1.0 + C.GROUP_LENGTH_SPREAD * (harmonic(m) - 1.0)))


def straggler_tokens(mean: float, cap: float, samples: int, group_size: int = 1) -> float:
    """The expected longest of ``samples`` responses, exponential with capped mean ``mean``, in prompts' groups of
    ``group_size``, at most ``cap``: lam x ``straggler_factor`` (what a synchronous rollout waits for)."""
    from .time import length_scale

    lam = length_scale(mean, cap)
    if lam <= 0:
        return 0.0
    if math.isinf(lam):
        return float(cap)
    return min(float(cap), lam * straggler_factor(samples, group_size))


def capped_moments(mean: float, cap: float) -> tuple[float, float]:
    """Mean and variance of one response under the length law (exponential with capped mean ``mean``, at most
    ``cap``): E[min(X, c)] = lam (1 - e^-c/lam), E[min(X, c)^2] = 2 lam^2 (1 - e^-c/lam (1 + c/lam))."""
    from .time import length_scale

    lam = length_scale(mean, cap)
    if lam <= 0:
        return 0.0, 0.0
    if math.isinf(lam):
        return float(cap), 0.0
    tail = math.exp(-cap / lam)
    first = lam * (1 - tail)
    second = 2 * lam * lam * (1 - tail * (1 + cap / lam))
    return first, max(0.0, second - first * first)


def live_sequence_tokens(prompt: float, mean: float, cap: float) -> float:
    """The KV tokens a live sequence holds on average while a vLLM engine decodes with sequences waiting: the
    prompt plus the expected age of a live response, ``E[L^2] / (2 E[L])`` under the length law (exponential with
    capped mean ``mean``, at most ``cap``; ``capped_moments``). vLLM allocates a sequence's KV blocks as its tokens
    come and admits a waiting request whenever the free blocks hold its prompt, preempting the newest when a
    running one finds none (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``; v1/core/kv_cache_manager.py
    ``KVCacheManager.allocate_slots``), so the cache stays full of sequences at every age. A response of length
    ``L`` holds ``prompt + t`` tokens at its ``t``-th step: ``prompt L + L^2/2`` token-steps over its life, for
    ``L`` tokens, so the cache makes ``KV E[L] / (prompt E[L] + E[L^2]/2)`` tokens a step, i.e. it runs
    ``KV / live_sequence_tokens`` sequences at once: ``prompt + cap/2`` when every response reaches the cap,
    ``prompt + lam`` for uncapped exponential lengths (a long response is live for long, so it weighs by its length)."""
    first, var = capped_moments(mean, cap)
    if first <= 0:
        return float(prompt)
    return float(prompt) + (var + first * first) / (2.0 * first)


def packed_sum_tokens(n: float, prompt: float, response: float, max_prompt: float, max_response: float,
                      z: float) -> float:
    """Tokens of ``n`` sequences packed into one micro batch at the ``z`` quantile of their sum: each prompt at the
    data's mean ``prompt`` (at most ``max_prompt``), the responses' sum at its ``z`` quantile under the length law
    with mean ``response`` capped at ``max_response`` (normal approximation of the sum), at most ``n`` x
    ``max_response`` (constants.PACKED_SUM_Z)."""
    n = max(1.0, float(n))
    mean, var = capped_moments(response, max_response)
    responses = min(n * max_response, n * mean + z * math.sqrt(n * var))
    return n * min(prompt, max_prompt) + responses

"""tokens/s counts the tokens a step trains on at the mean lengths its step time is priced at, for every framework:
tokens/s x step time = samples x (mean prompt + mean response). (It used to count every sample at max prompt + max
response: ~15x the tokens of the long-response runs, e.g. 902,786 tokens/s for verl's fully-async DAPO script.)"""

import pytest

import rlbatch_solver as rb
from rlbatch_solver.frameworks import FRAMEWORKS
from rlbatch_solver.render import throughput_text
from rlbatch_solver.scenario import Scenario

# one scenario each that has an answer; slime's default batch needs the larger model's GPUs
BASE = dict(gpu="h100", gpus=8, model="qwen2.5-1.5b", algorithm="grpo", n=4, prompt_length=512, response_length=1024)
SLIME = dict(gpu="h100", gpus=8, model="qwen3-4b", prompt_length=1024, response_length=4096)
CASES = [(fw, {}) for fw in FRAMEWORKS] + [
    ("verl", {"placement": "split"}),  # asynchronous: the step is the slower pool's stage
    ("trl==0.14.0", {}),  # the per-device batch counts prompts: samples are completions
]


def _scenario(fw: str, **kw) -> Scenario:
    base = SLIME if fw == "slime" else BASE
    return Scenario(framework=fw, **{**base, **kw})


@pytest.mark.parametrize("fw,extra", CASES, ids=[f"{fw}{'-' + '-'.join(e.values()) if e else ''}" for fw, e in CASES])
def test_tokens_per_s_times_step_time_is_samples_times_the_given_mean_lengths(fw, extra):
    rep = rb.recommend(_scenario(fw, mean_prompt_length=300, mean_response_length=700, **extra), top=1,
                       time_limit_s=20)
    best = rep.best
    assert best is not None, rep.status
    assert best.samples > 0 and best.step_time_s > 0
    assert best.tokens_per_s * best.step_time_s == pytest.approx(best.samples * (300 + 700), rel=1e-9)
    if extra.get("placement") == "split":
        assert best.stages  # the pipelined step, not the sum of the phases


@pytest.mark.parametrize("fw", ["verl", "openrlhf", "swift", "trl"])
def test_assumed_mean_lengths_are_the_ones_counted_and_printed(fw):
    """Without given means the length profile sets them: the tokens counted are the ones --verbose prints (the
    report's mean_lengths, rounded to 0.1 token), well under the limits."""
    rep = rb.recommend(_scenario(fw), top=1, time_limit_s=20)
    best, lengths = rep.best, rep.lengths
    per_sample = best.tokens_per_s * best.step_time_s / best.samples
    assert per_sample == pytest.approx(lengths["prompt"] + lengths["response"], abs=0.1)
    assert per_sample < 0.8 * (lengths["max_prompt"] + lengths["max_response"])
    line = throughput_text(best.tokens_per_s, best.samples, best.step_time_s, lengths)
    assert (f"{best.tokens_per_s:,.0f} tokens/s at the mean lengths priced: {best.samples:,} samples x "
            f"(prompt {lengths['prompt']:,.0f} + response {lengths['response']:,.0f})") in line


def test_tokens_per_step_has_one_definition():
    """The plan-level time report counted a step's tokens too (samples_per_step x its own lengths), beside
    tables.tokens_per_step: one definition now, read by recommend for the answer and for the user's own config."""
    import inspect

    from rlbatch_solver.commands import recommend
    from rlbatch_solver.costmodel.time import TimeReport

    assert not any(hasattr(TimeReport, name) for name in ("tokens_per_s", "tokens_per_step"))
    source = inspect.getsource(recommend)
    assert source.count("tokens_per_step(spec, ") == 2 and "def _tokens_per_step" not in source

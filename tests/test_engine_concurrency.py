"""How many sequences a rollout engine decodes at once (costmodel/time.py ``engine_kv_concurrency``): vLLM holds each
live sequence's prompt plus its age so far (``lengths.live_sequence_tokens``), checked against a small simulation
of its block policy; SGLang the whole mean length; the step's caps bound it."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from rlbatch_solver.costmodel.lengths import live_sequence_tokens, response_cap
from rlbatch_solver.costmodel.memory import estimate_memory
from rlbatch_solver.costmodel.time import _lengths, engine_kv_concurrency, estimate_time, length_scale
from test_costmodel import make_plan


def _block_policy_tokens_per_step(kv_blocks: int, block: int, prompt: int, mean: float, cap: int, n: int) -> float:
    """Decode tokens a step while requests wait, for an engine that grows each running sequence one block at a time,
    preempts the newest running sequence when no block is free (it waits again at the front, its tokens kept), and
    admits waiting sequences in order while the free blocks hold their tokens, none in a step that preempted (the
    policy of vLLM's scheduler, written out here as a test oracle)."""
    rng = random.Random(7)
    lam = length_scale(mean, cap)
    lens = [cap if math.isinf(lam) else max(1, min(cap, int(rng.expovariate(1 / lam)) + 1)) for _ in range(n)]
    waiting, out, held = list(range(n))[::-1], [0] * n, {}
    running: list[int] = []
    free, tokens, steps = kv_blocks, 0, 0
    while waiting:
        preempted, i = False, 0
        while i < len(running):
            q = running[i]
            need = math.ceil((prompt + out[q] + 1) / block) - held[q]
            while need > free:
                v = running.pop()
                free += held.pop(v)
                waiting.append(v)
                preempted = True
                if v == q:
                    break
            if q not in held:
                break
            free -= need
            held[q] += need
            i += 1
        while not preempted and waiting and math.ceil((prompt + out[waiting[-1]]) / block) <= free:
            q = waiting.pop()
            held[q] = math.ceil((prompt + out[q]) / block)
            free -= held[q]
            running.append(q)
        for q in list(running):
            out[q] += 1
            tokens += 1
            if out[q] >= lens[q]:
                running.remove(q)
                free += held.pop(q)
        steps += 1
    return tokens / steps


@pytest.mark.parametrize("prompt,mean,cap", [(100, 300, 1000), (100, 990, 1000), (200, 1000, 1000), (100, 200, 4000)])
def test_a_live_sequence_holds_its_prompt_and_its_age_as_the_block_policy_does(prompt, mean, cap):
    kv_blocks, block = 2000, 16
    simulated = _block_policy_tokens_per_step(kv_blocks, block, prompt, mean, cap, 3000)
    assert kv_blocks * block / live_sequence_tokens(prompt, mean, cap) == pytest.approx(simulated, rel=0.05)


def test_responses_at_the_cap_hold_half_of_it_and_uncapped_exponentials_their_mean():
    assert live_sequence_tokens(300, 2000, 2000) == pytest.approx(300 + 1000)
    assert live_sequence_tokens(300, 500, 1e6) == pytest.approx(300 + 500, rel=1e-6)
    # the default share of the limit: the capped law holds less than the whole mean response
    assert 300 + 0.35 * 2000 / 2 < live_sequence_tokens(300, 0.35 * 2000, 2000) < 300 + 0.35 * 2000


def test_vllm_runs_more_sequences_than_the_whole_length_reserves_and_sglang_does_not():
    vllm, sglang = make_plan(engine="vllm"), make_plan(engine="sglang")
    assert engine_kv_concurrency(vllm, 100_000, 400, 1000, 1000) == 100_000 // 900
    assert engine_kv_concurrency(sglang, 100_000, 400, 1000, 1000) == 100_000 // 1400


def test_the_engine_runs_at_most_max_num_seqs_and_max_num_batched_tokens_sequences():
    base = make_plan(samples_per_step=4096, gpu_memory_utilization=0.9)
    free = estimate_time(base).decode_concurrency
    kv = estimate_memory(base).kv_cache_tokens
    p, r, _ = _lengths(base)
    assert free < 1024 and free == int(kv // live_sequence_tokens(p, r, response_cap(base, r)))
    assert estimate_time(dataclasses.replace(base, max_num_seqs=16)).decode_concurrency == 16
    assert estimate_time(dataclasses.replace(base, max_num_batched_tokens=24)).decode_concurrency == 24

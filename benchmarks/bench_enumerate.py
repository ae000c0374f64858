"""Enumeration: CP-SAT against a brute-force nested loop with the same checker.

    python benchmarks/bench_enumerate.py [--max-raw 1e9] [--full-brute-limit 3e6]

For each search space (1.6*10^4 .. 1.1*10^9 raw combinations of the verl rule
variables, 8 GPUs) it prints the raw size, the number of valid configs, the
CP-SAT enumeration time and the brute-force time, and their ratio.

Brute force runs completely up to ``--full-brute-limit`` raw combinations and
the two result sets are asserted equal. Above that it checks a uniform random
sample of 100,000 combinations (asserting that the checker's verdict on each is
CP-SAT's), and its full time is the measured per-check time multiplied by the
raw size (marked "est."): the loop is the same, only not run to the end. Both sides use the same compiled checker
(``RuleSet.check``), in this process, on this machine.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlbatch_solver.frameworks.verl.rules import RULESET, VARIABLES  # noqa: E402
from rlbatch_solver.solver.model import enumerate_solutions  # noqa: E402

BASE = {name: [spec.default] for name, spec in VARIABLES.items() if spec.default is not None or spec.optional}
BASE.update({
    "need_critic": [False], "need_ref": [True], "group_estimator": [True], "num_heads": [28], "num_kv_heads": [4],
    "max_position_embeddings": [32768], "max_prompt_length": [1024], "max_response_length": [2048],
    "gpus_per_node": [8], "n": [8], "actor_mini": [32], "train_batch_size": [64], "actor_micro_per_gpu": [4],
    "logprob_micro_per_gpu": [8], "ref_micro_per_gpu": [8],
})


def rng(k: int) -> list[int]:
    return list(range(1, k + 1))


# (label, domains that replace BASE's): batch sizes over all integers, parallel sizes over 1..8
SPACES = [
    ("batch", {"train_batch_size": rng(32), "actor_mini": rng(32), "actor_micro_per_gpu": rng(16)}),
    ("batch+tp", {"train_batch_size": rng(32), "actor_mini": rng(32), "actor_micro_per_gpu": rng(16),
                  "rollout_tp": rng(8)}),
    ("batch+tp+sp", {"train_batch_size": rng(64), "actor_mini": rng(64), "actor_micro_per_gpu": rng(16),
                     "rollout_tp": rng(8), "actor_sp": rng(4)}),
    ("+logprob", {"train_batch_size": rng(64), "actor_mini": rng(64), "actor_micro_per_gpu": rng(16),
                  "logprob_micro_per_gpu": rng(16), "rollout_tp": rng(8), "actor_sp": rng(8)}),
    ("+ref", {"train_batch_size": rng(64), "actor_mini": rng(64), "actor_micro_per_gpu": rng(16),
              "logprob_micro_per_gpu": rng(16), "ref_micro_per_gpu": rng(8), "rollout_tp": rng(8),
              "actor_sp": rng(8)}),
    # wide ranges, as a user who does not know the rules would give them; n=5 makes most batch
    # sizes invalid (B*5 and mini*5 must split over 8 GPUs), so the valid set stays enumerable
    ("wide ranges, n=5", {"n": [5], "train_batch_size": rng(256), "actor_mini": rng(256),
                          "actor_micro_per_gpu": rng(16), "logprob_micro_per_gpu": rng(16), "rollout_tp": rng(8),
                          "actor_sp": rng(8)}),
]


def raw_size(domains: dict) -> int:
    size = 1
    for v in domains.values():
        size *= len(v)
    return size


def brute_full(domains: dict) -> tuple[set, float]:
    names = list(domains)
    start = time.perf_counter()
    found = set()
    for combo in itertools.product(*(domains[n] for n in names)):
        if RULESET.check(dict(zip(names, combo))).valid:
            found.add(combo)
    return found, time.perf_counter() - start


def brute_rate(domains: dict, samples: int, solver_set: set, seed: int = 0) -> float:
    """Seconds per checked combination, on a uniform sample of the space; asserts that the
    checker's verdict on every sampled combination is CP-SAT's (in its set or not)."""
    r = random.Random(seed)
    names = list(domains)
    combos = [tuple(r.choice(domains[n]) for n in names) for _ in range(samples)]
    start = time.perf_counter()
    verdicts = [RULESET.check(dict(zip(names, combo))).valid for combo in combos]
    per = (time.perf_counter() - start) / samples
    for combo, valid in zip(combos, verdicts):
        assert valid == (combo in solver_set), f"CP-SAT and the checker disagree on {dict(zip(names, combo))}"
    return per


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-raw", type=float, default=2e9)
    ap.add_argument("--full-brute-limit", type=float, default=3e6)
    ap.add_argument("--samples", type=int, default=100_000)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(f"{'space':18} {'raw':>9} {'valid':>9} {'cp-sat s':>9} {'brute s':>12} {'ratio':>8}  same set")
    for label, extra in SPACES:
        domains = dict(BASE)
        domains.update(extra)
        raw = raw_size(domains)
        if raw > args.max_raw:
            continue
        start = time.perf_counter()
        res = enumerate_solutions(RULESET, domains, time_limit_s=3600)
        cp_time = time.perf_counter() - start
        assert res.complete, res.status
        names = list(domains)
        if raw <= args.full_brute_limit:
            found, bf_time = brute_full(domains)
            same = found == {tuple(s[n] for n in names) for s in res.solutions}
            assert same, "CP-SAT and brute force disagree"
            bf_text, same_text = f"{bf_time:.2f}", "yes (asserted)"
        else:
            solver_set = {tuple(s[n] for n in names) for s in res.solutions}
            bf_time = brute_rate(domains, args.samples, solver_set) * raw
            bf_text, same_text = f"{bf_time:.0f} est.", f"on a {args.samples:,} sample (asserted)"
        print(f"{label:18} {raw:9.1e} {len(res.solutions):9d} {cp_time:9.2f} {bf_text:>12} "
              f"{bf_time / cp_time:7.0f}x  {same_text}", flush=True)


if __name__ == "__main__":
    main()

"""fix on broken real configs: seconds per repair (p50/p95) and repair size against the known break.

    python benchmarks/bench_fix.py [--two-key 40] [--baseline 30] [--time-limit 10]

The broken configs are the frameworks' published working configs (tests/data, with their sources)
with one or two batch or layout values multiplied by 3 (or 5, 7): the published value is a divisor
of the broken one, so a repair of at most the break's size always exists, and a repair larger than
the break is a defect. Breaks that leave the config valid are skipped. Each broken config is fixed
by rules alone and, where the source names the GPU and we have the model card (and the published
config is predicted to fit), with the memory model too (``--gpu``/``--model``).

Timings are in this process (``api.fix``: parsing, model card, search, conflict and relaxations;
the command line adds its start-up, measured once at the end). The baseline, in the same process
on a sample of the same breaks, is CP-SAT alone (``solver/repair.py`` over the same domains, memory
as lazy cuts): the ratio is its median over the median of ``fix``.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import rlbatch_solver as rb  # noqa: E402
from rlbatch_solver import api  # noqa: E402
from published import breaks, gpu_of, published_configs  # noqa: E402

_gpu = gpu_of


def cases(two_key: int, seed: int = 0):
    """(break, memory?) pairs: every one-key break that breaks a rule (or the fit), and a sample of two-key ones."""
    out = []
    rng = random.Random(seed)
    for cfg in published_configs():
        base = rb.check(cfg.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model)
        if not base.valid:
            continue  # recorded as published but invalid on purpose (tests/data says why)
        gpu = _gpu(cfg)
        memory = bool(gpu and cfg.model)
        if memory:
            fit = rb.check(cfg.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu=gpu,
                           length_fraction=cfg.length_fraction)
            memory = fit.valid
        pairs = list(breaks(cfg, 2))
        rng.shuffle(pairs)
        for size, candidates in ((1, breaks(cfg, 1)), (2, pairs)):
            seen: set[str] = set()
            for br in candidates:
                key = ",".join(sorted(br.changed))
                if key in seen:
                    continue
                if rb.check(br.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model).valid:
                    continue
                seen.add(key)
                out.append((br, False, None))
                if memory:
                    out.append((br, True, gpu))
    ones = [c for c in out if c[0].size == 1]
    twos = [c for c in out if c[0].size == 2]
    rng.shuffle(twos)
    return ones + twos[:two_key]


def run_fix(br, memory: bool, gpu: str | None, time_limit: float):
    cfg = br.config
    t = time.perf_counter()
    r = api.fix(br.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu=gpu if memory else None,
                time_limit_s=time_limit, length_fraction=cfg.length_fraction if memory else 1.0)
    return time.perf_counter() - t, r


def run_baseline(br, memory: bool, gpu: str | None, time_limit: float) -> float:
    """CP-SAT alone over the same domains (no direct search), same cost, memory as lazy cuts."""
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.tables import build_cost_terms, with_length_fraction
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.frameworks.repair_policies import policy_for, references, repair_domains
    from rlbatch_solver.solver.repair import repair

    cfg = br.config
    t = time.perf_counter()
    fw = get_framework(cfg.framework)
    flat, _ = api.read_config(fw, br.args())
    card = load_model(cfg.model) if cfg.model else None
    values = fw.to_values(flat, gpus=cfg.gpus, model=card)
    policy = policy_for(fw.name, fw.ruleset, values)
    total, seq = fw.hardware(values)
    domains = repair_domains(fw.ruleset, policy, dict(values), keep=set(), memory=memory, total_gpus=total,
                             seq_len=seq)
    ruleset = fw.ruleset
    if memory:
        spec = with_length_fraction(fw.cost_spec(card, load_gpu(gpu)), cfg.length_fraction)
        terms = build_cost_terms(spec, domains, time=False)
        ruleset = ruleset.extended(terms.rules, terms.derived)
    repair(ruleset, domains, values, ranks=policy.ranks, references=references(policy, dict(values)),
           time_limit_s=time_limit, grows=policy.grows_memory)
    return time.perf_counter() - t


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--two-key", type=int, default=40, help="two-key breaks to sample")
    ap.add_argument("--baseline", type=int, default=30, help="breaks to run the CP-SAT-only baseline on")
    ap.add_argument("--time-limit", type=float, default=10.0)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    todo = cases(args.two_key)
    rows = []
    for br, memory, gpu in todo:
        wall, r = run_fix(br, memory, gpu, args.time_limit)
        rows.append((br, memory, wall, r))
    by: dict[tuple[str, bool], list] = defaultdict(list)
    for row in rows:
        by[(row[0].config.framework, row[1])].append(row)
    print(f"\n{len(rows)} broken real configs ({sum(1 for r in rows if r[0].size == 1)} one-key, "
          f"{sum(1 for r in rows if r[0].size == 2)} two-key breaks)\n")
    head = f"{'framework':15s} {'memory':6s} {'n':>4s} {'p50 s':>7s} {'p95 s':>7s} {'max s':>7s} " \
           f"{'proven':>7s} {'<=break':>8s} {'=break':>7s} {'none':>5s}"
    print(head)
    print("-" * len(head))
    for (fwname, memory), rs in sorted(by.items()):
        walls = [r[2] for r in rs]
        proven = sum(1 for r in rs if r[3].proven)
        le = sum(1 for r in rs if r[3].after is not None and len(r[3].native_changes) <= r[0].size)
        eq = sum(1 for r in rs if r[3].after is not None and len(r[3].native_changes) == r[0].size)
        none = sum(1 for r in rs if r[3].after is None)
        print(f"{fwname:15s} {'yes' if memory else 'no':6s} {len(rs):4d} {pct(walls, .5):7.2f} {pct(walls, .95):7.2f} "
              f"{max(walls):7.2f} {proven:7d} {le:8d} {eq:7d} {none:5d}")
    walls = [r[2] for r in rows]
    print(f"{'all':15s} {'':6s} {len(rows):4d} {pct(walls, .5):7.2f} {pct(walls, .95):7.2f} {max(walls):7.2f}")
    worse = [r for r in rows if r[3].after is None or len(r[3].native_changes) > r[0].size]
    for br, memory, wall, r in worse:
        print(f"  larger than the break or none: {br.label} (memory {memory}): {r.status}, "
              f"{len(r.native_changes)} change(s)")
    # baseline: CP-SAT alone, same process, a sample of the same breaks
    rng = random.Random(1)
    sample = rng.sample(rows, min(args.baseline, len(rows)))
    base, ours = [], []
    for br, memory, wall, _ in sample:
        gpu = _gpu(br.config) if memory else None
        base.append(run_baseline(br, memory, gpu, args.time_limit))
        ours.append(run_fix(br, memory, gpu, args.time_limit)[0])
    print(f"\nbaseline (CP-SAT alone, same domains and cost) on {len(sample)} of them: median "
          f"{statistics.median(base):.2f} s, p95 {pct(base, .95):.2f} s; fix median {statistics.median(ours):.2f} s; "
          f"ratio {statistics.median(base) / statistics.median(ours):.1f}x")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rlbatch_solver.cli", "fix", "--gpus", "4", "--",
                    "data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
                    "actor_rollout_ref.actor.ppo_mini_batch_size=32",
                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24"], capture_output=True, cwd=ROOT)
    print(f"command line, end to end (process start included), the seed's FAQ config: "
          f"{time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()

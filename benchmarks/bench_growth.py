"""Growth: how solve time grows with the number of free variables and their domain sizes.

    python benchmarks/bench_growth.py [--plot docs/img/growth.png]

Scenario: verl GRPO, Qwen2.5-7B on 8x H100, prompt 1024, response 2048, n 8.
Two series, each point solved by ``recommend``'s CP-SAT model (best config by
time per sample that fits in memory, proven) and by ``enumerate``'s (every
config that passes the rules; its count is the "valid" column):

* free variables: 1..8 searched keys (in the order below), each over 16 values
  (8 for the rollout share, 4 for parallel sizes);
* domain size: the four batch keys searched, each over 4..128 values.

Every other key is fixed. Prints raw size, valid configs, and seconds; with
``--plot`` (needs ``pip install ".[plot]"``) draws both series.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlbatch_solver.api import prepare  # noqa: E402
from rlbatch_solver.scenario import Scenario  # noqa: E402
from rlbatch_solver.solver.model import enumerate_solutions  # noqa: E402
from rlbatch_solver.solver.optimize import optimize  # noqa: E402

AR = "actor_rollout_ref"
FIXED = {  # every key not searched takes the value of a usual launch script
    "data.train_batch_size": 256, f"{AR}.actor.ppo_mini_batch_size": 64,
    f"{AR}.actor.ppo_micro_batch_size_per_gpu": 4, f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": 8,
    f"{AR}.rollout.tensor_model_parallel_size": 2, f"{AR}.actor.ulysses_sequence_parallel_size": 1,
    f"{AR}.rollout.gpu_memory_utilization": 0.6, f"{AR}.model.enable_gradient_checkpointing": True,
    f"{AR}.actor.fsdp_config.param_offload": False, f"{AR}.actor.fsdp_config.optimizer_offload": False,
}


def values(key: str, size: int) -> list:
    """``size`` values of a key (parallel sizes and switches have fewer)."""
    if key == "data.train_batch_size":
        return [16 * i for i in range(1, size + 1)]
    if key == f"{AR}.actor.ppo_mini_batch_size":
        return [4 * i for i in range(1, size + 1)]
    if key in (f"{AR}.actor.ppo_micro_batch_size_per_gpu", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu"):
        return list(range(1, size + 1))
    if key == f"{AR}.rollout.gpu_memory_utilization":
        return [round(0.3 + 0.075 * i, 3) for i in range(min(size, 8))]
    if key in (f"{AR}.rollout.tensor_model_parallel_size", f"{AR}.actor.ulysses_sequence_parallel_size"):
        return [1, 2, 4, 8]
    return [False, True]


ORDER = list(FIXED)[:8]  # batch keys, then parallel sizes, rollout share, checkpointing
BATCH_KEYS = ORDER[:4]


def scenario(search_keys: list[str], size: int) -> Scenario:
    return Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                    prompt_length=1024, response_length=2048,
                    fixed={k: v for k, v in FIXED.items() if k not in search_keys},
                    search={k: values(k, size) for k in search_keys})


def measure(sc: Scenario) -> dict:
    fw, card, gpu, space, spec, terms, ruleset = prepare(sc, with_knobs=False)
    start = time.perf_counter()
    res = optimize(ruleset, space.domains, terms.time_us_per_sample, top=1, time_limit_s=120)
    opt_s = time.perf_counter() - start
    start = time.perf_counter()  # what `rlbatch enumerate` solves: the rules, without the cost model
    en = enumerate_solutions(fw.ruleset.extended(space.extra_rules), space.domains, time_limit_s=120)
    enum_s = time.perf_counter() - start
    return {"raw": space.raw_size, "valid": len(en.solutions), "complete": en.complete, "opt_s": opt_s,
            "enum_s": enum_s, "proven": res.proven}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plot", default=None, help="write a PNG of both series")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    series: dict[str, list[tuple[int, dict]]] = {"free variables": [], "domain size": []}
    print(f"\n{'free vars':>9} {'raw':>9} {'valid':>8} {'optimize s':>10} {'proven':>6} {'enumerate s':>11} complete")
    for k in range(1, len(ORDER) + 1):
        m = measure(scenario(ORDER[:k], 16))
        series["free variables"].append((k, m))
        print(f"{k:9d} {m['raw']:9.1e} {m['valid']:8d} {m['opt_s']:10.3f} {str(m['proven']):>6} {m['enum_s']:11.3f} "
              f"{m['complete']}", flush=True)
    print(f"\n{'domain':>9} {'raw':>9} {'valid':>8} {'optimize s':>10} {'proven':>6} {'enumerate s':>11} complete "
          f"(4 batch keys searched)")
    for size in (4, 8, 16, 32, 64, 128):
        m = measure(scenario(BATCH_KEYS, size))
        series["domain size"].append((size, m))
        print(f"{size:9d} {m['raw']:9.1e} {m['valid']:8d} {m['opt_s']:10.3f} {str(m['proven']):>6} "
              f"{m['enum_s']:11.3f} {m['complete']}", flush=True)
    if args.plot:
        plot(series, Path(args.plot))
        print(f"\nplot: {args.plot}")


def plot(series: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (name, points) in zip(axes, series.items()):
        xs = [x for x, _ in points]
        ax.plot(xs, [m["opt_s"] for _, m in points], "o-", label="best config (proven)")
        ax.plot(xs, [m["enum_s"] for _, m in points], "s-", label="enumerate every valid config")
        cut = [(x, m["enum_s"]) for x, m in points if not m["complete"]]
        if cut:
            ax.plot([x for x, _ in cut], [y for _, y in cut], "x", color="red", markersize=10,
                    label="enumeration cut at the 120 s limit")
        ax.set_yscale("log")
        ax2 = ax.twinx()
        ax2.plot(xs, [m["raw"] for _, m in points], ":", color="grey", label="raw combinations")
        ax2.set_yscale("log")
        ax2.set_ylabel("raw combinations (dotted)")
        ax.set_xlabel(name + (" (4 batch keys)" if name == "domain size" else " (16 values each)"))
        if name == "domain size":
            ax.set_xscale("log", base=2)
        ax.set_ylabel("seconds (log)")
        ax.legend(loc="upper left", fontsize=7)
        ax.set_title(f"solve time vs {name}")
    fig.suptitle("verl GRPO, Qwen2.5-7B, 8x H100: CP-SAT time as the search space grows")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()

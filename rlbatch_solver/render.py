"""Human-readable output (rich tables). JSON output lives in the CLI."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from .rules.base import STAGE_TEXT, Stage


def print_check(console: Console, report: Any) -> None:
    head = f"{report.framework} {report.version} rules"
    if report.valid:
        console.print(f"[bold green]VALID[/] — passes every {head}.")
    else:
        console.print(f"[bold red]INVALID[/] — breaks {len(report.violations)} of the {head}:")
    for v in report.violations:
        color = "red" if v.severity.value == "error" else "yellow"
        console.print(f"\n[{color}]{v.severity.value.upper()}[/] [bold]{v.rule}[/]")
        console.print(f"  {v.message}")
        console.print(f"  fails: {STAGE_TEXT[Stage(v.stage)]}")
        console.print(f"  source: {v.source}")
    if getattr(report, "memory", None) is not None:
        print_memory_check(console, report.memory)
    for note in report.notes:
        console.print(f"\nnote: {note}")
    if report.ignored:
        shown = " ".join(report.ignored[:6]) + (" ..." if len(report.ignored) > 6 else "")
        console.print(f"note: ignored {len(report.ignored)} tokens that are not key=value: {shown}")


def print_memory_check(console: Console, mem: Any) -> None:
    table = Table(title=f"predicted memory per GPU on {mem.gpu} ({mem.model}): "
                        f"{mem.capacity_mib / 1024:.1f} GiB usable of {mem.total_mib / 1024:.1f} GiB")
    for col in ("phase", "peak GiB", "fits", "largest terms (GiB)"):
        table.add_column(col)
    for phase, peak in mem.peaks.items():
        ok = peak <= mem.capacity_mib
        terms = ", ".join(f"{t} {v / 1024:.1f}" for t, v in mem.largest_terms(phase))
        table.add_row(PHASE_TITLE.get(phase, phase), f"{peak / 1024:.1f}",
                      "[green]yes[/]" if ok else f"[red]no, {(peak - mem.capacity_mib) / 1024:.1f} over[/]", terms)
    console.print()
    console.print(table)


ENUM_COLUMNS = [
    ("train_batch_size", "train"),
    ("actor_mini", "mini"),
    ("actor_micro_per_gpu", "micro/gpu"),
    ("grad_accum", "grad acc"),
    ("logprob_micro_per_gpu", "logprob micro"),
    ("ref_micro_per_gpu", "ref micro"),
    ("actor_sp", "ulysses sp"),
    ("rollout_tp", "rollout TP"),
    ("rollout_replicas", "rollout DP"),
]


def solution_columns(sol: dict[str, Any], ruleset) -> dict[str, Any]:
    env = ruleset.full_env(sol)
    row = {name: env.get(name) for name, _ in ENUM_COLUMNS}
    if "N" in env and "rollout_ws" in env:
        row["rollout_replicas"] = env["N"] // max(1, env["rollout_ws"])
    return row


def print_enumerate(console: Console, report: Any, scenario: Any, show: int) -> None:
    from .frameworks import get_framework

    fw = get_framework(report.framework)
    done = "complete" if report.complete else f"incomplete ({report.status})"
    console.print(
        f"{report.count} valid configs for {fw.name} {fw.version} on {scenario.total_gpus} GPUs "
        f"({done}; {report.raw_size:,} raw combinations, {report.wall_time_s:.2f} s)."
    )
    if not report.solutions:
        return
    cols = [c for c in ENUM_COLUMNS if any(s.get(c[0]) is not None for s in report.solutions) or c[0] in ("grad_accum", "rollout_replicas")]
    table = Table(show_lines=False)
    for _, title in cols:
        table.add_column(title, justify="right")
    for sol in report.solutions[:show]:
        row = solution_columns(sol, fw.ruleset)
        table.add_row(*["" if row.get(k) is None else str(row.get(k)) for k, _ in cols])
    console.print(table)
    if report.count > show:
        console.print(f"... {report.count - show} more (--show N, or --json for all).")
    console.print("\nfirst config as overrides:")
    console.print("  " + " \\\n  ".join(report.native[0]))


def print_conflict(console: Console, conflict: Any, space: Any) -> None:
    if not conflict.rules:
        console.print(f"[red]No valid config[/] (solver status: {conflict.status}).")
        return
    minimal = "a minimal set" if conflict.proven_minimal else "a set"
    console.print(f"[bold red]No valid config.[/] These rules conflict ({minimal}; drop any one and the rest can hold):")
    for r in conflict.rules:
        console.print(f"  [bold]{r.id}[/] ({r.stage.value}): {r.explanation or r.message}")
        console.print(f"     source: {r.source}")
    fixed = {k: v[0] for k, v in space.domains.items() if len(v) == 1 and v[0] is not None}
    names = set().union(*[r.reads() for r in conflict.rules])
    shown = {k: fixed[k] for k in sorted(names) if k in fixed}
    if shown:
        console.print("  with fixed values: " + ", ".join(f"{k}={v}" for k, v in shown.items()))


def print_gpus(console: Console, gpus: list) -> None:
    table = Table()
    for col in ("name", "GPU", "memory GiB", "BF16 TFLOP/s", "HBM GB/s", "link", "link GB/s"):
        table.add_column(col)
    for g in gpus:
        table.add_row(g.name, g.display_name, f"{g.memory_gib:.1f}", f"{g.bf16_tflops:g}", f"{g.hbm_bandwidth_gbps:g}",
                      g.intra_node, f"{g.intra_node_bandwidth_gbps:g}")
    console.print(table)


def print_models(console: Console, cards: list) -> None:
    table = Table()
    for col in ("name", "params", "active", "layers", "hidden", "heads", "kv heads", "vocab", "context"):
        table.add_column(col)
    for c in cards:
        table.add_row(c.name, f"{c.total_params() / 1e9:.2f}B", f"{c.active_params() / 1e9:.2f}B",
                      str(c.num_hidden_layers), str(c.hidden_size), str(c.num_attention_heads),
                      str(c.num_key_value_heads), str(c.vocab_size), str(c.max_position_embeddings))
    console.print(table)


# ----------------------------------------------------------------------------- recommend
GIB = 2**30
PHASE_TITLE = {
    "rollout": "rollout", "old_log_prob": "old log-prob", "ref": "ref log-prob", "actor_update": "actor update",
    "critic_update": "critic update", "weight_sync": "weight sync", "offload": "offload transfers",
}


def _gib(x: float) -> str:
    return f"{x / GIB:.1f}"


def print_recommend(console: Console, report: Any) -> None:
    sc = report.scenario
    gpu = report.gpu
    console.print(
        f"[bold]{report.framework} {report.version}[/] · {sc.algorithm} · {report.model.name} on "
        f"{sc.total_gpus}x {gpu.display_name} ({gpu.memory_gib:.0f} GiB) · prompt {sc.prompt_length}, "
        f"response {sc.response_length}"
    )
    proof = "proven optimal" if report.proven else f"best found, not proven ({report.status})"
    console.print(f"objective: {sc.objective} · {proof} · {report.raw_size:,} raw combinations · "
                  f"solved in {report.wall_time_s:.2f} s")
    if not report.choices:
        print_no_fit(console, report)
        return
    best = report.best
    console.print("\n[bold green]Best config[/] (paste into your launch script):")
    console.print("  " + " \\\n  ".join(best.native))
    mem = Table(title="memory per GPU, by phase (GiB)")
    for col in ("phase", "peak", "capacity", "largest terms"):
        mem.add_column(col)
    cap = report.capacity_mib * 2**20
    for phase, r in best.memory.items():
        terms = ", ".join(f"{name} {_gib(b)}" for name, b in r.largest_terms(phase, 3))
        mem.add_row(PHASE_TITLE.get(phase, phase), _gib(r.peak(phase)), _gib(cap), terms)
    console.print(mem)
    tt = Table(title="time per RL step (s)")
    tt.add_column("phase")
    tt.add_column("seconds", justify="right")
    for phase, sec in best.phase_seconds.items():
        tt.add_row(PHASE_TITLE.get(phase, phase), f"{sec:.1f}")
    tt.add_row("[bold]total[/]", f"[bold]{best.step_time_s:.1f}[/]")
    console.print(tt)
    console.print(f"throughput: {best.tokens_per_s:,.0f} tokens/s (prompt+response tokens per step / step time)")
    if report.scenario.price_per_gpu_hour:
        cost = best.step_time_s / 3600 * sc.total_gpus * sc.price_per_gpu_hour
        console.print(f"cost: {cost:.3f} per step at {sc.price_per_gpu_hour} per GPU-hour")
    if len(report.choices) > 1:
        alt = Table(title="alternatives (next best, in proven order)" if report.proven else "alternatives")
        for col in ("#", "step s", "why it lost", "differs in"):
            alt.add_column(col)
        for c in report.choices[1:]:
            alt.add_row(str(c.rank), f"{c.step_time_s:.1f}", why_lost(best, c), differs(best, c))
        console.print(alt)


def why_lost(best: Any, other: Any) -> str:
    """The phase whose time grew most against the best config."""
    deltas = {p: other.phase_seconds.get(p, 0.0) - best.phase_seconds.get(p, 0.0) for p in other.phase_seconds}
    phase, delta = max(deltas.items(), key=lambda kv: kv[1])
    if delta <= 0.05:
        return "ties on time (same step time within 0.05 s)"
    return f"{PHASE_TITLE.get(phase, phase)} +{delta:.1f} s"


def differs(best: Any, other: Any) -> str:
    a, b = dict(x.partition("=")[::2] for x in best.native), dict(x.partition("=")[::2] for x in other.native)
    keys = [k for k in b if a.get(k) != b.get(k)]
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={b[k]}" for k in keys[:4]) or "-"


def print_no_fit(console: Console, report: Any) -> None:
    console.print("\n[bold red]No valid config fits.[/]")
    if report.conflict is not None:
        print_conflict(console, report.conflict, report.space)
    for rule_id, (least, cap) in report.memory_floor.items():
        if least > cap:
            console.print(f"  {rule_id}: needs at least {least / 1024:.1f} GiB per GPU anywhere in the search space, "
                          f"{(least - cap) / 1024:.1f} GiB more than the {cap / 1024:.1f} GiB usable")
    console.print("  what would help: more GPUs (--gpus), a bigger GPU (--gpu), shorter responses (--response-len), "
                  "or offload (--set ...fsdp_config.param_offload=True)")


def recommend_dict(report: Any) -> dict[str, Any]:
    def choice(c: Any) -> dict[str, Any]:
        return {
            "rank": c.rank,
            "native": c.native,
            "step_time_s": round(c.step_time_s, 3),
            "phase_seconds": {k: round(v, 3) for k, v in c.phase_seconds.items()},
            "tokens_per_s": round(c.tokens_per_s, 1),
            "memory_gib": {p: {"peak": round(r.peak(p) / GIB, 3),
                               "terms": {k: round(v / GIB, 3) for k, v in r.phases[p].items()}}
                           for p, r in c.memory.items()},
            "proven": c.proven,
        }

    return {
        "framework": report.framework,
        "rules_version": report.version,
        "status": report.status,
        "proven": report.proven,
        "capacity_gib": round(report.capacity_mib / 1024, 3),
        "choices": [choice(c) for c in report.choices],
        "conflict": report.conflict.ids if report.conflict else None,
        "memory_floor_mib": {k: {"least": a, "capacity": b} for k, (a, b) in report.memory_floor.items()},
    }


# ----------------------------------------------------------------------------- fix
def print_fix(console: Console, report: Any) -> None:
    head = f"{report.framework} {report.version}"
    if report.before_violations:
        console.print(f"[bold red]INVALID[/] — breaks {len(report.before_violations)} {head} rules:")
        for v in report.before_violations:
            console.print(f"  [bold]{v.rule}[/]: {v.message}")
    else:
        console.print(f"[bold green]VALID[/] — passes every {head} rule" +
                      (" and fits in memory." if report.memory_evaluated else "."))
    for note in report.notes:
        console.print(f"note: {note}")
    if report.after is None:
        console.print(f"\n[bold red]No repair exists[/] within the values fix may change (status: {report.status}).")
        if report.conflict is not None:
            from types import SimpleNamespace

            print_conflict(console, report.conflict, SimpleNamespace(domains={}))
        if report.pinned_in_conflict:
            console.print("  held fixed and part of the conflict: " +
                          ", ".join(f"{k}={v}" for k, v in report.pinned_in_conflict.items()))
        console.print("  what would help: " + "; ".join(report.relaxations))
        return
    if not report.changes:
        return
    proof = "proven nearest" if report.proven else f"nearest found, not proven ({report.status})"
    console.print(f"\n[bold green]Nearest valid config[/] ({len(report.changes)} change(s), {proof}):")
    for key, old, new in report.native_changes:
        fixes = ", ".join(report.satisfies.get(key, []))
        console.print(f"  {key}: {_shown(old)} -> [bold]{_shown(new)}[/]" + (f"   (fixes {fixes})" if fixes else ""))
    if report.memory_before:
        mem = Table(title="memory per GPU, by phase (GiB)")
        for col in ("phase", "before", "after", "capacity"):
            mem.add_column(col, justify="right" if col != "phase" else "left")
        for phase, (peak, cap) in report.memory_before.items():
            after = report.memory_after.get(phase, (None, cap))[0]
            mem.add_row(PHASE_TITLE.get(phase, phase), f"{peak / 1024:.1f}",
                        "-" if after is None else f"{after / 1024:.1f}", f"{cap / 1024:.1f}")
        console.print(mem)
    console.print("\npaste over yours:")
    console.print("  " + " ".join(report.native_after))


def _shown(value: Any) -> str:
    return "null (unset)" if value is None else str(value)


# ----------------------------------------------------------------------------- explain
def print_explain(console: Console, report: Any) -> None:
    if not report.matched:
        from .frameworks.error_text import PATTERNS

        fws = sorted({p.framework for p in PATTERNS})
        console.print("[yellow]No known message matched.[/] We map the batch-size and parallelism errors of: "
                      + ", ".join(fws) + ". Paste the line with the numbers, or run `rlbatch check` on the config.")
        return
    if report.numbers:
        console.print("numbers in the message: " + ", ".join(f"{k}={v}" for k, v in report.numbers.items()))
    for r in report.rules:
        console.print(f"\n[bold]{r.rule}[/] ({r.framework}, fails at: {STAGE_TEXT[Stage(r.stage)]})")
        console.print(f"  {r.why}")
        console.print(f"  source: {r.source}")
    if report.check is not None:
        if report.check.violations:
            console.print("\nyour config breaks:")
            for v in report.check.violations:
                console.print(f"  [bold]{v.rule}[/]: {v.message}")
        else:
            console.print("\nyour config passes every rule we know: the error came from values not pasted here.")
    if report.fix is not None and report.fix.changes:
        console.print("\nsmallest fix:")
        for key, old, new in report.fix.native_changes:
            console.print(f"  {key}: {_shown(old)} -> [bold]{_shown(new)}[/]")
        console.print("  paste over yours: " + " ".join(report.fix.native_after))

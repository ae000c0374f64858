"""Tables and pictures of sweep results (the pictures need ``pip install .[plot]``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..commands.check import memory_error_log
from ..costmodel.phase import MEMORY_PHASES
from ..errors import InputError, shown
from ..safe_input import output_file


# the point fields a summary line shows (the table's title, the GPU columns, the placement column), and those that
# go with the GPU type and count (a price per GPU type, $/step shows it; nodes for a count)
_SHOWN = ("model", "algorithm", "gpu", "gpus", "placement", "price_per_gpu_hour", "nnodes", "gpus_per_node")


def _key(row: dict[str, Any]) -> tuple:
    p = row["point"]
    return (str(p.get("model")), str(p.get("algorithm")), *(f"{k}={p[k]}" for k in sorted(p) if k not in _SHOWN),
            str(p.get("gpu")), int(p.get("gpus") or 0), str(p.get("placement") or ""))


def _run_words(point: dict[str, Any], axes: list[str]) -> list[str]:
    """The model, the framework (unless an axis names it) and the algorithm a grid gives (none: the framework's
    default, not written as 'None')."""
    words = [str(point.get("model"))]
    if point.get("framework") and "framework" not in axes:
        words.append(shown(point["framework"]))
    if point.get("algorithm") is not None:
        words.append(shown(point["algorithm"]))
    return words


def varying(points: list[dict[str, Any]]) -> list[str]:
    """The grid's other axes (framework, n, lengths...): the point fields whose values differ among ``points``; a
    summary gives each combination of them a table of its own, named in its title."""
    keys = sorted({k for p in points for k in p if k not in _SHOWN})
    return [k for k in keys if len({str(p.get(k)) for p in points}) > 1]


def layout_text(row: dict[str, Any]) -> str:
    """A point's placement: asked for, and the layout that won (recommend --placement)."""
    asked = row["point"].get("placement")
    if not asked:
        return ""
    won = (row.get("placement") or {}).get("winner")
    return f"{asked}: {won}" if won else str(asked)


def _tightest(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(peak, its own line) of the phase with the least headroom: each phase against its own capacity (a vLLM
    rollout's line is the GPU less its fixed margin, the training phases' less the whole margin). Rows written
    before the per-phase lines were kept compare every phase with the training line."""
    peaks, lines = row.get("memory_gib") or {}, row.get("capacity_gib_by_phase") or {}
    if not peaks:
        return None, row.get("capacity_gib")
    default = row.get("capacity_gib")
    phase = max(peaks, key=lambda p: peaks[p] / (lines.get(p) or default or 1.0))
    return peaks[phase], lines.get(phase, default)


def _within_error(peak: float | None, cap: float | None, framework: str) -> bool:
    """The peak is under its line by less than the memory model's observed error (log(line / peak) < it)."""
    error = memory_error_log(framework)
    return bool(peak and cap and error) and math.log(cap / peak) < error


def _cost_per_token(row: dict[str, Any]) -> float | None:
    """A priced point's cost per token its step trains: the step's cost over tokens/s x step seconds."""
    tokens = (row.get("tokens_per_s") or 0) * (row.get("step_time_s") or 0)
    return row["cost_per_step"] / tokens if tokens > 0 and row.get("cost_per_step") else None


def summary_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per point, sorted by model, GPU type and count; the best point per model marked."""
    out = []
    best: dict[tuple, tuple[float, int]] = {}
    by_cost = any(r.get("cost_per_step") for r in rows)
    for i, r in enumerate(sorted(rows, key=_key)):
        p = r["point"]
        peak, cap = _tightest(r)
        line = {
            "model": p.get("model"), "algorithm": p.get("algorithm"), "gpu": p.get("gpu"), "gpus": p.get("gpus"),
            "status": r.get("status"), "step_s": r.get("step_time_s"), "tokens_per_s": r.get("tokens_per_s"),
            "cost_per_step": r.get("cost_per_step"), "peak_gib": peak, "capacity_gib": cap,
            "reason": r.get("reason", ""), "best": False, "id": r["id"], "layout": layout_text(r), "point": p,
        }
        host = r.get("host_memory") or {}
        if r.get("status") == "ok" and host.get("fits") is False:
            line["status"] = "host RAM"  # fits the GPUs, not the node's RAM (costmodel/host.py)
            line["reason"] = (f"a node needs {host['peak_gib']:.0f} GiB of RAM at {host['when']}, over the "
                              f"{host['limit_gib']:.0f} GiB usable of {host['ram_gib']:.0f} ({host['ram_from']})")
        elif r.get("status") == "ok" and _within_error(peak, cap, str(p.get("framework") or "verl")):
            # recommend's "memory: tight" (commands/check.py MemoryCheck.outlook): it fits, with less room than the
            # memory model's observed error
            line["status"] = "tight"
            line["reason"] = (f"peak {peak:.1f} of {cap:.1f} GiB usable, within the memory model's observed error "
                              f"({math.exp(memory_error_log(str(p.get('framework') or 'verl'))) - 1:.0%}): may run "
                              "out of memory")
        out.append(line)
        if line["status"] in ("ok", "tight"):
            # priced: the cost of a token trained (a step's cost over its tokens), not of a step: points whose steps
            # train different batches (TRL's per-device batch grows with the GPU count; two frameworks' defaults)
            # cost alike per token where one step costs twice another's
            score = (_cost_per_token(r) if by_cost and r.get("cost_per_step") and _cost_per_token(r)
                     else -r["tokens_per_s"])
            k = (line["model"], line["algorithm"])
            if k not in best or score < best[k][0]:
                best[k] = (score, len(out) - 1)
    for _, idx in best.values():
        out[idx]["best"] = True
    return out


def print_summary(console, rows: list[dict[str, Any]]) -> None:
    """One compact table per model and algorithm; why a point has no config, listed under it."""
    from rich.table import Table

    lines = summary_rows(rows)
    by_cost = any(r.get("cost_per_step") for r in rows)
    console.print(f"{len(lines)} points · best per model by {'cost per token' if by_cost else 'tokens/s'} (*)")
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for x in lines:
        groups.setdefault((x["model"], x["algorithm"]), []).append(x)
    tables: dict[str, list[dict[str, Any]]] = {}
    for (model, algo), group in groups.items():
        axes = varying([x["point"] for x in group])
        for x in group:  # one table per value of the grid's other axes: a line's GPU type and count name it
            title = " · ".join([*_run_words(x["point"], axes), *(f"{a} {shown(x['point'].get(a))}" for a in axes)])
            tables.setdefault(title, []).append(x)

    def f(v, fmt):
        return "" if v is None else format(v, fmt)

    for title, group in tables.items():
        table = Table(title=title, title_justify="left")
        placed = any(x["layout"] for x in group)
        priced = any(x["cost_per_step"] is not None for x in group)  # a grid without price_per_gpu_hour: no column
        cols = ("GPU", "#") + (("placement",) if placed else ()) + ("status", "step s", "tokens/s") + (
            ("$/step",) if priced else ()) + ("peak/cap GiB",)
        for col in cols:
            table.add_column(col, justify="left" if col in ("GPU", "status", "placement") else "right",
                             no_wrap=col != "placement")
        why = []
        for x in group:
            status = ("* " if x["best"] else "") + str(x["status"])
            if x["status"] != "ok" and x["reason"]:  # why a point has no config, or is tight
                why.append(x)
                status += f" [{len(why)}]"
            peak = f"{f(x['peak_gib'], '.1f')}/{f(x['capacity_gib'], '.1f')}" if x["peak_gib"] is not None else \
                f"-/{f(x['capacity_gib'], '.1f')}"
            table.add_row(str(x["gpu"]), str(x["gpus"]), *((x["layout"],) if placed else ()), status,
                          f(x["step_s"], ".1f"), f(x["tokens_per_s"], ",.0f"),
                          *((f(x["cost_per_step"], ".4f"),) if priced else ()), peak)
        console.print(table)
        for k, x in enumerate(why, 1):
            console.print(f"  [{k}] {x['gpus']}x {x['gpu']}: {x['reason']}")
    from ..costmodel.accuracy import time_error_text

    for fw in sorted({str(r["point"].get("framework")) for r in rows if r.get("point", {}).get("framework")}):
        line = time_error_text(fw)
        if line:
            console.print(f"[dim]{fw}: {line}[/]")


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plot", "matplotlib is not installed.", 'pip install ".[plot]" to draw pictures.') from None
    return plt


def plot_heatmap(rows: list[dict[str, Any]], out: str | Path, metric: str = "tokens_per_s") -> Path:
    """Metric over GPU type x GPU count, one panel per model; infeasible cells say why."""
    if metric not in ("tokens_per_s", "cost_per_step", "step_time_s"):
        raise InputError("metric", f"unknown metric '{metric}'.", "use tokens_per_s, cost_per_step or step_time_s.")
    if not rows:
        raise InputError("summary", "the results file has no rows.", "run the sweep first.")
    plt = _plt()
    import numpy as np

    models = sorted({str(r["point"].get("model")) for r in rows})
    gpus = sorted({str(r["point"].get("gpu")) for r in rows})
    counts = sorted({int(r["point"].get("gpus") or 0) for r in rows})
    fig, axes = plt.subplots(1, len(models), figsize=(1.3 * len(counts) * len(models) + 2, 0.7 * len(gpus) + 2),
                             squeeze=False)
    for ax, model in zip(axes[0], models):
        grid = np.full((len(gpus), len(counts)), np.nan)
        labels = [["" for _ in counts] for _ in gpus]
        for r in rows:
            p = r["point"]
            if str(p.get("model")) != model:
                continue
            i, j = gpus.index(str(p.get("gpu"))), counts.index(int(p.get("gpus") or 0))
            if r.get("status") == "ok" and r.get(metric) is not None:
                grid[i, j] = r[metric]
                v = r[metric]
                labels[i][j] = f"{v:,.0f}" if metric == "tokens_per_s" else f"{v:.3g}"
            else:
                labels[i][j] = "OOM" if r.get("memory_short") else {"infeasible": "x", "timed_out": "?"}.get(
                    str(r.get("status")), "err")
        cmap = plt.get_cmap("viridis" if metric == "tokens_per_s" else "viridis_r").with_extremes(bad="#dddddd")
        im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, aspect="auto")
        ax.set_xticks(range(len(counts)), [str(c) for c in counts])
        ax.set_yticks(range(len(gpus)), gpus)
        ax.set_xlabel("GPUs")
        ax.set_title(model)
        for i in range(len(gpus)):
            for j in range(len(counts)):
                if labels[i][j]:
                    ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=8,
                            color="black" if np.isnan(grid[i, j]) else "white")
        fig.colorbar(im, ax=ax, label=metric.replace("_", " "))
    fig.tight_layout()
    return _save(fig, out, "plot")


def plot_memory(row: dict[str, Any], out: str | Path) -> Path:
    """Stacked memory terms per phase for one point, with the GPU's usable capacity."""
    if row.get("status") != "ok" or not row.get("memory_terms_gib"):
        raise InputError("point", f"point {row.get('id')} has no fitting config to draw.",
                         "pick a point whose status is ok (rlbatch sweep --summary lists ids).")
    plt = _plt()
    step_order = list(MEMORY_PHASES)
    phases = sorted(row["memory_terms_gib"], key=lambda p: step_order.index(p) if p in step_order else len(step_order))
    terms = sorted({t for p in phases for t in row["memory_terms_gib"][p]})
    fig, ax = plt.subplots(figsize=(1.6 * len(phases) + 4, 5))
    bottom = [0.0] * len(phases)
    colors = plt.get_cmap("tab20")
    for k, term in enumerate(terms):
        vals = [row["memory_terms_gib"][p].get(term, 0.0) for p in phases]
        if not any(vals):
            continue
        ax.bar(phases, vals, bottom=bottom, label=term, color=colors(k % 20))
        bottom = [b + v for b, v in zip(bottom, vals)]
    cap = row.get("capacity_gib")
    if cap:
        ax.axhline(cap, color="red", linestyle="--", label=f"usable {cap:.1f} GiB")
    p = row["point"]
    ax.set_title(f"{' '.join(_run_words(p, []))} on {p.get('gpus')}x {p.get('gpu')}: memory per GPU")
    ax.set_ylabel("GiB per GPU")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    return _save(fig, out, "memory-plot")


def _save(fig: Any, out: str, field: str) -> Path:
    """``fig`` written to ``out`` as PNG (a new or regular file: ``safe_input.output_file``)."""
    import matplotlib.pyplot as plt

    path = output_file(out, field, "a new PNG file")
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as err:
        raise InputError(field, f"cannot write {shown(out, 60)}: {getattr(err, 'strerror', None) or err}.",
                         "pass a writable path ending in .png.") from None
    finally:
        plt.close(fig)
    return path

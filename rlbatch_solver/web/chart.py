"""The memory chart: one stacked bar per phase (its memory terms, GiB per GPU) against the GPU's memory and the
line the phase's peak must stay under, as inline SVG (no script, nothing fetched)."""

from __future__ import annotations

from html import escape

WIDTH, LABEL, RIGHT, ROW, BAR = 820, 150, 90, 34, 22
# colour-blind-safe palette (Okabe-Ito, then Tol's muted): a term keeps its colour across the phases
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288", "#88CCEE",
           "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499"]


def _colours(phases: dict) -> dict[str, str]:
    names: list[str] = []
    for phase in phases.values():
        names += [t for t in phase["terms"] if t not in names]
    return {name: PALETTE[k % len(PALETTE)] for k, name in enumerate(names)}


def memory_svg(chart: dict) -> str:
    """``chart`` (jobs.check_chart / jobs.choice_chart) as an SVG element."""
    phases, total = chart["phases"], float(chart["total_gib"])
    top = max([total] + [sum(p["terms"].values()) for p in phases.values()]) * 1.02 or 1.0
    span = WIDTH - LABEL - RIGHT
    x = lambda gib: LABEL + span * gib / top  # noqa: E731
    colours = _colours(phases)
    height = 30 + ROW * len(phases) + 30
    out = [f'<svg id="memory-chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="memory per GPU by phase" font-size="12" '
           'font-family="sans-serif">']
    for k, (name, phase) in enumerate(phases.items()):
        y = 20 + ROW * k
        out.append(f'<text x="{LABEL - 8}" y="{y + BAR * 0.7:.0f}" text-anchor="end">{escape(name)}</text>')
        left = 0.0
        for term, gib in phase["terms"].items():
            if gib <= 0:
                continue
            out.append(f'<rect class="term" x="{x(left):.1f}" y="{y}" width="{max(0.5, x(left + gib) - x(left)):.1f}" '
                       f'height="{BAR}" fill="{colours[term]}"><title>{escape(name)}: {escape(term)} {gib:.2f} '
                       'GiB</title></rect>')
            left += gib
        usable = phase["usable_gib"]
        colour = "#b00020" if left > usable else "#222"
        out.append(f'<line class="usable" x1="{x(usable):.1f}" x2="{x(usable):.1f}" y1="{y - 3}" y2="{y + BAR + 3}" '
                   f'stroke="#222" stroke-width="2"><title>usable in {escape(name)}: {usable:.1f} GiB</title></line>')
        out.append(f'<text x="{x(left) + 6:.1f}" y="{y + BAR * 0.7:.0f}" fill="{colour}">{left:.1f} GiB</text>')
    bottom = 20 + ROW * len(phases)
    out.append(f'<line x1="{x(total):.1f}" x2="{x(total):.1f}" y1="12" y2="{bottom}" stroke="#b00020" '
               'stroke-dasharray="5,3" stroke-width="1.5"/>')
    out.append(f'<text x="{x(total):.1f}" y="10" text-anchor="middle" fill="#b00020">{escape(str(chart["gpu"]))} '
               f'{total:.0f} GiB</text>')
    for tick in _ticks(top):
        out.append(f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle" fill="#555">{tick:g}</text>')
    out.append(f'<text x="{LABEL + span / 2:.0f}" y="{bottom + 30}" text-anchor="middle" fill="#555">GiB per GPU '
               '(black tick: the usable line of the phase; red dashes: the GPU\'s memory)</text>')
    out.append("</svg>")
    legend = "".join(f'<span class="key"><i style="background:{c}"></i>{escape(t)}</span>' for t, c in colours.items())
    return "".join(out) + f'<div class="legend">{legend}</div>'


def _ticks(top: float) -> list[float]:
    step = next(s for s in (1, 2, 5, 10, 20, 40, 50, 100, 200, 500, 1000, 10**9) if top / s <= 8)
    return [float(t) for t in range(0, int(top) + 1, step)]

"""``recommend --placement``: rollout on the training GPUs, on a pool of its own, or both compared (docs/async.md).

A colocated run takes turns: every step generates, then trains, on the same GPUs. A split run gives the
inference engines GPUs of their own and pipelines: the rollout pool generates the next step's samples while the
trainer pool trains on the last ones (verl's separate_async mode and fully_async recipe, OpenRLHF's
``--train.async_enable``), so a step takes the slower pool plus the weight sync. Which wins depends on how the
step's time divides between generation and training, and on where the GPUs go: the framework lists the layouts
worth solving (``Framework.placements``), each layout is one ordinary solve, and the best over all of them is the
answer, with every layout's best beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..scenario import Scenario


@dataclass
class PlacementOption:
    """The best config of one placement layout (its own solve)."""

    placement: str  # "colocate" | "split"
    label: str  # "16 trainer + 16 rollout GPUs"
    report: Any  # RecommendReport of that layout's solve

    @property
    def best(self):
        return self.report.best

    @property
    def objective(self) -> float | None:
        return None if self.best is None else float(self.best.objective)

    @property
    def samples(self) -> int:
        """Samples (responses) per step of its best config: step times compare only per sample."""
        best = self.best
        return 0 if best is None else round(best.step_time_s * 1e6 / best.objective) if best.objective else 0

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        out: dict[str, Any] = {"placement": self.placement, "layout": self.label, "status": self.report.status,
                               "proven": self.report.proven}
        if best is not None:
            out.update(step_seconds=round(best.step_time_s, 3), tokens_per_s=round(best.tokens_per_s, 1),
                       seconds_per_sample=round(best.objective / 1e6, 6),
                       pipeline=[{"pool": n, "seconds": round(s, 3), "idle_ratio": round(i, 3)}
                                 for n, s, i in best.stages])
        return out


@dataclass
class PlacementSummary:
    asked: str
    options: list[PlacementOption] = field(default_factory=list)
    skipped: int = 0  # layouts of the framework's list not solved: neither coarse nor next to the best split

    @property
    def ranked(self) -> list[PlacementOption]:
        return sorted((o for o in self.options if o.best is not None), key=lambda o: o.objective)

    @property
    def winner(self) -> PlacementOption | None:
        ranked = self.ranked
        return ranked[0] if ranked else None

    def best_of(self, placement: str) -> PlacementOption | None:
        return next((o for o in self.ranked if o.placement == placement), None)

    def verdict(self) -> str:
        """Which placement wins, by how much, and why (the bottleneck), in numbers."""
        win = self.winner
        if win is None:
            return "no layout has a config that is valid and fits"
        text = (f"best: {win.label}, {win.best.tokens_per_s:,.0f} tokens/s ({win.best.step_time_s:.1f} s per step of "
                f"{win.samples:,} samples)")
        other = next((o for o in self.ranked if o.placement != win.placement), None)
        if other is not None:
            gain = other.objective / win.objective if win.objective else 1.0
            kind = {"colocate": "colocated", "split": "split"}.get(other.placement, other.placement)
            text += (f"; {gain:.2f}x the throughput of the best {kind} layout ({other.label}, "
                     f"{other.best.tokens_per_s:,.0f} tokens/s)")
        text += ". " + _why(win, other)
        if self.skipped:
            text += (f". {len(self.options)} layouts solved; {self.skipped} more, further from the best split, were "
                     "not (coarse to fine over the trainer's share)")
        return text

    def to_dict(self) -> dict[str, Any]:
        win = self.winner
        return {"asked": self.asked, "winner": None if win is None else win.label, "verdict": self.verdict(),
                "layouts_not_solved": self.skipped, "options": [o.to_dict() for o in self.options]}


def _why(win: PlacementOption, other: PlacementOption | None) -> str:
    """The step's make-up behind the verdict: the colocated step's share of generation, the split's bottleneck."""
    parts = []
    for opt in (win, other):
        if opt is None:
            continue
        best = opt.best
        if best.stages:
            slow = max(best.stages, key=lambda s: s[1])
            fast = min(best.stages, key=lambda s: s[1])
            parts.append(f"{opt.label}: the {slow[0]} pool is the bottleneck ({slow[1]:.1f} s), the {fast[0]} pool "
                         f"idles {fast[2]:.0%}")
        else:
            gen = best.phase_seconds.get("rollout", 0.0)
            share = gen / best.step_time_s if best.step_time_s else 0.0
            parts.append(f"{opt.label}: generation is {share:.0%} of the step ({gen:.1f} of {best.step_time_s:.1f} s), "
                         "training the rest, one after the other")
    return "; ".join(parts)


def recommend_placement(scenario: Scenario, *, top: int, time_limit_s: float, extra_gpus: str | Path | None,
                        solver_workers: int, recommend_one) -> Any:
    """One solve per layout, coarse to fine: the layouts the framework marks coarse first (a quarter, a half and
    three quarters of the GPUs to the trainer), then, in each family of splits (the framework's order, trainer GPUs
    ascending), the neighbours of its best, until they are solved or the time is spent. Each solve gets an
    even share of the time left. Returns the best layout's report, its choices merged with the other layouts'
    (best first), and a ``PlacementSummary`` of every layout solved."""
    from ..deadline import Deadline
    from ..frameworks import get_framework

    fw = get_framework(scenario.framework)
    layouts = fw.placements(scenario)  # (placement, label, scenario, coarse[, family])
    deadline = Deadline(time_limit_s)
    solved: dict[int, PlacementOption] = {}

    def solve(i: int, pending: int) -> None:
        placement, label, sub = layouts[i][:3]
        share = max(1.0, deadline.left() / max(1, pending))
        report = recommend_one(sub, top=top, time_limit_s=share, extra_gpus=extra_gpus, solver_workers=solver_workers)
        if report.best is not None:
            label = fw.describe_placement(report.best.values) or label
        solved[i] = PlacementOption(placement, label, report)

    first = [i for i, lay in enumerate(layouts) if lay[3]]
    for k, i in enumerate(first):
        solve(i, len(first) - k)
    # each family of split layouts (whole nodes to each pool; every node split) in its own order
    families: dict[Any, list[int]] = {}
    for i, lay in enumerate(layouts):
        if lay[0] == "split":
            families.setdefault(lay[4] if len(lay) > 4 else None, []).append(i)
    while families and deadline.left() > 1.0:
        todo = set()
        for order in families.values():
            done = [i for i in order if i in solved and solved[i].best is not None]
            if not done:
                continue
            top_value = min(solved[i].objective for i in done)
            for b in (i for i in done if solved[i].objective <= top_value * 1.001):  # ties: each one's neighbours
                pos = order.index(b)
                todo |= {order[j] for j in (pos - 1, pos + 1) if 0 <= j < len(order) and order[j] not in solved}
        if not todo:
            break
        for k, i in enumerate(sorted(todo)):
            solve(i, len(todo) - k + 1)
    options = [solved[i] for i in sorted(solved)]
    summary = PlacementSummary(scenario.placement or "colocate", options, skipped=len(layouts) - len(options))
    win = summary.winner or options[0]
    report = win.report
    merged = sorted((c for o in options for c in o.report.choices), key=lambda c: c.objective)[:top]
    for i, c in enumerate(merged):
        c.rank = i + 1
    report.choices = merged
    report.proven = all(o.report.proven for o in options)
    report.scenario = scenario
    report.placement = summary
    return report


def sub_scenario(scenario: Scenario, **changes: Any) -> Scenario:
    """A copy of ``scenario`` for one layout's solve (its own placement settled: no further split)."""
    fixed = {**scenario.fixed, **changes.pop("fixed", {})}
    search = {**scenario.search, **changes.pop("search", {})}
    return replace(scenario, placement=None, fixed=fixed, search=search, **changes)

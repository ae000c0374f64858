"""``recommend --placement``: rollout on the training GPUs, on a pool of its own, or both compared (docs/async.md).

A colocated run takes turns: every step generates, then trains, on the same GPUs. A split run gives the
inference engines GPUs of their own and pipelines: the rollout pool generates the next step's samples while the
trainer pool trains on the last ones (verl's separate_async mode and recipes, OpenRLHF's ``--train.async_enable``,
ms-swift's ``--async_generate``), so a step takes the slower pool plus the weight sync. Which wins depends on how
the step's time divides between generation and training, and on where the GPUs go: the framework lists the layouts
worth solving (``Framework.placements``), each layout is one ordinary solve, and the best over all of them is the
answer, with every layout's best beside it. Layouts compare by throughput (time per sample): a layout may choose
another batch per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..layout import Layout, placement_kind
from ..scenario import Scenario
from ..solver.proof import no_fit_is_proven

if TYPE_CHECKING:
    from ..deadline import Deadline
    from .recommend import RecommendReport

# the colocated solve's share of what is left when it runs beside split layouts: the answer every split is held to
COLOCATED_TIME_SHARE = 0.35
# the least time a split layout's solve is given: a second, or 1.25 x the longest solve so far (layouts of one
# scenario cost about the same: a verl-megatron layout on 16 H100 takes 3-4 s on two cores, a verl FSDP one under a
# second); a layout that cannot get it is not solved, and named as such, rather than solved too briefly to answer.
# A layout is never given more than what is left of the command's --time-limit
MIN_LAYOUT_S = 1.0
LAYOUT_TIME_MARGIN = 1.25


@dataclass
class PlacementOption:
    """The best config of one placement layout (its own solve)."""

    placement: str  # "colocate" | "split"
    label: str
    report: RecommendReport  # of that layout's solve

    @property
    def best(self):
        return self.report.best

    @property
    def objective(self) -> float | None:
        return None if self.best is None else float(self.best.objective)

    @property
    def samples(self) -> int:
        """Samples (responses) per step of its best config."""
        return 0 if self.best is None else self.best.samples

    @property
    def timed_out(self) -> bool:
        """No config found, and none proven impossible: the layout's share of the time ran out first."""
        return self.best is None and not no_fit_is_proven(self.report)

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        out: dict[str, Any] = {"placement": self.placement, "layout": self.label, "status": self.report.status,
                               "proven": bool(best is not None and best.proven)}
        if best is None and self.report.conflict is not None:
            out["conflict"] = list(self.report.conflict.ids)  # the rules no config of the layout keeps together
        if best is not None:
            out.update(step_seconds=round(best.step_time_s, 3), samples=best.samples,
                       tokens_per_s=round(best.tokens_per_s, 1), seconds_per_sample=round(best.objective / 1e6, 6),
                       pipeline=[{"pool": n, "seconds": round(s, 3), "idle_ratio": round(i, 3)}
                                 for n, s, i in best.stages])
        return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass
class PlacementSummary:
    asked: str
    options: list[PlacementOption] = field(default_factory=list)
    skipped: int = 0  # layouts of the framework's list not solved: neither coarse nor next to the best split
    starved: list[str] = field(default_factory=list)  # layouts that would have been solved, but less time was left
    # than a solve takes: their labels
    notes: list[str] = field(default_factory=list)  # what the framework left out, and why

    @property
    def ranked(self) -> list[PlacementOption]:
        return sorted((o for o in self.options if o.best is not None), key=lambda o: o.objective)

    @property
    def fastest(self) -> PlacementOption | None:
        """The layout the model predicts fastest (ties not settled)."""
        ranked = self.ranked
        return ranked[0] if ranked else None

    @property
    def tie(self) -> PlacementOption | None:
        """The best colocated layout, when the fastest is a split that wins by less than the model's measured error
        on colocated/split comparisons (docs/async.md): a tie, which the simpler, colocated config wins."""
        from ..costmodel.accuracy import placement_error

        fastest, error = self.fastest, placement_error()
        colocated = next((o for o in self.ranked if o.placement == "colocate"), None)
        if fastest is None or colocated is None or error is None or fastest.placement == "colocate":
            return None
        return colocated if colocated.objective <= fastest.objective * math.exp(error[0]) else None

    @property
    def winner(self) -> PlacementOption | None:
        return self.tie or self.fastest

    @property
    def proven(self) -> bool:
        """Every layout of the list solved and each one's answer proven (its best, or that nothing fits): the winner
        is then the best of all of them."""
        return not self.skipped and not self.starved and all(
            o.best.proven if o.best is not None else not o.timed_out for o in self.options)

    def best_of(self, placement: str) -> PlacementOption | None:
        return next((o for o in self.ranked if o.placement == placement), None)

    def scope(self) -> str:
        """What the answer is the best of: the layouts solved, proven or not, and those left out."""
        solved = [o for o in self.options if o.best is not None]
        unproven = [o.label for o in solved if not o.best.proven]
        text = f"best of {_plural(len(solved), 'layout')} with an answer ({len(solved) - len(unproven)} proven"
        text += f"; not proven: {', '.join(unproven)})" if unproven else ")"
        timed = [o.label for o in self.options if o.timed_out]
        if timed:
            text += (f"; {_plural(len(timed), 'layout')} found no answer in {'its' if len(timed) == 1 else 'their'} "
                     f"share of the time: {', '.join(timed)}")
        if self.starved:
            text += (f"; {_plural(len(self.starved), 'layout')} not solved, the time ran out (raise --time-limit): "
                     + ", ".join(self.starved))
        if self.skipped:
            text += (f"; {_plural(self.skipped, 'layout')} further from the best split "
                     f"{'was' if self.skipped == 1 else 'were'} not solved (coarse to fine over the trainer's share)")
        return text

    def verdict(self) -> str:
        """Which placement wins, by how much, and why (the bottleneck), in numbers."""
        win = self.winner
        if win is None:
            return "no layout has a config that is valid and fits" + "".join(f"; {n}" for n in self.notes)
        text = (f"best: {win.label}, {win.best.tokens_per_s:,.0f} tokens/s ({win.best.step_time_s:.1f} s per step of "
                f"{win.samples:,} samples)")
        other = next((o for o in self.ranked if o.placement != win.placement), None)
        if self.tie is not None:
            from ..costmodel.accuracy import placement_error

            error, points = placement_error()
            fastest = self.fastest
            text += (f"; a tie: {fastest.label} predicts {win.objective / fastest.objective:.2f}x the throughput, "
                     f"inside the model's error on colocated/split comparisons ({math.exp(error):.2f}x, the median of "
                     f"{points} published ones, docs/async.md), so the simpler colocated config is kept")
        elif other is not None:
            gain = other.objective / win.objective if win.objective else 1.0
            text += (f"; {gain:.2f}x the throughput of the best {placement_kind(other.placement)} layout "
                     f"({other.label}, {other.best.tokens_per_s:,.0f} tokens/s)")
        else:
            missing = {o.placement for o in self.options} - {win.placement}
            for kind in sorted(missing):
                timed = any(o.timed_out for o in self.options if o.placement == kind)
                text += (f"; no {placement_kind(kind)} layout "
                         + ("found an answer in its share of the time (raise --time-limit)" if timed
                            else "has a valid config that fits"))
        text += ". " + _why(win, other)
        if any(o.timed_out for o in self.options):
            text += ". Some layouts found no answer in their share of the time: raise --time-limit to solve them"
        for note in self.notes:
            text += f". {note}"
        return text

    def to_dict(self) -> dict[str, Any]:
        win = self.winner
        return {"asked": self.asked, "winner": None if win is None else win.label, "verdict": self.verdict(),
                "proven": self.proven, "scope": self.scope(), "layouts_not_solved": self.skipped,
                "layouts_out_of_time": list(self.starved),
                "notes": list(self.notes), "options": [o.to_dict() for o in self.options]}


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
            where = "on separate pools, in turn" if opt.placement == "split" else "one after the other"
            parts.append(f"{opt.label}: generation is {share:.0%} of the step ({gen:.1f} of {best.step_time_s:.1f} s), "
                         f"training the rest, {where}")
    return "; ".join(parts)


def _likeliest_first(splits: list[int], layouts: list[Layout], scenario: Scenario,
                     colocated: list[PlacementOption]) -> list[int]:
    """The split layouts in the order they are likeliest to win: a balanced split gives the trainer about the share of
    the GPUs that training takes of the colocated best's step (1 - its generation share), so the layouts nearest that
    share come first (each layout's scenario counts its trainer GPUs). Without a colocated answer, as listed."""
    best = next((o.best for o in colocated if o.best is not None and o.best.step_time_s > 0), None)
    if best is None:
        return list(splits)
    total = max(1, scenario.total_gpus)
    target = 1.0 - best.phase_seconds.get("rollout", 0.0) / best.step_time_s
    return sorted(splits, key=lambda i: abs(layouts[i].scenario.total_gpus / total - target))


def placement_layouts(scenario: Scenario, notes: list[str]) -> list[Layout]:
    """The layouts ``recommend --placement`` solves (``Framework.placements``), made from the job with the
    algorithm's batch settled first (``keep_algorithm_batch``: the user's, else the framework's defaults, counted on
    every GPU of the job), so that every layout trains the same batch and a layout solved on its own gives the answer
    the command gives for it. Asked before the batch is settled, a framework would let a layout search the batch
    (OpenRLHF's split adds batch sizes that 6-GPU groups divide) or count it on the layout's own trainer GPUs
    (ms-swift's completions per optimizer step): another algorithm, not another layout."""
    from .recommend import keep_algorithm_batch

    settled = keep_algorithm_batch(scenario)[0]  # idempotent: recommend() settles it before it asks for the layouts
    return scenario.judged_by().placements(settled, notes)


def recommend_placement(scenario: Scenario, *, top: int, deadline: Deadline, extra_gpus: str | Path | None,
                        solver_workers: int, recommend_one) -> RecommendReport:
    """One solve per layout, coarse to fine: the layouts the framework marks coarse first (a quarter, a half and
    three quarters of the GPUs to the trainer), then, in each family of splits (the framework's order, trainer GPUs
    ascending), the neighbours of its best, until they are solved or the time is spent. The colocated solve, the
    answer every split is held to, gets its own share of what is left; the others an even share of the rest (a layout
    that cannot get at least a second, or 1.25x the longest solve so far, is not solved and is named). Every layout's
    solve ends within ``deadline``, the command's one --time-limit. Returns the best layout's report, its choices merged with the other layouts' (best
    first), and a ``PlacementSummary`` of every layout solved."""
    from .. import deadline as clock

    if scenario.objective != "time":
        raise InputError("objective", f"--placement compares layouts by throughput; --objective {scenario.objective} "
                         "ranks each layout's own configs, not the layouts.",
                         "use --objective time with --placement, or drop --placement.")
    fw = scenario.judged_by()
    notes: list[str] = []
    layouts = placement_layouts(scenario, notes)
    solved: dict[int, PlacementOption] = {}

    longest = 0.0  # the longest solve so far, wall seconds
    # the most a layout ran past its share so far (building its cost tables and pricing its answers are not bounded
    # by its solves' limits): held back from the next layouts' shares, so that they end by the command's deadline
    overrun = 0.0

    def left() -> float:
        return max(0.0, deadline.left() - overrun)

    def solve(i: int, seconds: float) -> None:
        nonlocal longest, overrun
        lay = layouts[i]
        started = clock.now()
        share = deadline.within(min(seconds, left()))  # never past the command's deadline
        report = recommend_one(lay.scenario, top=top, time_limit_s=share.seconds, extra_gpus=extra_gpus,
                               solver_workers=solver_workers, deadline=share, search_arms=False,
                               notes=False)  # the job's notes replace a layout's
        took = clock.now() - started
        longest, overrun = max(longest, took), max(overrun, took - share.seconds)
        label = (fw.describe_placement(report.best.values) if report.best is not None else None) or lay.label
        solved[i] = PlacementOption(lay.placement, label, report)

    starved: set[int] = set()

    def solve_in_turn(todo: list[int]) -> None:
        """Each an even share of the time left, at least MIN_LAYOUT_S or 1.25x the longest solve so far; the layouts
        that cannot get it are starved (named, not solved)."""
        for k, i in enumerate(todo):
            now_left, least = left(), max(MIN_LAYOUT_S, LAYOUT_TIME_MARGIN * longest)
            if now_left < least and solved:
                starved.update(todo[k:])
                return
            solve(i, min(now_left, max(least, now_left / (len(todo) - k))))

    first = [i for i, lay in enumerate(layouts) if lay.coarse]
    colocated = [i for i in first if layouts[i].placement == "colocate"]
    splits = [i for i in first if i not in colocated]
    for i in colocated:
        # its share, at least the least a layout is given, never more than is left
        solve(i, max(MIN_LAYOUT_S, deadline.share(COLOCATED_TIME_SHARE)) if splits else left())
    solve_in_turn(_likeliest_first(splits, layouts, scenario, [solved[i] for i in colocated if i in solved]))
    families: dict[Any, list[int]] = {}
    for i, lay in enumerate(layouts):
        if lay.placement == "split":
            families.setdefault(lay.family, []).append(i)
    while families and left() > MIN_LAYOUT_S:
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
        solve_in_turn(sorted(todo))
        if starved:
            break
    options = [solved[i] for i in sorted(solved)]
    starved -= set(solved)
    summary = PlacementSummary(scenario.placement or "colocate", options,
                               skipped=len(layouts) - len(options) - len(starved),
                               starved=[layouts[i].label for i in sorted(starved)], notes=notes)
    win = summary.winner or options[0]
    report = win.report
    # the winner's best first (a tie keeps the colocated config ahead of a split predicted faster), then by objective
    rest = sorted((c for o in options for c in o.report.choices if c is not win.best), key=lambda c: c.objective)
    merged = ([win.best] if win.best is not None else [])[:top] + rest[:top - 1]
    report.choices = [replace(c, rank=i + 1) for i, c in enumerate(merged)]
    report.proven = summary.proven
    report.wall_time_s = deadline.elapsed()  # the command's, every layout's solve included
    report.scenario = scenario
    report.placement = summary
    return report

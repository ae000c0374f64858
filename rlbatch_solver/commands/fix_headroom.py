"""``fix``'s headroom step: a repair left within the memory model's observed error of the GPU's usable memory
is repaired again with that margin kept, and the report says what the margin bought."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from ..frameworks import Framework
from ..rules.base import Value
from ..solver.costs import same_value
from .fix_report import FixReport, diff_rows, phase_mib
from .fix_search import cost_of, repair_once
from .fix_job import Job

if TYPE_CHECKING:
    from ..costmodel.tables import CostSpec
    from ..deadline import Deadline
    from ..frameworks.repair_policies import RepairPolicy
    from ..rules.base import RuleSet
    from ..solver.repair import RepairResult


@dataclass
class Headroom:
    """What fix's headroom step did: the phases the nearest repair left tight, the nearest repair's values, and each
    variable the answer moves beyond them for that headroom, with why its value (``headroom_values.py``; "" for a
    switch or a size those do not cover)."""

    tight: list[str]
    nearest: dict[str, Value]
    moved: dict[str, str]


def with_headroom(fw: Framework, policy: RepairPolicy, values: Mapping[str, Value], kept: set[str], spec: CostSpec,
                  res: RepairResult, ruleset: RuleSet, capacity: dict[str, int], notes: list[str], deadline: Deadline,
                  cut: list[str] | None = None) -> tuple[RepairResult, RepairResult | None, Headroom | None]:
    """A repair whose training phases end within the memory model's observed error of the GPU's usable memory is
    "tight" (check's outlook): repair again with those phases priced one error higher, and return that repair with
    the nearest one when it keeps the headroom (else the nearest one, said tight, and None), and what the step did.

    Two such repairs are weighed, by the plain repair's own cost (``solver/costs.py``): the nearest config with the
    headroom (from the pasted values) and the nearest one to the nearest repair (from its values: the repair, then
    the least step that buys the headroom, among the values an engineer would pick: divisors of the batches the
    rules divide by a size, else powers of two and divisors of the user's value, ``headroom_values.py``). What counts is, first, how many sizes each
    moves beyond the nearest repair to a value nobody would pick (16 -> 15), then how many keys each changes beyond
    those the nearest repair changes anyway (at most one more is taken, and only when the step from the nearest
    repair moves its numbers ``HEADROOM_STEP_DOUBLINGS`` or less), then how far the numbers move from the pasted ones
    (log distance, waste, rank), then the number of keys. A repair of no more keys than the nearest one is taken as
    before. Neither may move a batch size that shapes the learning (``Framework.shapes_learning``) that the nearest
    repair left as the user set it: the algorithm's batch is the last thing to change, never for headroom alone. So
    a tight OpenRLHF repair ``num_engines 3 -> 4, train.batch_size 100 -> 128`` gains ``rollout.micro_batch_size
    16 -> 8`` (one doubling) rather than turning into ``num_engines 4, ds.tensor_parallel_size 1 -> 8`` (two keys,
    but three doublings of a size the user never set, data parallelism 8 -> 1). The changes' rules are those the
    pasted config breaks at the plain pricing (``ruleset``): the margin is no rule, and is said beside the change.
    ``cut``: where the steps the clock stopped are said (``FixReport.cut_short``)."""
    from dataclasses import replace

    from ..costmodel.tables import full_reports
    from ..frameworks.repair_policies import references
    from ..solver.costs import DOUBLING, total_cost
    from ..solver.repair import CHANGE_WEIGHT, changes_between, repair_result
    from .check import memory_error_log
    from .headroom_values import regular_values

    error = memory_error_log(fw.name)
    cut = cut if cut is not None else []
    if not error:
        return res, None, None
    if deadline.left() < 0.05:
        cut.append("the headroom step (not run)")
        return res, None, None
    reports, _ = full_reports(spec, res.solution)
    lines = {p: int(capacity[p]) for p in reports if p in capacity}
    tight = [p for p, r in reports.items()
             if p != "rollout" and p in lines and r.peak(p) / 2**20 > lines[p] * math.exp(-error)]
    if not tight:
        return res, None, None
    pct = f"{math.exp(error) - 1:.0%}"
    offset = max(lines[p] for p in tight) * (1 - math.exp(-error)) * 2**20
    base = spec.plan

    def priced(values_: Mapping[str, Value], phase: str):  # the training phases one observed error higher
        plan = base(values_, phase)
        eff = plan.efficiency
        return plan.replace(efficiency=eff.replace(train_memory_offset_bytes=eff.train_memory_offset_bytes + offset))

    roomy = replace(spec, plan=priced)
    regular = regular_values(fw.ruleset, res.solution, _batch_keys(policy, fw.ruleset), own=values)
    # both searches bounded by work (HEADROOM_FLOOR_ROWS, HEADROOM_EXACT_WORK and the direct search's own bounds), so
    # the step's answer is the same at any load; ``deadline``, what the command has left, is only their safety net
    bounds = dict(kept=kept, spec=roomy, deadline=deadline, floor_rows=HEADROOM_FLOOR_ROWS,
                  exact_work=HEADROOM_EXACT_WORK)
    step = repair_once(fw, policy, res.solution, regular=regular, **bounds)
    scratch = repair_once(fw, policy, values, **bounds)
    cut += [f"the headroom step ({c})" for c in dict.fromkeys(scratch.result.cut_short + step.result.cut_short)]
    nearest_keys = {c.name for c in res.changes}
    refs = references(policy, dict(values))

    def beyond(sol: Mapping[str, Value]) -> list[str]:  # what a repair moves beyond the nearest one's values
        return [n for n in sol if not same_value(sol.get(n), res.solution.get(n))
                and not same_value(sol.get(n), values.get(n))]

    weighed, too_far = [], []
    for attempt, from_nearest in ((scratch, False), (step, True)):
        sol = attempt.result.solution
        if sol is None:
            continue
        changed = changes_between(values, sol)
        extra = {c.name for c in changed} - nearest_keys
        distance = cost_of(attempt.ruleset, values, sol, policy, refs) - CHANGE_WEIGHT * len(changed)
        irregular = sum(1 for n in beyond(sol) if not regular.allows(n, sol[n]))
        entry = ((irregular, len(extra), distance, len(changed), from_nearest), attempt)
        if any(same_value(res.solution.get(k), values.get(k)) and not same_value(sol.get(k), values.get(k))
               for k in fw.shapes_learning):
            too_far.append(entry)  # the algorithm's batch sizes change last: one the nearest repair kept stays kept
            continue
        if not from_nearest and len(changed) <= len(res.changes):
            weighed.append(entry)  # as few keys as the nearest repair: taken as before, however far
            continue
        moved = changes_between(res.solution, sol)  # the step from the nearest repair, in its own distance
        step_distance = (total_cost(res.solution, sol, policy.ranks, refs, policy.grows_memory, policy.algorithm_batch)
                         - CHANGE_WEIGHT * len(moved))
        (weighed if len(extra) <= 1 and step_distance <= HEADROOM_STEP_DOUBLINGS * DOUBLING else too_far).append(entry)
    shown = ", ".join(tight)
    if not weighed:
        more = ""
        if too_far:
            _, far = min(too_far, key=lambda w: w[0])
            # the whole alternative, from the pasted config: a diff from the nearest repair would list the pasted
            # values the alternative keeps (micro batch 40 where the repair said 20) as if they were further moves
            _, far_diff, _ = diff_rows(fw, changes_between(values, far.result.solution))
            more = ("; a repair that keeps it changes more keys, or one of the algorithm's batch sizes, instead of "
                    "this one: " + " ".join(new for _, _, new in far_diff))
        notes.append(f"tight: the repair leaves the {shown} within the memory model's observed error ({pct}) of the "
                     f"usable memory; no repair of as few keys, or of one more key moving its numbers at most "
                     f"{HEADROOM_STEP_DOUBLINGS} doublings further, keeps that headroom{more}")
        return res, None, None
    (_, extra, distance, count, from_nearest), chosen = min(weighed, key=lambda w: w[0])
    got = chosen.result
    step_done = Headroom(tight, dict(res.solution), {n: regular.why(n, got.solution[n]) for n in beyond(got.solution)})
    if not from_nearest and count <= len(res.changes):  # as few keys as the nearest: its own solve's proof holds
        notes.append(f"the nearest repair left the {shown} within the memory model's observed error ({pct}) of the "
                     "usable memory; this one keeps that headroom")
        plain = repair_result(ruleset, values, got.solution, got.objective, got.status, got.wall_time_s,
                              method=got.method, evaluated=got.evaluated)
        return plain, None, step_done
    more = "with one more key" if count > len(res.changes) else "with as many keys"
    notes.append(f"the nearest repair leaves the {shown} within the memory model's observed error ({pct}) of the "
                 f"usable memory; the answer below keeps that headroom {more}")
    # found from the nearest repair, or with more keys than it: not the nearest valid config, whatever its solve proved
    answer = repair_result(ruleset, values, got.solution, distance + CHANGE_WEIGHT * count,
                           "feasible", res.wall_time_s + got.wall_time_s, method=got.method,
                           evaluated=res.evaluated + got.evaluated)
    return answer, res, step_done


def _batch_keys(policy: RepairPolicy, rules: RuleSet) -> set[str]:
    """The batch sizes fix may move (integers that are no parallel size, token budget, memory share or choice)."""
    grid = set(policy.choices) | policy.parallel | policy.token_budgets | policy.permille | policy.unset_only
    return {n for n in (*policy.rules, *policy.memory) if n not in grid and n in rules.variables
            and rules.variables[n].kind == "int"}


def headroom_said(report: FixReport, job: Job, step: Headroom, capacity: dict[str, int]) -> None:
    """Beside each change the headroom step made: the margin it buys in the tight phases (usable less peak, the
    nearest repair's in brackets) and why that value; the JSON carries it as the change's ``headroom``. A key only
    the step moves satisfies no rule: the nearest repair met them all."""
    before = phase_mib(job.spec, step.nearest, capacity)
    after = report.memory_after
    groups: dict[tuple[str, str], list[str]] = {}
    for p in step.tight:
        if p in after and p in before:
            groups.setdefault((f"{(after[p][1] - after[p][0]) / 1024:.1f}",
                               f"{(before[p][1] - before[p][0]) / 1024:.1f}"), []).append(p)
    parts = [f"{now} GiB in {' and '.join(ps)} ({was}{' at the nearest repair' if not i else ''})"
             for i, ((now, was), ps) in enumerate(groups.items())]
    text = "margin " + ", ".join(parts) if parts else "memory headroom"
    for name, why in step.moved.items():
        key = job.fw.native_key(name)
        report.headroom[key] = text + (f"; {why}" if why else "")
        if same_value(step.nearest.get(name), job.values.get(name)):
            report.satisfies[key] = []


# fix's headroom step (``with_headroom``): a repair that keeps the memory model's observed error free may add one key to
# the nearest repair, and move the nearest repair's numbers by at most this many doublings in all (16 -> 4, or two
# values halved): further, the user is better served by the nearest repair and a word that it is tight
HEADROOM_STEP_DOUBLINGS = 2

# The headroom step's work bounds (``with_headroom``), counted the same on any machine and at any load: its answer does
# not depend on the machine's speed (tests/test_fix_load.py), and the seconds it has (what the command has left) are
# only the safety net, whose cut is said. HEADROOM_FLOOR_ROWS: memory rows each of its two searches may price proving
# that the headroom fits nowhere (``tables.Rows``): the fix tests' largest such proof priced 36,866 rows in 1.6 s
# (verl's Qwen2-14B GRPO example on 4x H800, tests/test_fix_published.py), about 43 us a row; HEADROOM_EXACT_WORK:
# CP-SAT deterministic time for a repair of three keys or more when the greedy descent found none. Those searches in
# the fix tests found none: the seconds they had at the default --time-limit cut them at 0.23 to 0.67 units (about
# 1.5 s on a busy 2-core machine; the 14B example above, its scan bounded at 10 rows, spent 5 units in 15 CPU s and
# proved nothing)
HEADROOM_FLOOR_ROWS = 60_000
HEADROOM_EXACT_WORK = 0.5

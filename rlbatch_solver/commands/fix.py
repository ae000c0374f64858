"""``fix``: the nearest valid (and fitting) config to a pasted one, proven or said not to be.

This module runs the steps and fills the report; each step is a module of its own: the pasted config read
(``fix_job``), the search for the nearest repair (``fix_search``), the margin kept when that repair is tight
(``fix_headroom``), the node's RAM (``fix_host``), the ways out when there is no repair (``fix_relax``) and the
report's shape and words (``fix_report``)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError
from ..rules.base import Value
from ..costmodel.efficiency import Efficiency
from ..solver.settings import DEFAULT_TIME_LIMIT_S
from .check import at_data_lengths
from .common import validate_solutions, waste_text
from .fix_report import FixReport, counted_words, diff_rows, phase_mib, with_renames
from .fix_search import repair_once
from .fix_job import Job, read_job
from .fix_host import host_repair, host_said
from .fix_headroom import headroom_said, with_headroom
from .fix_relax import relax, relaxations

# CP-SAT deterministic time for the conflicting rules of a config with no repair (``explain.conflicting_rules``):
# the same set at any load, the seconds (half of what the command has left) its safety net. The fix tests' conflicts
# spent at most 0.17 units (verl-megatron's pinned TP of 3, tests/test_fix_frameworks.py); the assumption solve of a
# MoE on 8x L40S 1.4 (solver/explain.py's docstring, benchmarks/bench_conflict.py)
CONFLICT_WORK = 5.0

if TYPE_CHECKING:
    from .check import MemoryCheck
    from ..deadline import Deadline
    from ..rules.base import RuleSet
    from ..solver.explain import Conflict
    from ..solver.repair import RepairResult


def fix(
    config: Sequence[str] | Mapping[str, Any] | str | Path,
    *,
    framework: str | None = None,
    gpus: int | None = None,
    model: str | ModelCard | None = None,
    gpu: str | None = None,
    keep: Sequence[str] = (),
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    extra_gpus: str | Path | None = None,
    started: float | None = None,
    length_fraction: float = 1.0,
    calibration: "Efficiency | None" = None,
    host_mem_gib: float | None = None,
) -> FixReport:
    """The smallest change that makes a pasted config valid (and, given a GPU and model, fit).

    Only the keys the framework's repair policy names may move (never algorithm settings or
    the GPU count); ``keep`` pins more. When nothing fits, the report carries a minimal set of
    conflicting rules and pins, in words with the config's numbers, and the relaxations that
    were tried (fewer pins, another GPU count, a bigger GPU, a shorter response), each solved.
    ``time_limit_s`` bounds the whole call (counted from ``started``, a ``time.monotonic()`` value, when
    the caller started earlier), not each solve inside it. ``length_fraction`` as in ``check``: memory at the
    data's lengths rather than at the configured maxima. ``config`` and ``framework`` as in ``check`` (a launch
    script's path read as the CLI reads it).
    """
    from ..deadline import Deadline

    job = read_job(config, framework, gpus, model, gpu, keep, extra_gpus, length_fraction, calibration)
    if not (time_limit_s > 0 and math.isfinite(time_limit_s)):
        raise InputError("time-limit", f"{time_limit_s} is not a positive number of seconds.", "pass --time-limit 10.")
    # the whole command within the limit: 5% is left for printing; the repair itself gets most of the rest,
    # what remains explains a failure (conflict, relaxations)
    deadline = Deadline(time_limit_s * 0.95, start=started if started is not None else time.monotonic())
    attempt = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec,
                          deadline=Deadline(min(deadline.left(), time_limit_s * 0.6)))
    res, ruleset, capacity = attempt.result, attempt.ruleset, attempt.capacity
    cut = list(res.cut_short)  # the steps the clock stopped (FixReport.cut_short)
    nearest = None  # the nearest repair, when the answer adds to it for memory headroom
    step = None  # what the headroom step moved, when it did
    if job.memory and res.solution is not None and res.changes:
        # bounded by work (fix_headroom.HEADROOM_FLOOR_ROWS, HEADROOM_EXACT_WORK): what the command has left is only
        # its safety net, a fifth kept for the RAM search and the printing
        res, nearest, step = with_headroom(job.fw, job.policy, job.values, job.kept, job.spec, res, ruleset,
                                           capacity, job.notes, Deadline(deadline.left() * 0.8), cut)
    host_search = None
    if job.memory and host_mem_gib is not None:
        host_search = host_repair(job, res, attempt, host_mem_gib,
                                  Deadline(min(deadline.left() * 0.6, time_limit_s * 0.3)), cut)
        if host_search.result is not None:
            res, nearest, step = host_search.result, None, None
    report = _report(job, res, ruleset)
    if nearest is not None:
        _, report.nearest_diff, _ = diff_rows(job.fw, nearest.changes)
        report.nearest_proven = nearest.proven
    if job.memory:
        from .check import host_check

        report.memory_before = phase_mib(job.spec, job.values, capacity)
        # the node's RAM of the config fix answers with (or of the pasted one, when nothing is repaired)
        answer = res.solution if res.solution is not None else job.values
        report.host = host_check(job.spec, answer, gpu, host_mem_gib)
    if host_search is not None and host_search.pasted is not None:
        host_said(report, job, host_search)
    if res.solution is not None:
        _answered(report, job, res, ruleset, capacity)
        if step is not None:
            headroom_said(report, job, step, capacity)
    else:
        _not_answered(report, job, res, ruleset, attempt.domains, deadline, cut)
    report.cut_short = list(dict.fromkeys(cut))
    report.wall_time_s = deadline.elapsed()
    if report.cut_short:  # the answer is as far as the clock let the steps go: said; where the clock cut the
        # search for the repair itself, not proven (a later step cut leaves the repair's proof, not that step's word)
        report.cut_short_s = report.wall_time_s
        report.cut_short_repair = bool(attempt.result.cut_short)
        report.proven = report.proven and not report.cut_short_repair
    return report


def _memory_of(job: Job) -> "MemoryCheck | None":
    """check's memory verdict for the pasted config (None without --gpu and --model): what fix's header judges by, so
    that it says what check says."""
    from .check import _with_memory

    if not job.memory or job.card is None or not job.gpu:
        return None
    return _with_memory(job.fw, job.card, job.gpu, job.values, job.extra_gpus, job.length_fraction, job.calibration,
                        profile=(None, job.fw.training_data(job.flat)))[1]


def _report(job: Job, res: RepairResult, ruleset: RuleSet) -> FixReport:
    """The report of a repair: the rules the pasted config breaks and the changes, in the framework's keys."""
    checked = ruleset.check(job.values)
    # fix repairs a peak inside the safety margin too, and one over the line only at the maximum lengths, said as check
    # says it (check.at_data_lengths: a tolerated warning where the verdict judges the phase to fit at the data's)
    before = [at_data_lengths(v, job.fw.name, _memory_of(job)) for v in checked.errors + checked.tolerated]
    native, diff, satisfies = diff_rows(job.fw, res.changes, res.rules_now_satisfied)
    report = FixReport(job.fw.name, job.fw.version, job.values, job.refused + before, res.solution, res.changes,
                       native, satisfies, res.status, res.proven, res.wall_time_s, job.memory, notes=job.notes,
                       diff=with_renames(job.renames, diff), upgrade=job.upgrade, unknown_keys=job.unknown,
                       renamed=[u.key for u in job.unknown if u.refused and any(r[0] == u.suggestion
                                                                                 for r in job.renames)]
                       + job.old_names)
    report.method, report.evaluated, report.grid_only = res.method, res.evaluated, res.grid_only
    report.release = job.fw.release_named  # the release named where another's rules judge it (verl 0.9.0)
    report.counted = counted_words(job.fw, job.policy, ruleset)
    return report


def _answered(report: FixReport, job: Job, res: RepairResult, ruleset: RuleSet, capacity: dict[str, int]) -> None:
    """A repair was found: re-checked by the plain checker, paste-ready, its padding and memory said."""
    validate_solutions(ruleset, [res.solution])
    from ..frameworks.overrides import assignment_words

    report.native_after = [word for _, _, new in report.diff for word in assignment_words(new)]
    report.whole = bool(job.written) and job.written <= set(report.renamed)
    report.notes += [n for n in fixed_notes(job, report.diff) if n not in report.notes]
    report.waste = waste_text(job.fw, ruleset, job.values, res.solution)
    report.advice = advice_after(ruleset, job.values, res.solution)
    if job.memory:
        report.memory_after = phase_mib(job.spec, res.solution, capacity)


def fixed_notes(job: Job, diff: list[tuple[str, str, str]]) -> list[str]:
    """What ``check`` of the fixed config says its reading assumed (``Framework.config_notes``), where the changes
    bring a note the pasted config's reading did not (a `swift rollout` server's memory share once --vllm_mode is
    server): the pasted config with each changed key dropped and its new argument (diff: key, old, new) read in."""
    fw = job.fw
    changed = {key.lstrip("-+") for key, _, _ in diff}
    after = {k: v for k, v in job.flat.items() if str(k).lstrip("-+") not in changed}
    after.update(fw.parse([new for _, _, new in diff if not new.startswith("(")])[0])
    return list(fw.config_notes(after, priced=job.memory))  # common.memory_evaluated, as read_job found it)


def advice_after(ruleset: RuleSet, before: Mapping[str, Value], after: Mapping[str, Value]) -> list[tuple[str, str, bool]]:
    """The advice warnings ``after`` breaks, in words, each with whether ``before`` met it (the repair's cost counts
    them, solver/costs.py: the nearest repair leaves one only where every repair as near does)."""
    from ..rules.base import Severity

    had = set(ruleset.failing(before, Severity.WARNING))
    return [(v.rule, v.message, v.rule not in had) for v in ruleset.check(after).warnings if not v.tolerated]


def _not_answered(report: FixReport, job: Job, res: RepairResult, ruleset: RuleSet, domains: dict[str, list[Value]],
                  deadline: Deadline, cut: list[str]) -> None:
    """No repair was found: the closest candidate, the conflicting rules and pins in words, the relaxations tried."""
    from ..rules.base import format_message
    from ..solver.costs import reads_through
    from ..solver.repair import changes_between

    values = job.values
    if res.partial is not None and res.partial != dict(values):
        _, report.partial_diff, _ = diff_rows(job.fw, changes_between(values, res.partial))
        report.partial_broken = list(res.partial_broken)
    report.conflict = _conflict(report, res, ruleset, domains, deadline)
    if report.conflict.cut_short:
        cut.append("the search for the conflicting rules")
    if not report.conflict.rules:
        return
    pinned = {n for n, d in domains.items() if len(d) == 1}
    involved = set().union(*(reads_through(ruleset, r) for r in report.conflict.rules))
    variables = job.fw.ruleset.variables
    # only what the user chose is named as held: a key of the config, a --keep pin, the GPU count; a default the
    # config never mentions (verl's use_torch_compile=True) is no setting of theirs to reconsider
    report.pinned_in_conflict = {job.fw.native_key(n): job.fw.native_value(n, values[n])
                                 for n in sorted(involved & pinned) if n in values and n in variables
                                 and (n in job.kept or job.fw.native_key(n) in job.given
                                      or (job.fw.is_gpu_count_key(job.fw.native_key(n)) and values[n]))}
    env = ruleset.full_env(values)
    report.conflict_text = [(r.id, format_message(r.message, env)) for r in report.conflict.rules]
    report.relaxations_tried = relax(job.fw, job.policy, values, kept=job.kept, involved=involved & pinned,
                                     spec=job.spec, gpu=job.gpu, card=job.card, conflict_ids=report.conflict.ids,
                                     deadline=deadline, extra_gpus=job.extra_gpus,
                                     length_fraction=job.length_fraction, calibration=job.calibration, cut=cut)
    report.relaxations = relaxations(job.fw, report, {job.fw.native_key(k) for k in job.kept}, job.memory)


def _conflict(report: FixReport, res: RepairResult, ruleset: RuleSet, domains: dict[str, list[Value]],
              deadline: Deadline) -> Conflict:
    """Why no repair exists: phases that fit nowhere (proven), else a minimal set of conflicting rules, else the
    memory rules no candidate met."""
    from ..solver.explain import Conflict, conflicting_rules
    from ..solver.repair import _lazy_split

    rules_only, lazy = _lazy_split(ruleset)
    if res.memory_floor:  # proven: these phases need more than the GPU anywhere in the domains
        report.memory_floor = dict(res.memory_floor)
        return Conflict([ruleset.rule(i) for i in res.memory_floor], "infeasible", True)
    conflict = conflicting_rules(rules_only, domains, time_limit_s=max(0.05, deadline.share(0.5)), work=CONFLICT_WORK)
    if not conflict.rules and lazy:
        # the rules alone can hold: memory is what no candidate met (proven when the search was exhausted)
        broken = set(res.partial_broken) or set(ruleset.failing_errors(report.before))
        still = [r for r in lazy if r.id in broken] or lazy
        conflict = Conflict(still, "infeasible" if res.status == "infeasible" else "unknown", False)
    return conflict

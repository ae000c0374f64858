"""``fix``: the nearest valid (and fitting) config to a pasted one, proven or said not to be."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError
from ..frameworks import Framework, get_framework
from ..frameworks.key_names import UnknownKey, findings
from ..rules.base import Rule, Value, Violation
from ..rules.ids import is_memory_rule_id, memory_rule_id, table_phase
from ..costmodel.efficiency import Efficiency
from ..scenario import check_length_fraction
from ..solver.costs import same_value
from ..solver.settings import DEFAULT_TIME_LIMIT_S
from .common import Upgrade, framework_for, read_inputs, read_config, upgrade_check, validate_solutions, waste_text

if TYPE_CHECKING:
    from .headroom_values import RegularValues
    from ..costmodel.host import HostReport
    from ..costmodel.tables import CostSpec
    from ..deadline import Deadline
    from ..frameworks.repair_policies import RepairPolicy
    from ..rules.base import RuleSet
    from ..solver.explain import Conflict
    from ..solver.nearest import NearestResult
    from ..solver.repair import Change, RepairResult


@dataclass(frozen=True)
class Attempt:
    """One repair search: its result, the rule set it ran on (memory rules added when priced), the domains it
    searched and the usable MiB per phase (empty without memory)."""

    result: RepairResult
    ruleset: RuleSet
    domains: dict[str, list[Value]]
    capacity: dict[str, int]


@dataclass
class FixReport:
    framework: str
    version: str
    before: dict[str, Value]
    before_violations: list[Violation]
    after: dict[str, Value] | None
    changes: list[Change]  # in native keys via ``native_changes``
    native_changes: list[tuple[str, Any, Any]]  # (native key, old, new) in the framework's own values
    satisfies: dict[str, list[str]]  # native key -> rule ids broken before that read it
    status: str
    proven: bool
    wall_time_s: float
    memory_evaluated: bool
    memory_before: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase -> (peak MiB, capacity MiB)
    memory_after: dict[str, tuple[float, float]] = field(default_factory=dict)
    conflict: Conflict | None = None
    pinned_in_conflict: dict[str, Any] = field(default_factory=dict)
    relaxations: list[str] = field(default_factory=list)
    native_after: list[str] = field(default_factory=list)  # the changed keys, paste-ready
    notes: list[str] = field(default_factory=list)
    # (native key, old argument, new argument) in the framework's syntax: the diff printed
    diff: list[tuple[str, str, str]] = field(default_factory=list)
    # each conflicting rule in words, with the numbers of the pasted config: (rule id, text)
    conflict_text: list[tuple[str, str]] = field(default_factory=list)
    # every relaxation tried: {"kind", "feasible", "text", "changes": [paste-ready arguments]}
    relaxations_tried: list[dict[str, Any]] = field(default_factory=list)
    method: str = ""  # "direct" (one- and two-key moves evaluated), "cp-sat", or "greedy" (a descent, not proven)
    evaluated: int = 0  # configs the direct search evaluated
    waste: str = ""  # what the repaired config makes the framework pad, in words
    # nothing valid found: the closest candidate (fewest broken rules) as a diff, and what it still breaks
    partial_diff: list[tuple[str, str, str]] = field(default_factory=list)
    partial_broken: list[str] = field(default_factory=list)
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule -> (least MiB anywhere, usable MiB)
    host: HostReport | None = None  # of the answer: the node's RAM (with --gpu and --model)
    # --host-mem given and no repair fits the node: the least host estimate of the configs the search excluded
    host_unfit: HostReport | None = None
    upgrade: Upgrade | None = None  # checked with an older release its keys show: what the newest refuses
    unknown_keys: list[UnknownKey] = field(default_factory=list)  # keys the release lacks: refused or misspelt
    renamed: list[str] = field(default_factory=list)  # those renamed to the key they misspell (--write drops them)
    # the answer adds a key to the nearest repair for memory headroom: that repair's diff, and whether it was proven
    nearest_diff: list[tuple[str, str, str]] = field(default_factory=list)
    nearest_proven: bool = False
    # native key -> what a change made for memory headroom buys (the margin per tight phase) and why its value
    headroom: dict[str, str] = field(default_factory=dict)
    # what the repair's cost counts as changes besides the changed keys, in words ("" when nothing): the objective
    # "proven nearest" is proven for (solver/costs.py)
    counted: str = ""

    @property
    def already_valid(self) -> bool:
        return not self.before_violations and not self.changes and self.after is not None and not self.diff

    def to_dict(self) -> dict[str, Any]:
        args = {k: (o, n) for k, o, n in self.diff}
        return {
            "framework": self.framework,
            "rules_version": self.version,
            "status": self.status,
            "proven_nearest": self.proven,
            "nearest_counts": self.counted,  # what "nearest" counts as changes besides the keys ("" when nothing)
            "valid_before": not self.before_violations,
            "violations_before": [v.to_dict() for v in self.before_violations],
            "changes": [{"key": k, "old": o, "new": n, "old_arg": args.get(k, ("", ""))[0],
                         "new_arg": args.get(k, ("", ""))[1], "satisfies": self.satisfies.get(k, []), "headroom": self.headroom.get(k, "")}
                        for k, o, n in self.native_changes],
            "fixed_config": self.native_after,
            "memory_evaluated": self.memory_evaluated,
            "memory_mib": {p: {"before": b[0], "after": self.memory_after.get(p, (None,))[0], "capacity": b[1]}
                           for p, b in self.memory_before.items()},
            "conflict": [r.id for r in self.conflict.rules] if self.conflict else None,
            "conflict_text": [{"rule": r, "text": t} for r, t in self.conflict_text],
            "pinned_in_conflict": self.pinned_in_conflict,
            "relaxations": self.relaxations,
            "relaxations_tried": self.relaxations_tried,
            "notes": self.notes,
            "upgrade": self.upgrade.to_dict() if self.upgrade is not None else None,
            "unknown_keys": [u.to_dict() for u in self.unknown_keys],
            "renamed_keys": self.renamed,
            "nearest_repair": {"changes": [new for _, _, new in self.nearest_diff], "proven_nearest": self.nearest_proven}
            if self.nearest_diff else None,
            "search": {"method": self.method, "configs_evaluated": self.evaluated,
                       "wall_time_s": round(self.wall_time_s, 3)},
            "waste": self.waste,
            "memory_floor_mib": {r: {"least": a, "usable": b} for r, (a, b) in self.memory_floor.items()},
            "host_memory": self.host.to_dict() if self.host is not None else None,
            "host_memory_unfit": self.host_unfit.to_dict() if self.host_unfit is not None else None,
            "partial": {"changes": [{"key": k, "old_arg": o, "new_arg": n} for k, o, n in self.partial_diff],
                        "still_breaks": self.partial_broken} if self.after is None else None,
        }


def _keep_names(fw: Framework, keep: Sequence[str]) -> set[str]:
    """``--keep`` keys (as written in the config: ``--flag``, dashes, old flag names) -> variable names."""
    by_native: dict[str, set[str]] = {}
    for name in fw.ruleset.variables:
        by_native.setdefault(fw.native_key(name), set()).add(name)
    legacy = fw.legacy_flags
    out = set()
    for k in keep:
        k = k.strip()
        if not k:
            continue
        bare = k[2:] if k.startswith("--") else k
        bare = bare.partition("=")[0].strip()
        for cand in (bare, bare.replace("-", "_"), legacy.get(bare, ""), legacy.get(bare.replace("-", "_"), "")):
            if cand in fw.ruleset.variables:
                out.add(cand)
                break
            if cand in by_native:
                out |= by_native[cand]
                break
        else:
            from ..errors import did_you_mean

            raise InputError("keep", f"'{k}' is not a {fw.name} key we know.{did_you_mean(bare, by_native)}",
                             "name keys as in your config, comma-separated (e.g. data.train_batch_size).")
    return out


def _phase_mib(spec: CostSpec, values: Mapping[str, Value], capacity_mib: Mapping[str, int]) -> dict[str, tuple[float, float]]:
    from ..costmodel.tables import MIB, full_reports

    memory, _ = full_reports(spec, values)
    return {p: (round(r.peak(p) / MIB, 1), float(capacity_mib.get(p, 0))) for p, r in memory.items()}


def _repair_once(fw: Framework, policy: RepairPolicy, values: Mapping[str, Value], *, kept: set[str],
                 spec: CostSpec | None, deadline: Deadline, free: Mapping[str, list] | None = None,
                 excluded: Sequence[Rule] = (), regular: RegularValues | None = None) -> Attempt:
    """One nearest repair (``Attempt``).

    First every one- and two-key move is evaluated directly (checker and memory model, no
    solver model to build: ``solver/nearest.py``); only when none is valid does CP-SAT look for
    a larger repair, told that fewer than three changes cannot work. ``deadline`` bounds both.
    ``excluded``: search rules added to the framework's (the host-RAM exclusions, ``_host_repair``).
    ``regular``: the batch sizes' candidates cut to the values an engineer would pick (the headroom step,
    ``headroom_values.py``); the nearest repair is then the nearest among those.
    """
    from ..deadline import Deadline
    from ..frameworks.repair_policies import direct_search_domains, references, repair_domains
    from ..solver.nearest import nearest_small_repair

    total, seq_len = fw.hardware(values)
    domains = repair_domains(fw.ruleset, policy, dict(values), keep=kept, memory=spec is not None, total_gpus=total,
                             seq_len=seq_len)
    domains.update(free or {})
    if regular is not None:
        domains = regular.filtered(domains, values)
    rules = fw.ruleset.extended(list(excluded), []) if excluded else fw.ruleset
    ruleset, capacity = rules, {}
    if spec is not None:
        from ..costmodel.tables import build_cost_terms

        terms = build_cost_terms(spec, domains, time=False)  # tables are filled lazily: only rows asked for
        ruleset = ruleset.extended(terms.rules, terms.derived)
        capacity = terms.phase_capacity_mib
    if spec is not None and any(is_memory_rule_id(r) for r in ruleset.failing_errors(values)):
        # a phase that fits nowhere in the domains proves at once that there is no repair (a config that fits is
        # itself in the domains: nothing to scan for)
        from ..costmodel.tables import least_memory
        from ..solver.repair import RepairResult

        started = time.monotonic()
        floors = least_memory(terms.derived, domains, deadline=Deadline(deadline.share(0.25)), stop_above=capacity,
                              grows=policy.grows_memory | policy.batch_grows_memory)
        over = {memory_rule_id(fw.ruleset.framework, table_phase(n)): (least, capacity[table_phase(n)])
                for n, least in floors.items() if least is not None and least > capacity[table_phase(n)]}
        if over:
            return Attempt(RepairResult(None, [], None, "infeasible", time.monotonic() - started, method="floor",
                                        memory_floor=over), ruleset, domains, capacity)
    refs = references(policy, dict(values))
    # every integer of a wide range: by rules alone always (cheap to check); with memory (each candidate then
    # prices the phases) only when the grid holds no repair of one or two keys, screened by the rules first;
    # a repair found on the grid with memory is the nearest among the grid's values (render.py says so)
    wide = direct_search_domains(policy, domains, ruleset)
    if regular is not None:
        wide = regular.filtered(wide, values)
    near = nearest_small_repair(ruleset, domains, values, ranks=policy.ranks, references=refs, deadline=deadline,
                                grows=policy.grows_memory, held=policy.algorithm_batch, wide_domains=wide,
                                rules_only=rules if spec is not None else None, wide_when_found=spec is None)
    from ..solver.repair import RepairResult, repair, repair_result

    extra = dict(method="direct", evaluated=near.evaluated)
    if near.solution is not None:
        status = "optimal" if near.complete else "feasible"
        found = repair_result(ruleset, values, near.solution, near.cost, status, near.wall_time_s, **extra)
        if near.beatable:  # its waste or its move of the algorithm's batch costs a key or more: a larger repair may
            # cost less
            found = _cheaper_with_more_keys(ruleset, domains, values, policy, refs, near, found, deadline)
        return Attempt(found, ruleset, domains, capacity)
    if not near.complete or deadline.expired():
        return Attempt(RepairResult(None, [], None, "unknown", near.wall_time_s, partial=near.partial,
                                    partial_broken=near.partial_broken, **extra), ruleset, domains, capacity)
    greedy = None
    if spec is not None and near.partial is not None:
        # memory that needs three keys or more: a greedy descent first (a fair share of the budget), so that
        # the exact search has a solution to beat and the user an answer if it runs out of time
        from ..solver.nearest import greedy_repair

        greedy = greedy_repair(ruleset, domains, values, near.partial, capacity_mib=capacity, ranks=policy.ranks,
                               references=refs, deadline=Deadline(deadline.share(0.3)), grows=policy.grows_memory,
                               held=policy.algorithm_batch)
    # with the greedy answer in hand, the exact search only tries to beat it: a bounded share, so that the
    # command answers in seconds ("feasible, not proven nearest") rather than spending its whole budget; half of
    # what is left when that answer pads beyond the tolerance (its waste costs a key or more: a descent by memory
    # and rules never moves the mini batches that would end it)
    share = 0.5 if greedy is not None and _beyond_keys(ruleset, values, greedy, policy, refs) else 0.1
    exact = Deadline(min(deadline.left(), max(0.5, share * deadline.left()))) if greedy is not None else deadline
    res = repair(ruleset, domains, values, ranks=policy.ranks, references=refs, deadline=exact, min_changes=3,
                 hint=greedy or near.partial, grows=policy.grows_memory, held=policy.algorithm_batch)
    res.evaluated, res.wall_time_s = near.evaluated, res.wall_time_s + near.wall_time_s
    if not near.wide_complete:  # a two-key repair off the grid was not ruled out in time: nothing is proven
        res.status = {"optimal": "feasible", "infeasible": "unknown"}.get(res.status, res.status)
    if greedy is not None:
        greedy_cost = _cost_of(ruleset, values, greedy, policy, refs)
        if res.solution is None or (res.status != "optimal" and greedy_cost < (res.objective or 0)):
            res = repair_result(ruleset, values, greedy, greedy_cost, "feasible", res.wall_time_s, method="greedy",
                                evaluated=near.evaluated)
    if res.solution is None:
        res.partial, res.partial_broken = near.partial, near.partial_broken
    return Attempt(res, ruleset, domains, capacity)


def _cost_of(ruleset: RuleSet, values: Mapping[str, Value], candidate: Mapping[str, Value], policy: RepairPolicy,
             refs: Mapping[str, int]) -> int:
    from ..solver.costs import candidate_cost

    return candidate_cost(ruleset, values, candidate, policy.ranks, refs, policy.grows_memory, policy.algorithm_batch)


def _beyond_keys(ruleset: RuleSet, values: Mapping[str, Value], candidate: Mapping[str, Value], policy: RepairPolicy,
                 refs: Mapping[str, int]) -> bool:
    """``candidate`` costs a changed key or more beyond its own keys (waste beyond the tolerance, a far move of
    the algorithm's batch): a repair of more keys may be nearer."""
    from ..solver.costs import CHANGE_WEIGHT
    from ..solver.repair import changes_between

    keys = len(changes_between(values, candidate))
    return _cost_of(ruleset, values, candidate, policy, refs) > CHANGE_WEIGHT * (keys + 1)


def _cheaper_with_more_keys(ruleset: RuleSet, domains: Mapping[str, list[Value]], values: Mapping[str, Value],
                            policy: RepairPolicy, refs: Mapping[str, int], near: NearestResult, found: RepairResult,
                            deadline: Deadline) -> RepairResult:
    """The direct search's repair (``found``), or a repair of more keys that costs less (``solver/costs.py``: a
    one-key repair that pads most of the step loses to a clean one of three keys). CP-SAT looks for one, told
    how few keys cannot work and what it must beat; "proven nearest" stays only when it proves none exists."""
    from ..deadline import Deadline
    from ..solver.repair import repair

    res = repair(ruleset, domains, values, ranks=policy.ranks, references=refs,
                 deadline=Deadline(deadline.share(0.5)), min_changes=near.max_keys + 1, hint=near.solution,
                 grows=policy.grows_memory, held=policy.algorithm_batch, below=near.cost)
    if res.solution is not None:
        res.method, res.evaluated = "cp-sat", near.evaluated
        res.wall_time_s += found.wall_time_s
        res.status = res.status if found.status == "optimal" else "feasible"
        return res
    if res.status != "infeasible":  # not ruled out in time: the direct search's repair, not proven nearest
        found.status = "feasible"
    found.wall_time_s += res.wall_time_s
    return found


def _diff(fw: Framework, changes: Sequence[Change], readers: Mapping[str, list[str]] | None = None):
    """Changes -> (native (key, old, new), diff (key, old argument, new argument), key -> rules), one row per key."""
    rows: dict[str, list[Any]] = {}
    for c in changes:
        key = fw.native_key(c.name)
        old_arg = fw.assignment(c.name, c.old)
        if old_arg.startswith("(drop"):
            old_arg = f"(no --{key})"
        new_arg = fw.assignment(c.name, c.new)
        old, new = fw.native_value(c.name, c.old), fw.native_value(c.name, c.new)
        rules = list((readers or {}).get(c.name, []))
        if key in rows:  # two variables behind one key (ms-swift's --vllm_mode): first old, last new
            row = rows[key]
            row[2], row[4] = new, new_arg
            row[5] += [r for r in rules if r not in row[5]]
        else:
            rows[key] = [key, old, new, old_arg, new_arg, rules]
    native = [(k, o, n) for k, o, n, _, _, _ in rows.values()]
    diff = [(k, oa, na) for k, _, _, oa, na, _ in rows.values()]
    return native, diff, {k: r for k, _, _, _, _, r in rows.values()}


def fix(
    config: Sequence[str] | Mapping[str, Any] | str | Path,
    *,
    framework: str = "verl",
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
    data's lengths rather than at the configured maxima.
    """
    from ..deadline import Deadline

    job = _job(config, framework, gpus, model, gpu, keep, extra_gpus, length_fraction, calibration)
    if not (time_limit_s > 0 and math.isfinite(time_limit_s)):
        raise InputError("time-limit", f"{time_limit_s} is not a positive number of seconds.", "pass --time-limit 10.")
    # the whole command within the limit: 5% is left for printing; the repair itself gets most of the rest,
    # what remains explains a failure (conflict, relaxations)
    deadline = Deadline(time_limit_s * 0.95, start=started if started is not None else time.monotonic())
    attempt = _repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec,
                           deadline=Deadline(min(deadline.left(), time_limit_s * 0.6)))
    res, ruleset, capacity = attempt.result, attempt.ruleset, attempt.capacity
    nearest = None  # the nearest repair, when the answer adds to it for memory headroom
    step = None  # what the headroom step moved, when it did
    if job.memory and res.solution is not None and res.changes:
        res, nearest, step = _with_headroom(job.fw, job.policy, job.values, job.kept, job.spec, res, ruleset,
                                            capacity, job.notes, Deadline(min(deadline.left() * 0.5, time_limit_s * 0.3)))
    host_search = None
    if job.memory and host_mem_gib is not None:
        host_search = _host_repair(job, res, attempt, host_mem_gib,
                                   Deadline(min(deadline.left() * 0.6, time_limit_s * 0.3)))
        if host_search.result is not None:
            res, nearest, step = host_search.result, None, None
    report = _report(job, res, ruleset)
    if nearest is not None:
        _, report.nearest_diff, _ = _diff(job.fw, nearest.changes)
        report.nearest_proven = nearest.proven
    if job.memory:
        from .check import host_check

        report.memory_before = _phase_mib(job.spec, job.values, capacity)
        # the node's RAM of the config fix answers with (or of the pasted one, when nothing is repaired)
        answer = res.solution if res.solution is not None else job.values
        report.host = host_check(job.spec, answer, gpu, host_mem_gib)
    if host_search is not None and host_search.pasted is not None:
        _host_said(report, job, host_search)
    if res.solution is not None:
        _answered(report, job, res, ruleset, capacity)
        if step is not None:
            _headroom_said(report, job, step, capacity)
    else:
        _not_answered(report, job, res, ruleset, attempt.domains, deadline)
    report.wall_time_s = deadline.elapsed()
    return report


@dataclass
class _HostSearch:
    """fix with the node's RAM given (--host-mem): the host estimate of what the GPU repair answered (``pasted``: of
    the pasted config when it needs no repair; None when it fits), the repair found with the configs that do not fit
    the RAM excluded (``result``, None if none was), and the least estimate of the excluded ones (``least``)."""

    pasted: HostReport | None = None
    result: RepairResult | None = None
    least: HostReport | None = None
    of_repair: bool = False  # ``pasted`` is of the GPU repair's answer, not of the pasted config


def _host_repair(job: _Job, res: RepairResult, attempt: Attempt, host_mem_gib: float, deadline: Deadline
                 ) -> _HostSearch:
    """The nearest repair whose host estimate fits the given RAM, as recommend holds its answers to it
    (commands/host_fit.py): each answer that does not fit is excluded by a search rule on the values it holds of the
    keys its host estimate reads (offload switches, ZeRO stage, sleep level...), and the repair is solved again,
    until one fits, none is left or the time is up. Not proven nearest: a rule may exclude a config whose estimate
    moves only with keys outside it."""
    from ..deadline import Deadline
    from .host_fit import exclude, host_report

    answer = res.solution if res.solution is not None else dict(job.values)
    host = host_report(job.spec, answer, job.gpu, host_mem_gib)
    if host.fits is not False:
        return _HostSearch()
    search = _HostSearch(pasted=host, least=host, of_repair=bool(res.changes))
    rules: list[Rule] = []
    excluded: set[frozenset] = set()
    current, current_host = answer, host
    while deadline.left() > 0.05:
        rule = exclude(job.spec, attempt.domains, current, current_host, job.gpu, host_mem_gib, excluded)
        if rule is None:
            break
        rules.append(rule)
        again = _repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec,
                             deadline=Deadline(deadline.share(0.5)), excluded=rules).result
        if again.solution is None:
            break
        current, current_host = again.solution, host_report(job.spec, again.solution, job.gpu, host_mem_gib)
        if current_host.fits is not False:
            again.status = {"optimal": "feasible"}.get(again.status, again.status)  # see the docstring
            host_rule = memory_rule_id(job.fw.name, "host")
            again.rules_now_satisfied = {
                n: list(dict.fromkeys(host_rule if r.startswith("search.host_ram.") else r for r in ids))
                for n, ids in again.rules_now_satisfied.items()}
            search.result = again
            return search
        if current_host.peak_bytes < search.least.peak_bytes:
            search.least = current_host
    return search


def _host_said(report: FixReport, job: _Job, search: _HostSearch) -> None:
    """What the host search found, in the report: the pasted config's host excess as a broken rule, and a note (or,
    with no repair that fits the node, the least estimate the search excluded: render.py says what would help)."""
    from .check import host_violation
    from .host_fit import host_report

    # the pasted config's own estimate: ``pasted`` is it unless the GPU repair changed the config
    mine = host_report(job.spec, job.values, job.gpu, search.pasted.ram_gib) if search.of_repair else search.pasted
    over = host_violation(job.fw, mine)
    if over is not None and not any(v.rule == over.rule for v in report.before_violations):
        report.before_violations.append(over)
    host = search.pasted
    whose = "the nearest repair of the rules and GPU memory" if search.of_repair else "your config"
    said = (f"{whose} needs {host.peak_gib:.0f} GiB of the node's RAM at {host.when}, over the {host.limit_gib:.0f} "
            f"usable of {host.ram_gib:.0f} given (--host-mem)")
    if search.result is not None:
        report.notes.append(f"{said}; this repair fits the node (the configs that do not were excluded from the "
                            "search, so it is not proven nearest)")
    else:
        report.host_unfit = search.least


@dataclass
class _Job:
    """What one fix works on: the framework version, the pasted config's values, the pins, the repair policy,
    the memory model (``spec``, None without --gpu and --model) and the notes said so far."""

    fw: Framework
    card: ModelCard | None
    values: dict[str, Value]
    kept: set[str]
    policy: RepairPolicy
    notes: list[str]
    spec: CostSpec | None
    memory: bool
    gpu: str | None
    extra_gpus: str | Path | None
    length_fraction: float
    calibration: "Efficiency | None"
    upgrade: Upgrade | None = None
    given: frozenset[str] = frozenset()  # the config's own keys (as written, less a leading --)
    unknown: list[UnknownKey] = field(default_factory=list)  # keys the release lacks (key_names.py)
    refused: list[Violation] = field(default_factory=list)  # those its parser refuses, as violations
    renames: list[tuple[str, str, str]] = field(default_factory=list)  # refused keys renamed: diff lines


def _job(config: Any, framework: str, gpus: int | None, model: str | ModelCard | None, gpu: str | None,
         keep: Sequence[str], extra_gpus: str | Path | None, length_fraction: float,
         calibration: "Efficiency | None") -> _Job:
    """The pasted config read and checked, its pins, its repair policy and its memory model."""
    from ..frameworks.repair_policies import policy_for

    check_length_fraction(length_fraction)
    asked = get_framework(framework)
    flat, _ = read_config(asked, config)
    fw, version_notes = framework_for(asked, flat)
    unknown, refused, typos = findings(fw.key_list(flat), fw.name, fw.version)
    flat, renames = _renamed(fw, flat, unknown)
    card, values = read_inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus)
    kept = _keep_names(fw, keep)
    policy = policy_for(fw.name, fw.ruleset, values)
    renamed = {old_arg: new_arg for _, old_arg, new_arg in renames}
    notes: list[str] = typos + [
        f"read {old_arg} as {new_arg}, the flag it misspells (the change below renames it)"
        for old_arg, new_arg in renamed.items()] + [
        f"{u.shown}: fix changes values, not key names; rename or remove it by hand"
        for u in unknown if u.refused and not any(o.startswith(u.shown) for o in renamed)] + list(version_notes)
    notes += fw.config_notes(flat)  # what reading the config assumed or could not read (check says it too)
    spec, memory = _memory_spec(fw, card, gpu, extra_gpus, length_fraction, calibration, notes)
    upgrade = upgrade_check(asked, fw, flat, {v.rule for v in fw.ruleset.check(values).errors}, gpus=gpus, model=card)
    given = frozenset(str(k).removeprefix("--") for k in flat)
    return _Job(fw, card, values, kept, policy, notes, spec, memory, gpu, extra_gpus, length_fraction, calibration,
                upgrade, given | {k.replace("-", "_") for k in given}, unknown, refused, renames)


def _renamed(fw: Framework, flat: dict[str, Any], unknown: list[UnknownKey]) -> tuple[dict[str, Any], list[tuple]]:
    """The config with each key the release refuses renamed to the one it misspells (where the config does not set
    that one too), and the renames as diff lines (key, old argument, new argument): the framework stops on the
    misspelt key, so the value can only have been meant for the other."""
    renames = {u.key: u.suggestion for u in unknown if u.refused and u.suggestion and u.suggestion not in flat}
    if not renames:
        return flat, []
    lines = []
    for old, new in renames.items():
        word = _arg_text(fw, old, flat[old])
        lines.append((new, word, _arg_text(fw, new, flat[old])))
    return {renames.get(k, k): v for k, v in flat.items()}, lines


def _with_renames(renames: list[tuple[str, str, str]], diff: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The diff with each renamed key first: a key the repair also changes is one line, from the misspelt argument to
    the repaired one."""
    changed = {key: new for key, _, new in diff}
    lines = [(key, old, changed.get(key, new)) for key, old, new in renames]
    return lines + [line for line in diff if line[0] not in {key for key, _, _ in renames}]


def _arg_text(fw: Framework, key: str, value: Any) -> str:
    """One pasted key and value as the framework's syntax writes it."""
    text = "" if value is True and fw.syntax == "flags" else f" {value}"
    return f"--{key}{text}" if fw.syntax == "flags" else f"{key}={value}"


def _memory_spec(fw: Framework, card: ModelCard | None, gpu: str | None, extra_gpus: str | Path | None,
                 length_fraction: float, calibration: "Efficiency | None", notes: list[str]) -> tuple[CostSpec | None, bool]:
    """The cost spec memory is checked with, and whether it is (given both --gpu and --model; else said in
    ``notes``)."""
    memory = bool(gpu and card)
    if memory:
        from ..catalog.gpus import load_gpu
        from ..costmodel.tables import with_efficiency, with_length_fraction

        return with_efficiency(with_length_fraction(fw.cost_spec(card, load_gpu(gpu, extra_gpus)),
                                                    length_fraction), calibration), True
    if gpu or card:
        from .check import half_given_note

        notes.append(half_given_note(bool(gpu)))
    return None, False


def _report(job: _Job, res: RepairResult, ruleset: RuleSet) -> FixReport:
    """The report of a repair: the rules the pasted config breaks and the changes, in the framework's keys."""
    checked = ruleset.check(job.values)
    before = checked.errors + checked.tolerated  # fix repairs a peak inside the safety margin too
    native, diff, satisfies = _diff(job.fw, res.changes, res.rules_now_satisfied)
    report = FixReport(job.fw.name, job.fw.version, job.values, job.refused + before, res.solution, res.changes,
                       native, satisfies, res.status, res.proven, res.wall_time_s, job.memory, notes=job.notes,
                       diff=_with_renames(job.renames, diff), upgrade=job.upgrade, unknown_keys=job.unknown,
                       renamed=[u.key for u in job.unknown if u.refused and any(r[0] == u.suggestion
                                                                                 for r in job.renames)])
    report.method, report.evaluated = res.method, res.evaluated
    report.counted = _counted(job.fw, job.policy, ruleset)
    return report


def _counted(fw: Framework, policy: RepairPolicy, ruleset: RuleSet) -> str:
    """What the repair's cost counts as changed keys besides the keys themselves (``solver/costs.py``), in words."""
    from ..solver.costs import FREE_BATCH_DOUBLINGS, WASTE_NAME, WASTE_PERMILLE_PER_KEY, WASTE_TOLERANCE_PERMILLE

    parts = []
    if any(d.name == WASTE_NAME for d in ruleset.derived) and not _derived_is_constant(ruleset, WASTE_NAME):
        parts.append(f"each {WASTE_PERMILLE_PER_KEY // 10}% of {fw.waste_words(ruleset)} past "
                     f"{WASTE_TOLERANCE_PERMILLE // 10}%")
    held = sorted(fw.native_key(n) for n in policy.algorithm_batch if n in policy.rules)
    if held:
        free = "one" if FREE_BATCH_DOUBLINGS == 1 else str(FREE_BATCH_DOUBLINGS)
        parts.append(f"each doubling of {', '.join(held)} past {free}")
    return ("counting as a change " + " and ".join(parts)) if parts else ""


def _derived_is_constant(ruleset: RuleSet, name: str) -> bool:
    """The derived quantity ``name`` is a constant in this rule set (verl 0.8's waste: no padding, a failure)."""
    from ..rules.expr import Const

    return any(d.name == name and isinstance(d.expr, Const) for d in ruleset.derived)


def _answered(report: FixReport, job: _Job, res: RepairResult, ruleset: RuleSet, capacity: dict[str, int]) -> None:
    """A repair was found: re-checked by the plain checker, paste-ready, its padding and memory said."""
    validate_solutions(ruleset, [res.solution])
    report.native_after = [new for _, _, new in report.diff]
    report.waste = waste_text(job.fw, ruleset, job.values, res.solution)
    if job.memory:
        report.memory_after = _phase_mib(job.spec, res.solution, capacity)


def _not_answered(report: FixReport, job: _Job, res: RepairResult, ruleset: RuleSet, domains: dict[str, list[Value]],
                  deadline: Deadline) -> None:
    """No repair was found: the closest candidate, the conflicting rules and pins in words, the relaxations tried."""
    from ..rules.base import format_message
    from ..solver.costs import reads_through
    from ..solver.repair import changes_between

    values = job.values
    if res.partial is not None and res.partial != dict(values):
        _, report.partial_diff, _ = _diff(job.fw, changes_between(values, res.partial))
        report.partial_broken = list(res.partial_broken)
    report.conflict = _conflict(report, res, ruleset, domains, deadline)
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
    report.relaxations_tried = _relax(job.fw, job.policy, values, kept=job.kept, involved=involved & pinned,
                                      spec=job.spec, gpu=job.gpu, card=job.card, conflict_ids=report.conflict.ids,
                                      deadline=deadline, extra_gpus=job.extra_gpus,
                                      length_fraction=job.length_fraction, calibration=job.calibration)
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
    conflict = conflicting_rules(rules_only, domains, time_limit_s=max(0.05, deadline.share(0.5)))
    if not conflict.rules and lazy:
        # the rules alone can hold: memory is what no candidate met (proven when the search was exhausted)
        broken = set(res.partial_broken) or set(ruleset.failing_errors(report.before))
        still = [r for r in lazy if r.id in broken] or lazy
        conflict = Conflict(still, "infeasible" if res.status == "infeasible" else "unknown", False)
    return conflict


@dataclass
class _Headroom:
    """What fix's headroom step did: the phases the nearest repair left tight, the nearest repair's values, and each
    variable the answer moves beyond them for that headroom, with why its value (``headroom_values.py``; "" for a
    switch or a size those do not cover)."""

    tight: list[str]
    nearest: dict[str, Value]
    moved: dict[str, str]


def _with_headroom(fw: Framework, policy: RepairPolicy, values: Mapping[str, Value], kept: set[str], spec: CostSpec,
                   res: RepairResult, ruleset: RuleSet, capacity: dict[str, int], notes: list[str], deadline: Deadline
                   ) -> tuple[RepairResult, RepairResult | None, _Headroom | None]:
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
    pasted config breaks at the plain pricing (``ruleset``): the margin is no rule, and is said beside the change."""
    from dataclasses import replace

    from ..costmodel.tables import full_reports
    from ..deadline import Deadline
    from ..frameworks.repair_policies import references
    from ..solver.costs import DOUBLING, total_cost
    from ..solver.repair import CHANGE_WEIGHT, changes_between, repair_result
    from .check import memory_error_log
    from .headroom_values import regular_values

    error = memory_error_log(fw.name)
    if not error or deadline.left() < 0.05:
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
    scratch = _repair_once(fw, policy, values, kept=kept, spec=roomy, deadline=Deadline(deadline.share(0.5)))
    step = _repair_once(fw, policy, res.solution, kept=kept, spec=roomy, deadline=deadline, regular=regular)
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
        distance = _cost_of(attempt.ruleset, values, sol, policy, refs) - CHANGE_WEIGHT * len(changed)
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
            _, far_diff, _ = _diff(fw, changes_between(values, far.result.solution))
            more = ("; a repair that keeps it changes more keys, or one of the algorithm's batch sizes, instead of "
                    "this one: " + " ".join(new for _, _, new in far_diff))
        notes.append(f"tight: the repair leaves the {shown} within the memory model's observed error ({pct}) of the "
                     f"usable memory; no repair of as few keys, or of one more key moving its numbers at most "
                     f"{HEADROOM_STEP_DOUBLINGS} doublings further, keeps that headroom{more}")
        return res, None, None
    (_, extra, distance, count, from_nearest), chosen = min(weighed, key=lambda w: w[0])
    got = chosen.result
    step_done = _Headroom(tight, dict(res.solution), {n: regular.why(n, got.solution[n]) for n in beyond(got.solution)})
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


def _headroom_said(report: FixReport, job: _Job, step: _Headroom, capacity: dict[str, int]) -> None:
    """Beside each change the headroom step made: the margin it buys in the tight phases (usable less peak, the
    nearest repair's in brackets) and why that value; the JSON carries it as the change's ``headroom``. A key only
    the step moves satisfies no rule: the nearest repair met them all."""
    before = _phase_mib(job.spec, step.nearest, capacity)
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


# fix's headroom step (``_with_headroom``): a repair that keeps the memory model's observed error free may add one key to
# the nearest repair, and move the nearest repair's numbers by at most this many doublings in all (16 -> 4, or two
# values halved): further, the user is better served by the nearest repair and a word that it is tight
HEADROOM_STEP_DOUBLINGS = 2


# verl docs/advance/ppo_lora.rst: "set lora_rank to be >= 32" (a 0.5B model at 32 trained as without LoRA); its
# reference config sets lora_rank=32, lora_alpha=32, target_modules=all-linear, rollout.load_format=safetensors
LORA_RANK = 32


def _relax(fw: Framework, policy: RepairPolicy, values: Mapping[str, Value], *, kept: set[str], involved: set[str],
           spec: CostSpec | None, gpu: str | None, card: ModelCard | None, conflict_ids: list[str], deadline: Deadline,
           extra_gpus: str | Path | None, length_fraction: float = 1.0,
           calibration: "Efficiency | None" = None) -> list[dict[str, Any]]:
    """Try each way out of an infeasible repair with a solve; say which work and what they change."""
    from ..frameworks.repair_policies import candidates, hardware_candidates

    tried: list[dict[str, Any]] = []

    from ..deadline import Deadline

    def attempt(kind: str, what: str, *, new_values=None, keep=kept, free=None, new_spec=spec) -> bool:
        if deadline.left() < 0.05:
            tried.append({"kind": kind, "feasible": False, "text": f"{what}: not tried (time limit)", "changes": []})
            return False
        vals = dict(values if new_values is None else new_values)
        res = _repair_once(fw, policy, vals, kept=keep, spec=new_spec, deadline=Deadline(deadline.share(0.3)),
                           free=free).result
        changes = [c for c in res.changes]
        _, diff, _ = _diff(fw, changes)
        if new_values is not None:  # the relaxed values themselves are part of the change
            from ..solver.repair import Change

            moved = [Change(n, values.get(n), v) for n, v in new_values.items() if values.get(n) != v]
            _, first, _ = _diff(fw, moved)
            diff = first + [d for d in diff if d[0] not in {k for k, _, _ in first}]
        ok = res.solution is not None
        args = [new for _, _, new in diff]
        text = f"{what}: " + (" ".join(args) if ok and args else "enough as is" if ok else
                              ("none found within the time limit" if res.status == "unknown"
                                                   else "still no valid config"))
        tried.append({"kind": kind, "feasible": ok, "text": text, "changes": args})
        return ok

    pins = kept & involved
    if kept:
        names = sorted(fw.native_key(k) for k in (pins or kept))
        attempt("unpin", "unpin --keep " + ",".join(names) + ", then", keep=kept - (pins or kept))
    algo = [n for n in policy.algorithm if n in involved and n in values]
    if algo:
        free = {}
        for n in algo:
            spec_n = fw.ruleset.variables[n]
            free[n] = candidates(n, spec_n.kind, spec_n.optional, values[n], policy, total_gpus=1, seq_len=0,
                                 narrow=True)
        attempt("algorithm", ", ".join(f"{fw.native_key(n)} = {values[n]}" for n in algo)
                + " is an algorithm setting, which fix never changes; changing it yourself works", free=free)
    hw = hardware_candidates(policy, dict(values))
    hw = {n: c for n, c in hw.items() if n not in kept}
    memory_conflict = any(is_memory_rule_id(i) for i in conflict_ids)
    if memory_conflict and spec is not None and values.get("lora_rank") == 0 and "lora_rank" not in kept:
        # full fine-tuning does not fit: LoRA keeps gradients and optimizer states for the adapter only, the usual
        # way to train on one small GPU
        attempt("lora", "LoRA instead of full fine-tuning (gradients and optimizer states of the adapter only; "
                "with it a LoRA alpha, target modules and a learning rate ~10x higher, as the framework's LoRA guide "
                "sets them)", new_values={**values, "lora_rank": LORA_RANK})
    if hw and (memory_conflict or involved & set(hw) or not tried or not any(t["feasible"] for t in tried)):
        what = "another GPU count (now " + ", ".join(f"{fw.native_key(n)} = {values[n]}" for n in hw) + ")"
        # more GPUs in the node before another node (whose every all-reduce crosses the network): the node count held
        in_node = {n: c for n, c in hw.items() if policy.hardware[n] == "per_node" and int(values[n]) < 8}
        if not in_node or len(in_node) == len(hw):
            attempt("gpus", what, free=hw)
        elif not attempt("gpus", what, free={**{n: [values[n]] for n in hw}, **in_node}):
            tried.pop()
            attempt("gpus", what, free=hw)
    if memory_conflict and spec is not None:
        lengths = [n for n in policy.lengths if isinstance(values.get(n), int) and n not in kept]
        for n in lengths:
            for factor in (2, 4):
                shorter = max(1, int(values[n]) // factor)
                if attempt("shorter", f"a shorter {fw.native_key(n)} ({values[n]} -> {shorter})",
                           new_values={**values, n: shorter}):
                    break
        from ..catalog.gpus import list_gpus, load_gpu
        from ..costmodel.tables import with_length_fraction

        here = load_gpu(gpu, extra_gpus)
        bigger = sorted((g for g in list_gpus() if g.memory_bytes > here.memory_bytes), key=lambda g: g.memory_bytes)
        for g in bigger[:3]:
            if attempt("bigger_gpu", f"a bigger GPU (--gpu {g.name}, {g.memory_gib:.0f} GiB)",
                       new_spec=with_length_fraction(fw.cost_spec(card, g), length_fraction)):  # a profile is per GPU
                break
    return tried


def relaxations(fw: Framework, report: FixReport, kept: set[str], memory: bool) -> list[str]:
    """What would make an infeasible repair feasible, in words: the relaxations that were solved first."""
    out = [t["text"] for t in report.relaxations_tried if t["feasible"]]
    ids = [r.id for r in report.conflict.rules] if report.conflict else []
    if kept and not any(t["kind"] == "unpin" and t["feasible"] for t in report.relaxations_tried):
        out.append("drop some --keep pins (they are held fixed): " + ", ".join(sorted(kept)))
    if any(is_memory_rule_id(i) for i in ids):
        tried = {t["kind"] for t in report.relaxations_tried}  # one tried and not feasible is no help either
        if "gpus" not in tried:
            out.append("more GPUs (shards the training state further)")
        if "bigger_gpu" not in tried:
            out.append("a GPU with more memory (--gpu)")
        if "shorter" not in tried:
            out.append("a shorter max response length")
        switch = fw.offload_switch
        if switch is None or not report.before.get(switch[0]):  # advice the config has taken already is none
            out.append("CPU offload of params/optimizer (fix already tried the offload switches it may move)")
    if not out and any(k for k in report.pinned_in_conflict if fw.is_gpu_count_key(k)):
        out.append("a different GPU count (the pinned count is part of the conflict)")
    if not out:
        out.append("change one of the pinned values listed with the conflict")
    return out

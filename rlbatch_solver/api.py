"""The Python API: ``check`` a pasted config, ``enumerate`` every valid config.

    >>> import rlbatch_solver as rb
    >>> rb.check(["data.train_batch_size=64", ...], framework="verl", gpus=4).valid
    >>> rb.enumerate(rb.default_scenario(), limit=10).count
"""

from __future__ import annotations

import builtins
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .catalog.models import ModelCard, load_model
from .errors import InputError
from .frameworks import Framework, get_framework
from .frameworks.base import Space
from .frameworks.overrides import load_config_file
from .rules.base import RuleSet, Value, Violation
from .scenario import Scenario, check_length_fraction
from .solver.settings import DEFAULT_TIME_LIMIT_S


@dataclass
class CheckReport:
    framework: str
    version: str
    violations: list[Violation]
    values: dict[str, Value]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    memory: "MemoryCheck | None" = None

    @property
    def valid(self) -> bool:
        return not any(v.severity.value == "error" for v in self.violations)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "valid": self.valid,
            "framework": self.framework,
            "rules_version": self.version,
            "violations": [v.to_dict() for v in self.violations],
            "skipped_rules": [{"rule": r, "why": why} for r, why in self.skipped],
            "notes": self.notes,
        }
        if self.memory is not None:
            out["memory"] = self.memory.to_dict()
        return out


@dataclass
class MemoryCheck:
    """Predicted peak per GPU in each phase of the pasted config, against the GPU's usable memory."""

    gpu: str
    model: str
    capacity_mib: int  # usable: the GPU's memory less the safety margin
    total_mib: int
    phases: dict[str, dict[str, int]]  # phase -> term -> MiB
    peaks: dict[str, int]  # phase -> MiB (the sum of its terms)

    @property
    def fits(self) -> bool:
        return all(p <= self.capacity_mib for p in self.peaks.values())

    def largest_terms(self, phase: str, k: int = 3) -> list[tuple[str, int]]:
        return sorted(self.phases[phase].items(), key=lambda kv: -kv[1])[:k]

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "model": self.model,
            "capacity_mib": self.capacity_mib,
            "total_mib": self.total_mib,
            "fits": self.fits,
            "phases": {p: {"peak_mib": self.peaks[p], "fits": self.peaks[p] <= self.capacity_mib,
                           "largest_terms": [t for t, _ in self.largest_terms(p)], "terms_mib": terms}
                       for p, terms in self.phases.items()},
        }


def _inputs(fw: Framework, flat: Mapping[str, Any], *, gpus: int | None, model: str | ModelCard | None,
            gpu: str | None, extra_gpus: str | Path | None) -> tuple[ModelCard | None, dict[str, Value]]:
    """The model card and rule-variable values of a pasted config, every flag checked whether or not
    this command will use it (an unknown --gpu is an error even without --model)."""
    from .errors import MAX_GPUS, check_size

    check_size("gpus", gpus, f"pass --gpus with at most {MAX_GPUS:,} GPUs.", MAX_GPUS)
    if gpus is not None and gpus < 1:
        raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus N with N >= 1.")
    if gpu is not None:
        from .catalog.gpus import load_gpu

        load_gpu(gpu, extra_gpus)
    card = _model(model)
    values = fw.to_values(flat, gpus=gpus, model=card)
    for name, value in values.items():  # whatever the framework's parser let through: no size beyond range
        check_size(fw.native_key(name) if name in fw.ruleset.variables else name, value,
                   "write it as a whole number of at most a billion.")
    return card, values


def _model(model: str | ModelCard | None) -> ModelCard | None:
    if model is None or isinstance(model, ModelCard):
        return model
    return load_model(model)


def read_config(framework: Framework, config: Sequence[str] | Mapping[str, Any] | str | Path) -> tuple[dict, list[str]]:
    """Pasted tokens, a flat/nested mapping, or a YAML file path -> (flat config, ignored tokens)."""
    if isinstance(config, Mapping):
        from .frameworks.overrides import flatten

        return flatten(config), []
    if isinstance(config, (str, Path)) and Path(config).suffix in (".yaml", ".yml", ".json"):
        return load_config_file(config), []
    if isinstance(config, str):
        config = [config]
    return framework.parse(list(config))


def check(
    config: Sequence[str] | Mapping[str, Any] | str | Path,
    *,
    framework: str = "verl",
    gpus: int | None = None,
    model: str | ModelCard | None = None,
    gpu: str | None = None,
    extra_gpus: str | Path | None = None,
    length_fraction: float = 1.0,
) -> CheckReport:
    """Every rule the config breaks, with its numbers, stage and source.

    Given ``gpu`` and ``model``, also the memory of every phase of the RL step
    against the GPU (memory rules ``<fw>.memory.<phase>``, stage = the phase).
    ``length_fraction``: how long the longest micro batch's sequences are, as a fraction of
    max prompt + response (1.0: every one at the limits, the worst case).
    """
    check_length_fraction(length_fraction)
    fw = get_framework(framework)
    flat, ignored = read_config(fw, config)
    card, values = _inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus)
    ruleset = fw.ruleset
    notes = []
    memory = None
    if gpu and card is not None:
        ruleset, memory = _with_memory(fw, card, gpu, values, extra_gpus, length_fraction)
    elif gpu or card is not None:
        notes.append("memory was not evaluated: give both --gpu and --model to predict out-of-memory per phase")
    else:
        notes.append("memory was not evaluated (no --gpu/--model): this is a pure rule check")
    result = ruleset.check(values)
    if card is None:
        notes.append("no --model given: head-count and context-length rules were not checked")
    return CheckReport(fw.name, fw.version, result.violations, values, result.skipped, ignored, notes, memory)


def _with_memory(fw: Framework, card: ModelCard, gpu_name: str, values: Mapping[str, Value],
                 extra_gpus: str | Path | None, length_fraction: float = 1.0) -> tuple[RuleSet, MemoryCheck]:
    """The rule set plus memory rules for these exact values, and the per-phase breakdown."""
    from .catalog.gpus import load_gpu
    from .costmodel.tables import MIB, build_cost_terms, full_reports, with_length_fraction

    gpu = load_gpu(gpu_name, extra_gpus)
    spec = with_length_fraction(fw.cost_spec(card, gpu), length_fraction)
    terms = build_cost_terms(spec, {k: [v] for k, v in values.items()}, time=False)
    reports, _ = full_reports(spec, values)
    phases = {p: {t: int(-(-b // MIB)) for t, b in r.phases[p].items()} for p, r in reports.items()}
    peaks = {p: int(-(-r.peak(p) // MIB)) for p, r in reports.items()}
    total = int(gpu.memory_bytes // MIB)
    mem = MemoryCheck(gpu.name, card.name, terms.capacity_mib, total, phases, peaks)
    return fw.ruleset.extended(terms.rules, terms.derived), mem


@dataclass
class EnumerateReport:
    framework: str
    version: str
    solutions: list[dict[str, Value]]
    native: list[list[str]]
    complete: bool
    status: str
    raw_size: int
    wall_time_s: float
    space: Space

    @property
    def count(self) -> int:
        return len(self.solutions)


def enumerate(  # noqa: A001 - the public name users expect
    scenario: Scenario,
    *,
    limit: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> EnumerateReport:
    """Every valid config in the scenario's search space (up to ``limit``)."""
    from .solver.model import enumerate_solutions

    fw = get_framework(scenario.framework)
    if scenario.gpu:  # enumerate needs no GPU type, but a mistyped one is still an error
        from .catalog.gpus import load_gpu

        load_gpu(scenario.gpu)
    card = _model(scenario.model)
    space = fw.space(scenario, card)
    ruleset = fw.ruleset.extended(space.extra_rules)
    res = enumerate_solutions(ruleset, space.domains, limit=limit, time_limit_s=time_limit_s)
    validate_solutions(ruleset, res.solutions)
    native = [fw.export(s, space) for s in res.solutions]
    return EnumerateReport(fw.name, fw.version, res.solutions, native, res.complete, res.status,
                           space.raw_size, res.wall_time_s, space)


def validate_solutions(ruleset: RuleSet, solutions: list[dict[str, Value]]) -> None:
    """Re-check every solver answer with the plain checker (solver-independent)."""
    for sol in solutions:
        result = ruleset.check(sol)
        if not result.valid:
            raise AssertionError(f"solver returned an invalid config: {[v.message for v in result.errors]}")




# ----------------------------------------------------------------------------- recommend
@dataclass
class Choice:
    """One ranked config with its numbers."""

    rank: int
    values: dict[str, Value]
    native: list[str]
    step_time_s: float
    phase_seconds: dict[str, float]
    memory: dict[str, Any]  # phase -> MemoryReport
    objective: int
    proven: bool
    tokens_per_s: float
    waste: str = ""  # what the config makes the framework pad, in words ('' when nothing): ranked lower for it

    def peak_mib(self) -> dict[str, float]:
        return {p: r.peak(p) / 2**20 for p, r in self.memory.items()}


@dataclass
class RecommendReport:
    framework: str
    version: str
    scenario: Scenario
    gpu: Any
    model: ModelCard
    choices: list[Choice]
    status: str
    proven: bool
    wall_time_s: float
    capacity_mib: int
    raw_size: int
    conflict: Any = None  # solver.explain.Conflict when nothing fits
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule id -> (least MiB, capacity)
    space: Any = None

    @property
    def best(self) -> Choice | None:
        return self.choices[0] if self.choices else None


OBJECTIVE_SENSE = {"time": False, "memory-headroom": True, "gpus": False}


def _gpu(scenario: Scenario, extra_gpus: str | Path | None = None):
    from .catalog.gpus import load_gpu

    if not scenario.gpu:
        raise InputError("gpu", "no GPU type given.", "pass --gpu (e.g. rtx4090, a100-80gb, h100).")
    return load_gpu(scenario.gpu, extra_gpus)


def prepare(scenario: Scenario, *, with_knobs: bool = True, extra_gpus: str | Path | None = None):
    """Framework, model, GPU, search space and cost terms of a scenario."""
    from .costmodel.tables import build_cost_terms, with_length_fraction

    fw = get_framework(scenario.framework)
    if not scenario.model:
        raise InputError("model", "no model given.", "pass --model (e.g. qwen2.5-7b) or a path to a config.json.")
    card = load_model(scenario.model)
    gpu = _gpu(scenario, extra_gpus)
    space = fw.space(scenario, card, with_knobs=with_knobs)
    spec = with_length_fraction(fw.cost_spec(card, gpu), scenario.length_fraction)
    terms = build_cost_terms(spec, space.domains)
    ruleset = fw.ruleset.extended(space.extra_rules + terms.rules, terms.derived)
    return fw, card, gpu, space, spec, terms, ruleset


def recommend(
    scenario: Scenario,
    *,
    top: int = 5,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    extra_gpus: str | Path | None = None,
    solver_workers: int = 2,
) -> RecommendReport:
    """The fastest (or roomiest) valid configs that fit, best first, with their memory and time.

    ``solver_workers``: CP-SAT threads per solve (a sweep runs one per process).
    """
    from .costmodel.tables import full_reports
    from .solver.optimize import optimize

    if top < 1:
        raise InputError("top", f"{top} must be at least 1.", "pass --top 5.")
    fw, card, gpu, space, spec, terms, ruleset = prepare(scenario, extra_gpus=extra_gpus)
    objective_name = scenario.objective
    if objective_name == "memory-headroom":
        objective = terms.headroom_mib
    elif objective_name == "gpus":
        from .rules.expr import IntVar

        # fewest GPUs first; among equal counts, the fastest (time per sample is far below 10^12 us)
        objective = IntVar("gpus_per_node") * IntVar("nnodes") * 10**12 + terms.time_us_per_sample
    else:
        objective = terms.time_us_per_sample
    objective = _with_waste(ruleset, objective, objective_name, terms)
    from .deadline import Deadline

    deadline = Deadline(time_limit_s)
    res = optimize(ruleset, space.domains, objective, maximize=OBJECTIVE_SENSE[objective_name], top=top,
                   time_limit_s=time_limit_s * 0.8, workers=solver_workers)
    validate_solutions(ruleset, [r.solution for r in res.ranked])
    choices = []
    for i, r in builtins.enumerate(res.ranked):
        memory, seconds = full_reports(spec, r.solution)
        total = sum(seconds.values())
        tokens = _tokens_per_step(r.solution, spec)
        choices.append(Choice(i + 1, r.solution, fw.export(r.solution, space), total, seconds, memory, r.objective,
                              r.proven, tokens / total if total else 0.0,
                              _waste_text(fw, ruleset, r.solution, r.solution)))
    report = RecommendReport(fw.name, fw.version, scenario, gpu, card, choices, res.status, res.proven,
                             res.wall_time_s, terms.capacity_mib, space.raw_size, space=space)
    if not choices and res.status == "infeasible":
        from .solver.explain import conflicting_rules

        report.conflict = conflicting_rules(ruleset, space.domains, time_limit_s=max(0.05, deadline.left()))
        report.memory_floor = memory_floor(ruleset, space.domains, terms)
    return report


def _with_waste(ruleset: RuleSet, objective: Any, objective_name: str, terms: Any) -> Any:
    """The time objective with padded samples counted as if they were real ones.

    verl's v1 trainer pads a step to whole mini batches with synthetic zero-advantage samples
    (``verl.advice.batch_padded``). The compute they take is small (short samples), but a step that
    pads trains on a short last mini batch and spends its budget on samples that teach nothing: an
    expert does not pick it while a config that does not pad is as fast. So a config that pads
    ``w`` permille of its step is ranked as if its time per sample were ``1 + w/1000`` times longer,
    and the report says why (``Choice.waste``).
    """
    from .rules.expr import IntVar
    from .solver.costs import WASTE_NAME

    if objective_name not in ("time", "gpus") or terms.time_us_per_sample is None:
        return objective
    if not any(d.name == WASTE_NAME for d in ruleset.derived):
        return objective
    return objective + (terms.time_us_per_sample * IntVar(WASTE_NAME)) // 1000


def _tokens_per_step(values: Mapping[str, Value], spec: Any = None) -> int:
    """Prompt + response tokens (at their limits) of one RL step: the framework's cost spec knows its keys."""
    if spec is not None and getattr(spec, "tokens_per_step", None) is not None:
        return int(spec.tokens_per_step(values))
    samples = int(values.get("train_batch_size", 0)) * int(values.get("n", 1))
    return samples * (int(values.get("max_prompt_length", 0)) + int(values.get("max_response_length", 0)))


def memory_floor(ruleset: RuleSet, domains: Mapping[str, Any], terms: Any) -> dict[str, tuple[int, int]]:
    """For each memory rule: the least MiB its phase needs anywhere in the space, vs capacity."""
    from .costmodel.tables import least_memory

    return {f"{ruleset.framework}.memory.{name[4:]}": (least, terms.capacity_mib)
            for name, least in least_memory(terms.derived, domains).items()}

__all__ = ["check", "enumerate", "recommend", "CheckReport", "EnumerateReport", "RecommendReport", "InputError",
           "validate_solutions"]


# ----------------------------------------------------------------------------- fix
@dataclass
class FixReport:
    framework: str
    version: str
    before: dict[str, Value]
    before_violations: list[Violation]
    after: dict[str, Value] | None
    changes: list[Any]  # solver.repair.Change, in native keys via ``native_changes``
    native_changes: list[tuple[str, Any, Any]]  # (native key, old, new) in the framework's own values
    satisfies: dict[str, list[str]]  # native key -> rule ids broken before that read it
    status: str
    proven: bool
    wall_time_s: float
    memory_evaluated: bool
    memory_before: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase -> (peak MiB, capacity MiB)
    memory_after: dict[str, tuple[float, float]] = field(default_factory=dict)
    conflict: Any = None
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
    method: str = ""  # "direct" (one- and two-key moves evaluated) or "cp-sat"
    evaluated: int = 0  # configs the direct search evaluated
    waste: str = ""  # what the repaired config makes the framework pad, in words
    # nothing valid found: the closest candidate (fewest broken rules) as a diff, and what it still breaks
    partial_diff: list[tuple[str, str, str]] = field(default_factory=list)
    partial_broken: list[str] = field(default_factory=list)
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule -> (least MiB anywhere, usable MiB)

    @property
    def already_valid(self) -> bool:
        return not self.before_violations and not self.changes and self.after is not None

    def to_dict(self) -> dict[str, Any]:
        args = {k: (o, n) for k, o, n in self.diff}
        return {
            "framework": self.framework,
            "rules_version": self.version,
            "status": self.status,
            "proven_nearest": self.proven,
            "valid_before": not self.before_violations,
            "violations_before": [v.to_dict() for v in self.before_violations],
            "changes": [{"key": k, "old": o, "new": n, "old_arg": args.get(k, ("", ""))[0],
                         "new_arg": args.get(k, ("", ""))[1], "satisfies": self.satisfies.get(k, [])}
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
            "search": {"method": self.method, "configs_evaluated": self.evaluated,
                       "wall_time_s": round(self.wall_time_s, 3)},
            "waste": self.waste,
            "memory_floor_mib": {r: {"least": a, "usable": b} for r, (a, b) in self.memory_floor.items()},
            "partial": {"changes": [{"key": k, "old_arg": o, "new_arg": n} for k, o, n in self.partial_diff],
                        "still_breaks": self.partial_broken} if self.after is None else None,
        }


def _keep_names(fw: Framework, keep: Sequence[str]) -> set[str]:
    """``--keep`` keys (as written in the config: ``--flag``, dashes, old flag names) -> variable names."""
    import sys

    by_native: dict[str, set[str]] = {}
    for name in fw.ruleset.variables:
        by_native.setdefault(fw.native_key(name), set()).add(name)
    legacy = getattr(sys.modules.get(type(fw).__module__), "LEGACY_FLAGS", {})
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
            from .errors import did_you_mean

            raise InputError("keep", f"'{k}' is not a {fw.name} key we know.{did_you_mean(bare, by_native)}",
                             "name keys as in your config, comma-separated (e.g. data.train_batch_size).")
    return out


def _phase_mib(spec: Any, values: Mapping[str, Value], capacity_mib: int) -> dict[str, tuple[float, float]]:
    from .costmodel.tables import MIB, full_reports

    memory, _ = full_reports(spec, values)
    return {p: (round(r.peak(p) / MIB, 1), float(capacity_mib)) for p, r in memory.items()}


def _repair_once(fw: Framework, policy: Any, values: Mapping[str, Value], *, kept: set[str], spec: Any,
                 deadline: Any, free: Mapping[str, list] | None = None):
    """One nearest repair: (result, rule set used, domains, usable MiB or 0 without memory).

    First every one- and two-key move is evaluated directly (checker and memory model, no
    solver model to build: ``solver/nearest.py``); only when none is valid does CP-SAT look for
    a larger repair, told that fewer than three changes cannot work. ``deadline`` bounds both.
    """
    from .deadline import Deadline
    from .frameworks.repair_policies import references, repair_domains
    from .solver.nearest import nearest_small_repair

    total, seq_len = fw.hardware(values)
    domains = repair_domains(fw.ruleset, policy, dict(values), keep=kept, memory=spec is not None, total_gpus=total,
                             seq_len=seq_len)
    domains.update(free or {})
    ruleset, capacity = fw.ruleset, 0
    if spec is not None:
        from .costmodel.tables import build_cost_terms

        terms = build_cost_terms(spec, domains, time=False)  # tables are filled lazily: only rows asked for
        ruleset = ruleset.extended(terms.rules, terms.derived)
        capacity = terms.capacity_mib
    refs = references(policy, dict(values))
    near = nearest_small_repair(ruleset, domains, values, ranks=policy.ranks, references=refs, deadline=deadline,
                                grows=policy.grows_memory)
    from .solver.repair import RepairResult, repair, repair_result

    extra = dict(method="direct", evaluated=near.evaluated)
    if near.solution is not None:
        status = "optimal" if near.complete else "feasible"
        return repair_result(ruleset, values, near.solution, near.cost, status, near.wall_time_s, **extra), \
            ruleset, domains, capacity
    if not near.complete or deadline.expired():
        return RepairResult(None, [], None, "unknown", near.wall_time_s, partial=near.partial,
                            partial_broken=near.partial_broken, **extra), ruleset, domains, capacity
    if spec is not None:  # a phase that fits nowhere in the domains proves there is no repair, at once
        from .costmodel.tables import least_memory

        floors = least_memory(terms.derived, domains, deadline=Deadline(deadline.share(0.25)), stop_above=capacity)
        over = {f"{fw.ruleset.framework}.memory.{n[4:]}": (least, capacity) for n, least in floors.items()
                if least is not None and least > capacity}
        if over:
            return RepairResult(None, [], None, "infeasible", near.wall_time_s, partial=near.partial,
                                partial_broken=near.partial_broken, memory_floor=over, **extra), \
                ruleset, domains, capacity
    res = repair(ruleset, domains, values, ranks=policy.ranks, references=refs, deadline=deadline, min_changes=3,
                 hint=near.partial, grows=policy.grows_memory)
    res.evaluated, res.wall_time_s = near.evaluated, res.wall_time_s + near.wall_time_s
    if res.solution is None:
        res.partial, res.partial_broken = near.partial, near.partial_broken
    return res, ruleset, domains, capacity


def _diff(fw: Framework, changes: Sequence[Any], readers: Mapping[str, list[str]] | None = None):
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
    from .frameworks.repair_policies import policy_for
    from .solver.explain import conflicting_rules

    check_length_fraction(length_fraction)
    fw = get_framework(framework)
    flat, _ = read_config(fw, config)
    card, values = _inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus)
    kept = _keep_names(fw, keep)
    policy = policy_for(fw.name, fw.ruleset, values)
    notes: list[str] = []
    spec = None
    memory = bool(gpu and card)
    if memory:
        from .catalog.gpus import load_gpu
        from .costmodel.tables import with_length_fraction

        try:
            spec = with_length_fraction(fw.cost_spec(card, load_gpu(gpu, extra_gpus)), length_fraction)
        except InputError as e:
            if e.field != "framework":
                raise
            memory = False
            notes.append(f"{fw.name} has no cost model yet: memory was not evaluated")
    elif gpu or card:
        notes.append("memory was not evaluated: give both --gpu and --model")
    from .deadline import Deadline

    if not (time_limit_s > 0 and math.isfinite(time_limit_s)):
        raise InputError("time-limit", f"{time_limit_s} is not a positive number of seconds.", "pass --time-limit 10.")
    # the whole command within the limit: 5% is left for printing; the repair itself gets most of the rest,
    # what remains explains a failure (conflict, relaxations)
    deadline = Deadline(time_limit_s * 0.95, start=started if started is not None else time.monotonic())
    res, ruleset, domains, capacity = _repair_once(fw, policy, values, kept=kept, spec=spec,
                                                   deadline=Deadline(min(deadline.left(), time_limit_s * 0.6)))
    before = ruleset.check(values).errors
    native, diff, satisfies = _diff(fw, res.changes, res.rules_now_satisfied)
    report = FixReport(fw.name, fw.version, values, before, res.solution, res.changes, native, satisfies,
                       res.status, res.proven, res.wall_time_s, memory, notes=notes, diff=diff)
    report.method, report.evaluated = res.method, res.evaluated
    if memory:
        report.memory_before = _phase_mib(spec, values, capacity)
    if res.solution is not None:
        validate_solutions(ruleset, [res.solution])
        report.native_after = [new for _, _, new in diff]
        report.waste = _waste_text(fw, ruleset, values, res.solution)
        if memory:
            report.memory_after = _phase_mib(spec, res.solution, capacity)
        report.wall_time_s = deadline.elapsed()
        return report
    from .rules.base import format_message
    from .solver.costs import reads_through
    from .solver.repair import changes_between, _lazy_split

    if res.partial is not None and res.partial != dict(values):
        _, report.partial_diff, _ = _diff(fw, changes_between(values, res.partial))
        report.partial_broken = list(res.partial_broken)
    from .solver.explain import Conflict

    rules_only, lazy = _lazy_split(ruleset)
    if res.memory_floor:  # proven: these phases need more than the GPU anywhere in the domains
        report.conflict = Conflict([ruleset.rule(i) for i in res.memory_floor], "infeasible", True)
        report.memory_floor = dict(res.memory_floor)
    else:
        report.conflict = conflicting_rules(rules_only, domains, time_limit_s=max(0.05, deadline.share(0.5)))
    if not report.conflict.rules and lazy:
        # the rules alone can hold: memory is what no candidate met (proven when the search was exhausted)
        broken = set(res.partial_broken) or set(ruleset.failing_errors(values))
        still = [r for r in lazy if r.id in broken] or lazy
        report.conflict = Conflict(still, "infeasible" if res.status == "infeasible" else "unknown", False)
    if report.conflict.rules:
        pinned = {n for n, d in domains.items() if len(d) == 1}
        involved = set().union(*(reads_through(ruleset, r) for r in report.conflict.rules))
        variables = fw.ruleset.variables
        report.pinned_in_conflict = {fw.native_key(n) if n in variables else n: fw.native_value(n, values[n])
                                     for n in sorted(involved & pinned) if n in values}
        env = ruleset.full_env(values)
        report.conflict_text = [(r.id, format_message(r.message, env)) for r in report.conflict.rules]
        report.relaxations_tried = _relax(fw, policy, values, kept=kept, involved=involved & pinned, spec=spec,
                                          gpu=gpu, card=card, conflict_ids=report.conflict.ids,
                                          deadline=deadline, extra_gpus=extra_gpus, length_fraction=length_fraction)
        report.relaxations = relaxations(report, {fw.native_key(k) for k in kept}, memory)
    report.wall_time_s = deadline.elapsed()
    return report


def _waste_text(fw: Framework, ruleset: RuleSet, before: Mapping[str, Value], after: Mapping[str, Value]) -> str:
    """What the repaired config makes the framework pad or drop, in words ('' when nothing)."""
    from .solver.costs import waste_of

    if not waste_of(ruleset, after):
        return ""
    return "; ".join(v.message for v in ruleset.check(after).warnings if ".advice.batch_padded" in v.rule)


def _relax(fw: Framework, policy: Any, values: Mapping[str, Value], *, kept: set[str], involved: set[str],
           spec: Any, gpu: str | None, card: ModelCard | None, conflict_ids: list[str], deadline: Any,
           extra_gpus: str | Path | None, length_fraction: float = 1.0) -> list[dict[str, Any]]:
    """Try each way out of an infeasible repair with a solve; say which work and what they change."""
    from .frameworks.repair_policies import candidates, hardware_candidates

    tried: list[dict[str, Any]] = []

    from .deadline import Deadline

    def attempt(kind: str, what: str, *, new_values=None, keep=kept, free=None, new_spec=spec) -> bool:
        if deadline.left() < 0.05:
            tried.append({"kind": kind, "feasible": False, "text": f"{what}: not tried (time limit)", "changes": []})
            return False
        vals = dict(values if new_values is None else new_values)
        res, _, _, _ = _repair_once(fw, policy, vals, kept=keep, spec=new_spec, deadline=Deadline(deadline.share(0.3)),
                                    free=free)
        changes = [c for c in res.changes]
        _, diff, _ = _diff(fw, changes)
        if new_values is not None:  # the relaxed values themselves are part of the change
            from .solver.repair import Change

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
    memory_conflict = any(".memory." in i for i in conflict_ids)
    if hw and (memory_conflict or involved & set(hw) or not tried or not any(t["feasible"] for t in tried)):
        attempt("gpus", "another GPU count (now " + ", ".join(f"{fw.native_key(n)} = {values[n]}" for n in hw) + ")",
                free=hw)
    if memory_conflict and spec is not None:
        lengths = [n for n in policy.lengths if isinstance(values.get(n), int) and n not in kept]
        for n in lengths:
            for factor in (2, 4):
                shorter = max(1, int(values[n]) // factor)
                if attempt("shorter", f"a shorter {fw.native_key(n)} ({values[n]} -> {shorter})",
                           new_values={**values, n: shorter}):
                    break
        from .catalog.gpus import list_gpus, load_gpu
        from .costmodel.tables import with_length_fraction

        here = load_gpu(gpu, extra_gpus)
        bigger = sorted((g for g in list_gpus() if g.memory_bytes > here.memory_bytes), key=lambda g: g.memory_bytes)
        for g in bigger[:3]:
            if attempt("bigger_gpu", f"a bigger GPU (--gpu {g.name}, {g.memory_gib:.0f} GiB)",
                       new_spec=with_length_fraction(fw.cost_spec(card, g), length_fraction)):
                break
    return tried


def relaxations(report: FixReport, kept: set[str], memory: bool) -> list[str]:
    """What would make an infeasible repair feasible, in words: the relaxations that were solved first."""
    out = [t["text"] for t in report.relaxations_tried if t["feasible"]]
    ids = [r.id for r in report.conflict.rules] if report.conflict else []
    if kept and not any(t["kind"] == "unpin" and t["feasible"] for t in report.relaxations_tried):
        out.append("drop some --keep pins (they are held fixed): " + ", ".join(sorted(kept)))
    if any(".memory." in i for i in ids):
        tried = {t["kind"] for t in report.relaxations_tried if t["feasible"]}
        if "gpus" not in tried:
            out.append("more GPUs (shards the training state further)")
        if "bigger_gpu" not in tried:
            out.append("a GPU with more memory (--gpu)")
        if "shorter" not in tried:
            out.append("a shorter max response length")
        out.append("CPU offload of params/optimizer (fix already tried the offload switches it may move)")
    if not out and any(k for k in report.pinned_in_conflict if "gpus" in k or "nnodes" in k or k == "NPROC_PER_NODE"):
        out.append("a different GPU count (the pinned count is part of the conflict)")
    if not out:
        out.append("change one of the pinned values listed with the conflict")
    return out


# ----------------------------------------------------------------------------- explain
@dataclass
class ExplainedRule:
    framework: str
    rule: str
    stage: str
    why: str
    source: str


@dataclass
class ExplainReport:
    text: str
    numbers: dict[str, str]
    rules: list[ExplainedRule]
    check: CheckReport | None = None
    fix: FixReport | None = None
    meaning: list[str] = field(default_factory=list)  # the message in plain words, with its numbers

    @property
    def matched(self) -> bool:
        return bool(self.rules)

    def to_dict(self) -> dict[str, Any]:
        return {
            "matched": self.matched,
            "numbers": self.numbers,
            "meaning": self.meaning,
            "rules": [r.__dict__ for r in self.rules],
            "config_breaks": [v.to_dict() for v in self.check.violations] if self.check else None,
            "fix": self.fix.to_dict() if self.fix else None,
        }


def explain(
    text: str,
    *,
    framework: str | None = None,
    config: Sequence[str] | Mapping[str, Any] | str | Path | None = None,
    gpus: int | None = None,
    model: str | ModelCard | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    started: float | None = None,
) -> ExplainReport:
    """Which of our rules a framework's error message is, in plain words; given the config, its fix."""
    from .frameworks.error_text import match_error

    if not text or not text.strip():
        raise InputError("error text", "is empty.", 'paste the line your job died on, in quotes: rlbatch explain "..."')
    if framework:
        get_framework(framework)  # unknown name -> exit 2
    found = match_error(text, framework)
    rules: list[ExplainedRule] = []
    numbers: dict[str, str] = {}
    meaning: list[str] = []
    for pattern, nums in found:
        numbers.update(nums)
        fw = get_framework(framework or pattern.framework)
        said = pattern.explain(nums)
        if said and said not in meaning:
            meaning.append(said)
        for rid in pattern.rules:
            if rid not in {r.id for r in fw.ruleset.rules}:
                continue  # e.g. an FSDP-only rule of a verl message, asked about a Megatron config
            r = fw.ruleset.rule(rid)
            rules.append(ExplainedRule(fw.name, rid, r.stage.value, r.explanation or r.message,
                                       f"{r.source} (message: {pattern.source})"))
    report = ExplainReport(text, numbers, rules, meaning=meaning)
    if config is not None and found:
        fw_name = framework or found[0][0].framework
        report.check = check(config, framework=fw_name, gpus=gpus, model=model)
        ids = {r.rule for r in rules}
        # keep only the matched rules the config actually breaks, when it breaks any of them
        broken = [r for r in rules if r.rule in {v.rule for v in report.check.violations}]
        if broken:
            report.rules = broken
        elif report.check.valid:
            report.rules = [r for r in rules if r.rule in ids]
        report.fix = fix(config, framework=fw_name, gpus=gpus, model=model, time_limit_s=time_limit_s,
                         started=started if started is not None else time.monotonic())
    return report

"""Cost-model numbers as solver tables and memory limits as rules.

A framework describes which of its variables each phase's memory and time
read (``CostSpec``) and how to turn values into a ``Plan``. From that we build:

* ``mem_<phase>`` (MiB per GPU) and ``us_<phase>`` (microseconds of the phase per
  sample, i.e. per response: the step time divided by ``train_batch_size * n``):
  derived quantities whose expression is a ``Table`` over exactly those
  variables, so the checker and CP-SAT evaluate the same function;
* one rule per phase, ``<fw>.memory.<phase>``: peak <= usable capacity, with
  the stage at which the phase would OOM; a peak inside the safety margin (at most the
  capacity less its fixed part) is reported as a tolerated warning, and searches enforce
  the usable capacity;
* the objectives: total time per sample (the inverse of throughput: with the train
  batch pinned it orders configs exactly as step time does), or the smallest
  memory headroom.

The printed report (every term) comes from ``estimate_memory`` on the same
``Plan``, so the solver's number and the user's number cannot differ.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from .phase import MEMORY_PHASES, TRAIN_PHASES, Phase
from ..rules.base import Derived, Rule, RuleKind, Value
from ..rules.ids import memory_rule_id, table_phase
from ..rules.expr import BoolVar, IntExpr, IntVar, Table, if_then_else, maximum, minimum
from .memory import MemoryReport, estimate_memory, phase_peak
from .efficiency import Efficiency
from .plan import Plan
from .time import estimate_time

MIB = 2**20

PHASE_TEXT = {p: p.description for p in MEMORY_PHASES}


@dataclass
class CostSpec:
    """How one framework's variables feed the cost model."""

    framework: str
    plan: Callable[[Mapping[str, Value], str], Plan]  # (values, phase) -> Plan
    memory_inputs: dict[str, Sequence[str]]  # phase -> variable names its memory reads
    time_inputs: dict[str, Sequence[str]]  # phase -> variable names its time reads
    phases_run: Callable[[Mapping[str, Value]], list[str]]  # phases that run for these values
    source: str = "docs/cost-model.md"
    bool_names: frozenset = field(default_factory=frozenset)
    # samples (responses) one step processes; every time input list must hold what it reads
    samples: Callable[[Mapping[str, Value]], int] = lambda values: 1
    # (phase, "mem" | "time", domains) -> input names the phase cannot read in this space (e.g. the
    # critic's switches when no critic runs): a smaller table, the same function on the space
    unread: Optional[Callable[[str, str, Mapping[str, Sequence[Value]]], set]] = None
    # optional (unset-able) variables the plans read: their tables also read ``<name>_set`` so that
    # "unset" reaches the plan as None, not as the solver's placeholder value
    optional: frozenset = field(default_factory=frozenset)
    # phases that run at the same time on different GPUs, for these values: groups of time phases whose share of
    # the step is their slowest member (OpenRLHF's model groups); a member may be a tuple of phases that run one
    # after another beside the others (max(a, b + c)); phases in no group run one after another.
    # None: every phase after the other. ``concurrency_inputs``: the switches the grouping and the pipeline read.
    concurrency: Optional[Callable[[Mapping[str, Value]], list[tuple]]] = None
    concurrency_inputs: tuple[str, ...] = ()
    # asynchronous training on separate GPU pools, for these values: named stages (pool, phases) that work on
    # different steps' data at once, so a step in the steady state takes its slowest stage (each stage's phases
    # one after another, concurrency groups inside it at their slowest); phases in no stage (the weight sync,
    # which holds both pools) follow. None or []: no pipeline (synchronous training).
    pipeline: Optional[Callable[[Mapping[str, Value]], list[tuple[str, tuple[str, ...]]]]] = None
    # the host-memory layout on the actor's GPUs (costmodel/host.py HostLayout: worker processes per GPU, the other
    # models' start-up loads), for a framework of one process per model and GPU; None: one worker per GPU
    host_layout: Optional[Callable[[Mapping[str, Value]], Any]] = None
    # how many training passes over its completions one generation serves, for these values (TRL's and ms-swift's
    # num_iterations: GRPOTrainer._prepare_inputs generates on every num_iterations-th pass and trains on the
    # buffered completions in between): a step is one pass, so every phase but the updates (the rollout, the
    # log-prob forwards, the weight sync, the offload moves, all done once a generation) counts 1/reuse of it.
    # None: one generation a step
    generation_reuse: Optional[Callable[[Mapping[str, Value]], int]] = None
    # phases ``phases_run`` leaves out for some values a search varies (TRL's and ms-swift's old log-prob forward,
    # run or skipped by the accumulation and generation batch): phase -> the inputs its ``phases_run`` reads. A
    # search prices such a phase in every space whose values may run it, its tables 0 where ``phases_run`` drops
    # it, so the model and the checker (``full_reports``: the concrete values' phases) count the same phases.
    gated_phases: dict[str, Sequence[str]] = field(default_factory=dict)


# the phases a step runs on every training pass; the others run once per generation (CostSpec.generation_reuse)
PER_PASS_PHASES = (Phase.ACTOR_UPDATE, Phase.CRITIC_UPDATE)


def amortised(spec: CostSpec, values: Mapping[str, Value], times: Mapping[str, Any]) -> dict[str, Any]:
    """``times`` (floats, or the solver's microseconds per sample) with each once-a-generation phase's share of one
    step: divided by ``spec.generation_reuse`` (integer division for the solver's, which rounds down by less than a
    microsecond per sample)."""
    reuse = max(1, int(spec.generation_reuse(values))) if spec.generation_reuse else 1
    if reuse == 1:
        return dict(times)
    return {p: t if p in PER_PASS_PHASES else (t // reuse if isinstance(t, IntExpr) else t / reuse)
            for p, t in times.items()}


def _combine(spec: CostSpec, values: Mapping[str, Value], times: Mapping[str, object], mx: Callable) -> object:
    """One step from its phases' times (floats or solver expressions; ``mx``: their maximum): stages of a pipeline
    at the slowest, concurrency groups at their slowest member, everything else one after another (one
    definition for the reports and the solver's objective); the once-a-generation phases at their share of a step
    (``amortised``)."""
    times = amortised(spec, values, times)
    groups = spec.concurrency(values) if spec.concurrency else []
    stages = spec.pipeline(values) if spec.pipeline else []

    def total(parts: list) -> object:
        return functools.reduce(lambda a, b: a + b, parts) if parts else 0

    def phases_of(member) -> tuple:
        return (member,) if isinstance(member, str) else tuple(member)

    def in_sequence(names: Sequence[str]) -> list:
        parts, grouped = [], set()
        for g in groups:
            # a member is a phase or a tuple of phases one after another (one branch of the overlap)
            branches = [[times[p] for p in phases_of(m) if p in names and p in times] for m in g]
            members = [total(b) for b in branches if b]
            if members:
                parts.append(functools.reduce(mx, members))
                grouped.update(p for m in g for p in phases_of(m))
        return parts + [times[p] for p in names if p in times and p not in grouped]

    staged = {p for _, phases in stages for p in phases}
    parts = in_sequence([p for p in times if p not in staged])
    stage_totals = [total(seq) for seq in (in_sequence(phases) for _, phases in stages) if seq]
    if stage_totals:
        parts.append(functools.reduce(mx, stage_totals))
    return total(parts)


# the two pools of a split placement: generation on the rollout pool; the forwards, updates and offload copies on the
# trainer pool (the weight sync, in neither, holds both)
TWO_POOLS: list[tuple[str, tuple[str, ...]]] = [
    ("rollout", (Phase.ROLLOUT,)),
    ("trainer", (*TRAIN_PHASES, Phase.OFFLOAD)),
]


def step_seconds(spec: CostSpec, values: Mapping[str, Value], seconds: Mapping[str, float]) -> float:
    """One RL step from its phases' seconds: the sum, with each concurrent group counted at its slowest and, in
    asynchronous training, the pipeline's slowest stage for the stages."""
    return float(_combine(spec, values, seconds, max))


def phases_seconds(spec: CostSpec, values: Mapping[str, Value], seconds: Mapping[str, float],
                   phases: Sequence[str]) -> float | None:
    """The seconds of the phases ``phases`` together, as the step counts them (``step_seconds`` over those phases
    only: a concurrency group's members at their slowest): what a log or a table that times several of our phases
    as one figure measures (OpenRLHF's timing/make_experience, its benchmark's "Generation"). None when none of
    them is priced."""
    part = {p: seconds[p] for p in phases if p in seconds}
    return step_seconds(spec, values, part) if part else None


def stage_seconds(spec: CostSpec, values: Mapping[str, Value], seconds: Mapping[str, float]) -> list[tuple[str, float, float]]:
    """Asynchronous training: (pool, seconds of its stage per step, idle ratio) for each pipeline stage; the idle
    ratio is the share of the step the pool waits for the other (verl fully_async logs it as
    ``fully_async/trainer/idle_ratio`` and ``fully_async/rollouter/idle_ratio``). [] when nothing is pipelined."""
    stages = spec.pipeline(values) if spec.pipeline else []
    if not stages:
        return []
    step = step_seconds(spec, values, seconds)
    one = CostSpec(spec.framework, spec.plan, {}, {}, spec.phases_run, concurrency=spec.concurrency,
                   generation_reuse=spec.generation_reuse)
    out = []
    for name, phases in stages:
        s = float(_combine(one, values, {p: seconds[p] for p in phases if p in seconds}, max))
        out.append((name, s, max(0.0, 1.0 - s / step) if step > 0 else 0.0))
    return out


def _step_expr(spec: CostSpec, times: Mapping[str, IntExpr], domains: Mapping[str, Sequence[Value]],
               base: Mapping[str, Value]) -> IntExpr:
    """``step_seconds`` as a CP-SAT expression over the phases' time tables: the grouping and the pipeline of every
    assignment of the searched switches, chosen by them (one definition: ``_combine``)."""
    searched = [n for n in spec.concurrency_inputs if len(set(domains.get(n, [base.get(n)]))) > 1]
    if any(n not in spec.bool_names for n in searched):  # the spaces fix them (verl's placement mode)
        raise ValueError(f"a search space varies a non-boolean step-shape input: {searched}")

    def build(i: int, values: dict) -> IntExpr:
        if i == len(searched):
            return _combine(spec, values, times, maximum)
        n = searched[i]
        return if_then_else(BoolVar(n), build(i + 1, {**values, n: True}), build(i + 1, {**values, n: False}))

    return build(0, dict(base))


@dataclass
class CostTerms:
    derived: list[Derived]
    rules: list[Rule]
    time_us_per_sample: IntExpr | None
    headroom_mib: IntExpr | None
    capacity_mib: int
    phases: list[str]
    hard_mib: int = 0  # capacity less the fixed margin: above it a phase cannot run (0: unknown)
    # phase -> MiB its peak must stay under (capacity_mib, or hard_mib for a vLLM rollout: MemoryReport.usable_for)
    phase_capacity_mib: dict[str, int] = field(default_factory=dict)
    # phase -> the searched switches that move its line (TRL's use_vllm searched both ways: a vLLM rollout is held
    # to hard_mib, transformers' generate to capacity_mib) and the line under each assignment of them
    arm_lines: dict[str, tuple[tuple[str, ...], dict[tuple, int]]] = field(default_factory=dict)

    def capacity_of(self, phase: str, values: Mapping[str, Value] | None = None) -> int:
        """The MiB ``phase``'s peak must stay under; for a config (``values``) where a searched switch moves it
        (``arm_lines``), that config's own line."""
        if values is not None and phase in self.arm_lines:
            names, lines = self.arm_lines[phase]
            line = lines.get(tuple(values.get(n) for n in names))
            if line is not None:
                return line
        return self.phase_capacity_mib.get(phase, self.capacity_mib)


def usable_capacity_mib(plan_capacity_bytes: int, margin_bytes: float) -> int:
    return int(math.floor((plan_capacity_bytes - margin_bytes) / MIB))


def hard_capacity_mib(report: MemoryReport) -> int:
    """MiB a phase can never exceed: capacity less the fixed margin (MemoryReport.hard_bytes)."""
    return int(math.floor(report.hard_bytes / MIB))


def _var(name: str, spec: CostSpec) -> IntVar | BoolVar:
    return BoolVar(name) if name in spec.bool_names else IntVar(name)


def build_cost_terms(spec: CostSpec, domains: Mapping[str, Sequence[Value]], *, memory: bool = True,
                     time: bool = True, label: Callable[[str, Value], str] | None = None) -> CostTerms:
    """Derived cost tables, memory rules and objectives for a search space. ``label``: a variable at a value in the
    framework's own words (``Framework.value_words``: --use_vllm true), for a memory rule's message where a searched
    switch moves the line (``arm_lines``); None: name=value."""
    said = label or (lambda n, v: f"{n}={v}")
    base = {name: values[0] for name, values in domains.items()}  # representative for non-inputs
    phases = searched_phases(spec, base)
    derived: list[Derived] = []
    rules: list[Rule] = []
    probe = estimate_memory(spec.plan(base, phases[0]))
    capacity = usable_capacity_mib(probe.capacity_bytes, probe.margin_bytes)
    hard = hard_capacity_mib(probe)
    # the engine is the user's choice (no search or repair moves it), so the base values decide the rollout's line
    phase_capacity = {phase: _line(spec, base, phase) for phase in phases} if memory else {}
    # ... unless the search itself moves the engine (a switch searched both ways): each arm keeps its own line
    arm_lines = {phase: arms for phase in phases if memory
                 and (arms := _lines_by_arm(spec, base, domains, phase, phase_capacity[phase]))[0]}
    headrooms: list[IntExpr] = []
    times: dict[str, IntExpr] = {}

    def inputs(phase: str, names: Sequence[str], kind: str) -> list[str]:
        drop = spec.unread(phase, kind, domains) if spec.unread else set()
        return [n for n in dict.fromkeys(names) if n in domains and n not in drop]

    def table_inputs(names: Sequence[str]) -> tuple:
        flags = tuple(BoolVar(f"{n}_set") for n in names if n in spec.optional)
        return tuple(_var(n, spec) for n in names) + flags

    def fn_for(phase: str, names: Sequence[str], kind: str):
        opt = [n for n in names if n in spec.optional]

        def fn(*vals):
            env = dict(base)
            env.update(zip(names, vals))
            for n, is_set in zip(opt, vals[len(names):]):
                if not is_set:
                    env[n] = None
            if phase in spec.gated_phases and phase not in spec.phases_run(env):
                return 0  # this combination skips the phase (CostSpec.gated_phases)
            plan = spec.plan(env, phase)
            if kind == "mem":
                return int(math.ceil(phase_peak(plan, phase) / MIB))
            seconds = estimate_time(plan).phases.get(phase, 0.0)
            return int(round(seconds * 1e6 / max(1, spec.samples(env))))

        # every model built from these terms (the optimum, then the runners-up) and the checker ask
        # for the same rows: each is computed once
        return functools.lru_cache(maxsize=None)(fn)

    for phase in phases:
        if memory:
            names = inputs(phase, [*spec.memory_inputs[phase], *spec.gated_phases.get(phase, ())], "mem")
            mem = Table(f"mem_{phase}", table_inputs(names), fn_for(phase, names, "mem"))
            derived.append(Derived(f"mem_{phase}", mem, f"peak MiB per GPU in {PHASE_TEXT[phase]}"))
            var = IntVar(f"mem_{phase}")
            line = phase_capacity[phase]

            def why(line: int) -> str:
                return ("capacity less the safety margin" if line == capacity else
                        "capacity less CUDA contexts and NCCL buffers; the engine's own budget is measured at start-up")

            usable = f"{line / 1024:.1f} GiB usable ({why(line)})"
            line_expr: IntExpr | int = line
            if phase in arm_lines:
                names, lines = arm_lines[phase]
                usable = ", ".join(f"{lines[combo] / 1024:.1f} GiB usable with "
                                   f"{' '.join(said(n, v) for n, v in zip(names, combo))} ({why(lines[combo])})"
                                   for combo in lines)
                line_expr = _line_expr(names, lines)
            rules.append(Rule(
                memory_rule_id(spec.framework, phase),
                var <= line_expr,
                f"{PHASE_TEXT[phase]} needs {{mem_{phase}:gib}} GiB per GPU; the GPU has {usable}: out of memory",
                Phase(phase),
                f"rlbatch-solver cost model ({spec.source})",
                explanation=f"the {phase} phase does not fit in GPU memory",
                tolerance=var <= hard,
                tolerance_message=(
                    f"{PHASE_TEXT[phase]} needs {{mem_{phase}:gib}} GiB per GPU: inside the safety margin, above "
                    f"the {capacity / 1024:.1f} GiB usable but within the {hard / 1024:.1f} GiB left after CUDA "
                    f"contexts and NCCL buffers. "
                    f"It may run, or fail on allocator fragmentation; searches keep the margin"),
                kind=RuleKind.MEMORY,
            ))
            headrooms.append(line_expr - var)
    if time:
        for phase, names in spec.time_inputs.items():
            if phase not in phases and phase in MEMORY_PHASES:
                continue
            names = inputs(phase, [*names, *spec.gated_phases.get(phase, ())], "time")
            t = Table(f"us_{phase}", table_inputs(names), fn_for(phase, names, "time"))
            derived.append(Derived(f"us_{phase}", t, f"microseconds of {phase} per sample"))
            times[phase] = IntVar(f"us_{phase}")
    time_us = _step_expr(spec, times, domains, base) if times else None
    headroom = None
    if headrooms:
        headroom = headrooms[0]
        for h in headrooms[1:]:
            headroom = minimum(headroom, h)
    return CostTerms(derived, rules, time_us, headroom, capacity, phases, hard, phase_capacity, arm_lines)


def _line(spec: CostSpec, values: Mapping[str, Value], phase: str) -> int:
    """MiB the phase's peak must stay under for these values (MemoryReport.usable_for)."""
    return int(math.floor(estimate_memory(spec.plan(values, phase)).usable_for(phase) / MIB))


def _lines_by_arm(spec: CostSpec, base: Mapping[str, Value], domains: Mapping[str, Sequence[Value]], phase: str,
                  line: int) -> tuple[tuple[str, ...], dict[tuple, int]]:
    """The searched switches among the phase's memory inputs whose other value moves its line, and the line under
    each assignment of them; ((), {}) where none does (the usual case: the engine is the user's choice)."""
    import itertools

    moving = tuple(n for n in dict.fromkeys(spec.memory_inputs.get(phase, ()))
                   if n in spec.bool_names and len(set(domains.get(n, ()))) > 1
                   and any(_line(spec, {**base, n: v}, phase) != line for v in set(domains[n]) - {base.get(n)}))
    if not moving:
        return (), {}
    combos = itertools.product(*(list(dict.fromkeys(domains[n])) for n in moving))
    return moving, {combo: _line(spec, {**base, **dict(zip(moving, combo))}, phase) for combo in combos}


def _line_expr(names: Sequence[str], lines: Mapping[tuple, int]) -> IntExpr | int:
    """The line as an expression of the switches that move it (``_lines_by_arm``)."""
    if not names:
        return lines[()]
    first, rest = names[0], names[1:]
    by = {v: _line_expr(rest, {c[1:]: x for c, x in lines.items() if c[0] == v}) for v in {c[0] for c in lines}}
    if set(by) == {True, False}:
        return if_then_else(BoolVar(first), by[True], by[False])
    raise ValueError(f"a line moved by a non-boolean switch: {first}")  # _lines_by_arm takes bool switches only


def searched_phases(spec: CostSpec, base: Mapping[str, Value]) -> list[str]:
    """The phases a search prices: those ``base`` runs and every gated phase (``CostSpec.gated_phases``), in
    ``MEMORY_PHASES``' order."""
    if not spec.gated_phases:
        return spec.phases_run(base)
    run = set(spec.phases_run(base)) | set(spec.gated_phases)
    return [p for p in MEMORY_PHASES if p in run]


class Rows:
    """Memory rows a scan may price (``least_memory``, ``memory_floors``): work counted the same on any machine and at
    any load, where seconds are not, so a scan it stops stops at the same row everywhere. ``spent`` rows priced."""

    def __init__(self, limit: int) -> None:
        self.limit, self.spent = limit, 0

    def take(self) -> bool:
        """One more row may be priced (and is counted); False once the bound is spent."""
        if self.spent >= self.limit:
            return False
        self.spent += 1
        return True


def least_memory(derived: Sequence[Derived], domains: Mapping[str, Sequence[Value]], *,
                 deadline=None, stop_above: int | Mapping[str, int] | None = None,
                 grows: frozenset[str] | Mapping[str, frozenset[str]] = frozenset(),
                 rows: Rows | None = None) -> dict[str, int | None]:
    """For each memory table (``mem_<phase>``): the least MiB its phase needs anywhere in ``domains``.

    ``grows``: inputs no phase needs less memory at a larger value of (a repair policy's ``grows_memory`` and
    ``batch_grows_memory``): only their smallest value is evaluated, where the least is (a scan of tens of
    millions of rows becomes one of thousands). A mapping gives each phase its own (phase -> inputs).

    Exact: every combination of the table's inputs is evaluated, smallest tables first. With a
    ``deadline`` a table not finished in time is None (unknown); with ``rows`` one not finished within that bound
    (the same at any load) too. With ``stop_above`` only the answer
    to "does some phase exceed it everywhere?" is exact: a table's scan stops at its first value at or
    below it (that value is returned, an upper bound of the least), and the whole scan stops at the
    first table whose least value exceeds it (one phase that fits nowhere is enough to know). A mapping gives
    each phase its own line (``CostTerms.phase_capacity_mib``).
    """
    import itertools

    def domain(name: str, grown: frozenset[str]) -> list:
        base = name.removesuffix("_set")
        if name not in domains and base != name and base in domains:
            # an optional variable's flag (table_inputs): set where its domain has a value, unset where it has None
            return sorted({v is not None for v in domains[base]})
        values = [v for v in domains.get(name, [False, True]) if v is not None] or [None]
        return [min(values)] if name in grown and values != [None] else values

    tables = []
    for d in derived:
        if d.name.startswith("mem_"):
            grown = grows.get(table_phase(d.name), frozenset()) if isinstance(grows, Mapping) else grows
            doms = [domain(i.name, grown) for i in d.expr.inputs]
            tables.append((math.prod(len(x) for x in doms), d, doms))
    out: dict[str, int | None] = {}
    for _, d, doms in sorted(tables, key=lambda t: t[0]):
        limit = stop_above.get(table_phase(d.name)) if isinstance(stop_above, Mapping) else stop_above
        least = None
        for i, combo in enumerate(itertools.product(*doms)):
            if (deadline is not None and deadline.expired()) or (rows is not None and not rows.take()):
                least = None  # a row can take milliseconds: the clock is read at every row
                break
            value = d.expr.fn(*combo)
            least = value if least is None else min(least, value)
            if limit is not None and least <= limit:
                break  # this phase fits somewhere: its exact least is not needed
        else:
            out[d.name] = least
            if limit is not None and least is not None and least > limit:
                return out
            continue
        out[d.name] = least if limit is not None and least is not None and least <= limit else None
    return out


def memory_floors(terms: CostTerms, domains: Mapping[str, Sequence[Value]], framework: str, *, deadline=None,
                  stop: bool = False, grows: frozenset[str] | Mapping[str, frozenset[str]] = frozenset(),
                  rows: Rows | None = None) -> dict[str, tuple[int, int]]:
    """For each memory rule (its id): the least MiB its phase needs anywhere in ``domains`` and the line it is held
    to. Where the search moves the line (``CostTerms.arm_lines``: TRL's use_vllm searched both ways), each arm is
    scanned once, over its own part of the domains, and the pair is the arm nearest to fitting, with that arm's own
    line. A phase whose scan the ``deadline`` cut short, or the ``rows`` bound every table's scan shares (an arm's
    included), is left out.

    ``stop``: only the answer to "does some phase exceed its line everywhere?" is exact (``least_memory``'s
    ``stop_above``, each arm against its own line): a pair over its line is then a proof that no config of the
    domains fits, and the scan ends at the first one. ``grows``: as ``least_memory``'s."""
    mem = [d for d in terms.derived if d.name.startswith("mem_")]
    plain = [d for d in mem if table_phase(d.name) not in terms.arm_lines]
    lines = {table_phase(d.name): terms.capacity_of(table_phase(d.name)) for d in plain}
    floors = {name: (least, lines[table_phase(name)]) for name, least in least_memory(
        plain, domains, deadline=deadline, stop_above=lines if stop else None, grows=grows, rows=rows).items()
        if least is not None}
    for d in (d for d in mem if table_phase(d.name) in terms.arm_lines):
        if stop and any(least > line for least, line in floors.values()):
            break  # one phase that fits nowhere is enough to know
        phase = table_phase(d.name)
        names, arm_lines = terms.arm_lines[phase]
        arms: list[tuple[int, int]] = []
        for combo in (c for c in arm_lines if all(v in domains.get(n, (v,)) for n, v in zip(names, c))):
            arm = dict(zip(names, combo))
            line = terms.capacity_of(phase, arm)
            least = least_memory([d], {**domains, **{n: [v] for n, v in arm.items()}}, deadline=deadline,
                                 stop_above=line if stop else None, grows=grows, rows=rows).get(d.name)
            if least is None:  # cut short: the phase is unknown
                arms = []
                break
            arms.append((least, line))
            if stop and least <= line:
                break  # this phase fits somewhere: the other arms are not needed
        if arms:
            floors[d.name] = min(arms, key=lambda a: a[0] - a[1])
    return {memory_rule_id(framework, table_phase(name)): pair for name, pair in floors.items()}


def full_reports(spec: CostSpec, values: Mapping[str, Value]) -> tuple[dict[str, MemoryReport], dict[str, float]]:
    """Every memory term of every phase, and seconds per phase, for one concrete config.

    Each phase uses its own plan, exactly as its solver table does.
    """
    phases = spec.phases_run(values)
    mem = {phase: estimate_memory(spec.plan(values, phase)) for phase in phases}
    seconds = {}
    for phase in spec.time_inputs:
        if phase in MEMORY_PHASES and phase not in phases:
            continue
        seconds[phase] = estimate_time(spec.plan(values, phase)).phases.get(phase, 0.0)
    return mem, seconds


def with_length_fraction(spec: CostSpec, fraction: float) -> CostSpec:
    """The same cost model for micro batches whose longest sequences reach ``fraction`` of
    max prompt + response (1.0, the default everywhere, is the worst case: docs/cost-model.md)."""
    from dataclasses import replace

    if fraction == 1.0:
        return spec
    plan = spec.plan
    return replace(spec, plan=lambda values, phase: plan(values, phase).replace(peak_length_fraction=fraction))


def at_mean_lengths(plan: Plan, prompt: float | None, response: float | None) -> Plan:
    """``plan`` timed at these mean lengths (tokens; None keeps the default share of the limit)."""
    changes: dict[str, float] = {}
    if response is not None and plan.response_len > 0:
        changes["avg_response_fraction"] = min(1.0, max(0.0, response / plan.response_len))
    if prompt is not None and plan.prompt_len > 0:
        changes["avg_prompt_fraction"] = min(1.0, max(0.0, prompt / plan.prompt_len))
    return plan.replace(**changes) if changes else plan


def with_mean_lengths(spec: CostSpec, prompt: float | None, response: float | None) -> CostSpec:
    """The same cost model timing the step at the data's mean prompt and response lengths (tokens), instead of
    the default shares of the limits (docs/cost-model.md section 4). Memory keeps its worst case."""
    from dataclasses import replace

    if prompt is None and response is None:
        return spec
    plan = spec.plan
    return replace(spec, plan=lambda values, phase: at_mean_lengths(plan(values, phase), prompt, response))


def with_longest_response(spec: CostSpec, longest: float | None) -> CostSpec:
    """The same cost model timing the step with the longest response the data reaches (tokens; ``Plan.
    longest_response``): the rollout's straggler and ``generate``'s decode steps run to it, never past the limit nor
    under the mean (lengths.response_cap). Memory keeps the limit."""
    from dataclasses import replace

    if longest is None:
        return spec
    plan = spec.plan
    return replace(spec, plan=lambda values, phase: plan(values, phase).replace(longest_response=float(longest)))


def with_response_profile(spec: CostSpec, profile: str | None, dataset: str | None) -> CostSpec:
    """The same cost model timing the step with the length profile a user names (``--response-profile``) and the
    training data the config names (``lengths.dataset_of``), from which the default profile is chosen
    (docs/cost-model.md section 4). Given mean lengths (``with_mean_lengths``) still take precedence."""
    from dataclasses import replace

    if not profile and not dataset:
        return spec
    plan = spec.plan
    return replace(spec, plan=lambda values, phase: plan(values, phase).replace(response_profile=profile or None,
                                                                                dataset=dataset or ""))


def priced_lengths(spec: CostSpec, values: Mapping[str, Value]) -> tuple[float, float]:
    """(mean prompt, mean response) in tokens: the lengths every phase's time is priced at for these values (the
    data's given means, a calibration's, or the length profile's shares of the limits: ``with_mean_lengths``)."""
    from .time import _lengths

    p, r, _ = _lengths(spec.plan(values, Phase.ROLLOUT))
    return p, r


def tokens_per_step(spec: CostSpec, values: Mapping[str, Value]) -> float:
    """Prompt + response tokens one RL step trains on: samples x (mean prompt + mean response), at the same mean
    lengths its step time is priced at (``priced_lengths``), so tokens/s x step time = tokens per step. The one
    definition every framework's tokens/s uses (not the limits: a step does not train every sample at max length)."""
    p, r = priced_lengths(spec, values)
    return float(spec.samples(values)) * (p + r)


def mean_lengths(spec: CostSpec, values: Mapping[str, Value]) -> dict[str, Any]:
    """The mean and maximum prompt and response lengths (tokens) the step time is predicted at, and the length
    profile that set them where no mean was given."""
    from .time import _lengths

    from .lengths import chosen_by, plan_data_prompt, plan_profile, response_cap, straggler_tokens

    plan = spec.plan(values, Phase.ROLLOUT)
    p, r, r_max = _lengths(plan)
    profile = plan_profile(plan)
    data = plan_data_prompt(plan)
    return {"prompt": round(p, 1), "response": round(r, 1), "max_prompt": plan.prompt_len,
            "max_response": plan.response_len, "profile": profile.name, "profile_why": profile.why,
            "profile_how": profile.how(), "profile_fraction": round(profile.fraction(r_max), 3),
            "profile_prompt": profile.prompt_tokens, "profile_prompt_fraction": profile.prompt_fraction,
            "profile_chosen": chosen_by(plan),
            "data_prompt": data.name if data else None, "data_prompt_why": data.why if data else None,
            "dataset": plan.dataset or None,
            "longest": round(straggler_tokens(r, response_cap(plan, r), int(plan.samples_per_step), plan.group_size),
                             1),
            "longest_given": plan.longest_response}


def given_means(prompt: float | None, response: float | None) -> dict[str, float]:
    """The mean lengths a user gave, as given (``mean_lengths`` holds them as priced: at most the limit), for the
    lengths line to say when one was above the config's limit; none where none was given."""
    return {f"{kind}_given": float(v) for kind, v in (("prompt", prompt), ("response", response)) if v is not None}


def with_efficiency(spec: CostSpec, efficiency: "Efficiency | None") -> CostSpec:
    """The same cost model with a calibration profile's efficiencies (``rlbatch calibrate``)."""
    from dataclasses import replace

    if efficiency is None:
        return spec
    plan = spec.plan
    return replace(spec, plan=lambda values, phase: plan(values, phase).replace(efficiency=efficiency))

"""``recommend``: the best valid, fitting config of a scenario by an objective (time per sample by default)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..catalog.models import ModelCard, load_model
from ..errors import InputError
from ..frameworks import get_framework
from ..rules.base import RuleSet, Value
from ..scenario import Scenario
from ..solver.settings import DEFAULT_TIME_LIMIT_S
from .common import validate_solutions, waste_text


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
    from ..catalog.gpus import load_gpu

    if not scenario.gpu:
        raise InputError("gpu", "no GPU type given.", "pass --gpu (e.g. rtx4090, a100-80gb, h100).")
    return load_gpu(scenario.gpu, extra_gpus)


def prepare(scenario: Scenario, *, with_knobs: bool = True, extra_gpus: str | Path | None = None):
    """Framework, model, GPU, search space and cost terms of a scenario."""
    from ..costmodel.tables import build_cost_terms, with_length_fraction

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
    from ..costmodel.tables import full_reports
    from ..solver.optimize import optimize

    if top < 1:
        raise InputError("top", f"{top} must be at least 1.", "pass --top 5.")
    fw, card, gpu, space, spec, terms, ruleset = prepare(scenario, extra_gpus=extra_gpus)
    objective_name = scenario.objective
    if objective_name == "memory-headroom":
        objective = terms.headroom_mib
    elif objective_name == "gpus":
        from ..rules.expr import IntVar

        # fewest GPUs first; among equal counts, the fastest (time per sample is far below 10^12 us)
        objective = IntVar("gpus_per_node") * IntVar("nnodes") * 10**12 + terms.time_us_per_sample
    else:
        objective = terms.time_us_per_sample
    objective = _with_waste(ruleset, objective, objective_name, terms)
    from ..deadline import Deadline

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
                              waste_text(fw, ruleset, r.solution, r.solution)))
    report = RecommendReport(fw.name, fw.version, scenario, gpu, card, choices, res.status, res.proven,
                             res.wall_time_s, terms.capacity_mib, space.raw_size, space=space)
    if not choices and res.status == "infeasible":
        from ..solver.explain import conflicting_rules

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
    from ..rules.expr import IntVar
    from ..solver.costs import WASTE_NAME

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
    from ..costmodel.tables import least_memory

    return {f"{ruleset.framework}.memory.{name[4:]}": (least, terms.capacity_mib)
            for name, least in least_memory(terms.derived, domains).items()}

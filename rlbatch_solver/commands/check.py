"""``check``: a pasted config against the framework's rules (and, with a GPU and model, the memory model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..costmodel.efficiency import Efficiency
from ..frameworks import Framework, get_framework
from ..rules.base import RuleSet, Value, Violation
from ..scenario import check_length_fraction, check_mean_lengths
from .common import framework_for, read_inputs, read_config


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
        return not self.errors

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity.value == "error"]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if v.severity.value == "warning"]

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
            from ..costmodel.accuracy import error_bars_dict

            out["memory"] = self.memory.to_dict()
            out["memory"]["error_bars"] = error_bars_dict(self.framework)
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
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> predicted seconds per RL step
    hard_mib: int = 0  # the GPU's memory less the fixed margin: a peak above it cannot run
    # phase -> the line its peak must stay under, where it is not capacity_mib (a vLLM rollout: hard_mib)
    phase_capacity_mib: dict[str, int] = field(default_factory=dict)
    step_s: float = 0.0  # the phases' seconds combined into one RL step (tables.step_seconds)
    # the mean and maximum lengths the step time is predicted at (tables.mean_lengths), and where the means came
    # from: "given", "calibration" or "assumed" (the default shares of the limits)
    lengths: dict[str, Any] = field(default_factory=dict)
    # asynchronous training on separate pools: (pool, seconds of its stage per step, idle ratio) (tables.stage_seconds)
    stages: list[tuple[str, float, float]] = field(default_factory=list)

    def capacity_of(self, phase: str) -> int:
        return self.phase_capacity_mib.get(phase, self.capacity_mib)

    @property
    def fits(self) -> bool:
        return all(peak <= self.capacity_of(p) for p, peak in self.peaks.items())

    def verdict(self, phase: str | None = None) -> str:
        """"yes", "tight" (inside the safety margin: may run or OOM) or "no" (MemoryReport.verdict), of one
        phase or (None) of the worst phase."""
        if phase is None:
            order = {"yes": 0, "tight": 1, "no": 2}
            return max((self.verdict(p) for p in self.peaks), key=order.__getitem__, default="yes")
        peak = self.peaks[phase]
        return "yes" if peak <= self.capacity_of(phase) else "tight" if peak <= self.hard_mib else "no"

    def largest_terms(self, phase: str, k: int = 3) -> list[tuple[str, int]]:
        return sorted(self.phases[phase].items(), key=lambda kv: -kv[1])[:k]

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "model": self.model,
            "capacity_mib": self.capacity_mib,
            "hard_limit_mib": self.hard_mib,
            "total_mib": self.total_mib,
            "fits": self.fits,
            "verdict": self.verdict(),
            "step_seconds": round(self.step_s, 3),
            "mean_lengths": self.lengths,
            "phase_seconds": self.seconds,
            "pipeline": [{"pool": name, "seconds": round(s, 3), "idle_ratio": round(idle, 3)}
                         for name, s, idle in self.stages],
            "phases": {p: {"peak_mib": self.peaks[p], "fits": self.peaks[p] <= self.capacity_of(p),
                           "capacity_mib": self.capacity_of(p),
                           "verdict": self.verdict(p),
                           "largest_terms": [t for t, _ in self.largest_terms(p)], "terms_mib": terms}
                       for p, terms in self.phases.items()},
        }


def check(
    config: Sequence[str] | Mapping[str, Any] | str | Path,
    *,
    framework: str = "verl",
    gpus: int | None = None,
    model: str | ModelCard | None = None,
    gpu: str | None = None,
    extra_gpus: str | Path | None = None,
    length_fraction: float = 1.0,
    calibration: "Efficiency | None" = None,
    mean_prompt_len: float | None = None,
    mean_response_len: float | None = None,
    mean_lengths_from: str = "given",
) -> CheckReport:
    """Every rule the config breaks, with its numbers, stage and source.

    Given ``gpu`` and ``model``, also the memory of every phase of the RL step
    against the GPU (memory rules ``<fw>.memory.<phase>``, stage = the phase).
    ``length_fraction``: how long the longest micro batch's sequences are, as a fraction of
    max prompt + response (1.0: every one at the limits, the worst case). ``mean_prompt_len`` /
    ``mean_response_len``: the data's mean lengths (tokens) the step time is predicted at (``mean_lengths_from``
    says where they came from); unset, the default shares of the limits (docs/cost-model.md section 4).
    """
    check_length_fraction(length_fraction)
    check_mean_lengths(mean_prompt_len, mean_response_len)
    fw = get_framework(framework)
    flat, ignored = read_config(fw, config)
    fw, version_notes = framework_for(fw, flat)
    card, values = read_inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus)
    ruleset = fw.ruleset
    notes = version_notes + list(fw.config_notes(flat)) + list(fw.value_notes(values))
    memory = None
    if gpu and card is not None:
        ruleset, memory = _with_memory(fw, card, gpu, values, extra_gpus, length_fraction, calibration,
                                       (mean_prompt_len, mean_response_len, mean_lengths_from))
    elif gpu or card is not None:
        notes.append("memory was not evaluated: give both --gpu and --model to predict out-of-memory per phase")
    else:
        notes.append("memory was not evaluated (no --gpu/--model): this is a pure rule check")
    result = ruleset.check(values)
    if card is None:
        notes.append("no --model given: head-count and context-length rules were not checked")
    return CheckReport(fw.name, fw.version, result.violations, values, result.skipped, ignored, notes, memory)


def _with_memory(fw: Framework, card: ModelCard, gpu_name: str, values: Mapping[str, Value],
                 extra_gpus: str | Path | None, length_fraction: float = 1.0,
                 calibration: "Efficiency | None" = None,
                 means: tuple = (None, None, "given")) -> tuple[RuleSet, MemoryCheck]:
    """The rule set plus memory rules for these exact values, and the per-phase breakdown."""
    from ..catalog.gpus import load_gpu
    from ..costmodel.tables import (MIB, build_cost_terms, full_reports, mean_lengths, stage_seconds, step_seconds,
                                    with_efficiency, with_length_fraction, with_mean_lengths)

    gpu = load_gpu(gpu_name, extra_gpus)
    prompt_mean, response_mean, source = means
    spec = with_mean_lengths(with_efficiency(with_length_fraction(fw.cost_spec(card, gpu), length_fraction), calibration),
                             prompt_mean, response_mean)
    terms = build_cost_terms(spec, {k: [v] for k, v in values.items()}, time=False)
    reports, seconds = full_reports(spec, values)
    phases = {p: {t: int(-(-b // MIB)) for t, b in r.phases[p].items()} for p, r in reports.items()}
    peaks = {p: int(-(-r.peak(p) // MIB)) for p, r in reports.items()}
    total = int(gpu.memory_bytes // MIB)
    mem = MemoryCheck(gpu.name, card.name, terms.capacity_mib, total, phases, peaks,
                      {p: round(t, 3) for p, t in seconds.items() if t}, terms.hard_mib,
                      {p: c for p, c in terms.phase_capacity_mib.items() if c != terms.capacity_mib},
                      step_seconds(spec, values, seconds),
                      {**mean_lengths(spec, values),
                       "prompt_from": source if prompt_mean is not None else "assumed",
                       "response_from": source if response_mean is not None else "assumed"},
                      stage_seconds(spec, values, seconds))
    return fw.ruleset.extended(terms.rules, terms.derived), mem

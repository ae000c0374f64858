"""``check``: a pasted config against the framework's rules (and, with a GPU and model, the memory model)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..costmodel.phase import Phase
from ..catalog.models import ModelCard
from ..costmodel.host import HostReport
from ..costmodel.efficiency import Efficiency
from ..frameworks import Framework, get_framework
from ..frameworks.key_names import UnknownKey, findings
from ..rules.base import RuleSet, Value, Violation
from ..rules.ids import memory_rule_id
from ..costmodel.lengths import named
from ..scenario import check_length_fraction, check_longest_response, check_mean_lengths
from .common import Upgrade, framework_for, memory_evaluated, read_inputs, unmodelled_note, vision_note, read_config, upgrade_check


def breaks(violations: list[Violation]) -> list[Violation]:
    """The violations that break a rule (severity error): what makes a config INVALID. A warning, a tolerated one
    included (inside the memory safety margin, or over the line only at the maximum lengths: ``at_data_lengths``),
    is no rule broken. check's VALID and fix's valid_before both count by this one definition."""
    return [v for v in violations if v.severity.value == "error"]


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
    host: "HostReport | None" = None  # the node's RAM (costmodel/host.py)
    upgrade: "Upgrade | None" = None  # checked with an older release its keys show: what the newest refuses
    unknown_keys: list[UnknownKey] = field(default_factory=list)  # keys the release lacks: refused or misspelt
    # where the release runs a micro batch key as another per-GPU size than its name says (verl 0.1: x rollout.n)
    micro_batches: list[dict[str, Any]] = field(default_factory=list)
    # the release the user named where another's rules judge it (verl 0.9.0, 0.9.1's rules: Framework.keys_version)
    release: str = ""

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[Violation]:
        return breaks(self.violations)

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
            "upgrade": self.upgrade.to_dict() if self.upgrade is not None else None,
            "unknown_keys": [u.to_dict() for u in self.unknown_keys],
        }
        if self.micro_batches:
            out["micro_batches_per_gpu"] = self.micro_batches
        if self.memory is not None:
            from ..costmodel.accuracy import error_bars_dict

            out["memory"] = self.memory.to_dict()
            out["memory"]["error_bars"] = error_bars_dict(self.framework)
        if self.host is not None:
            out["host_memory"] = self.host.to_dict()
        return out


def half_given_note(gpu_given: bool) -> str:
    """What to add when one of --gpu and --model was given and memory needs both (check and fix say the same)."""
    missing = "--model (a catalog name or the model's config.json)" if gpu_given else "--gpu"
    return f"memory was not evaluated: give {missing} too, to predict out-of-memory per phase"


def host_check(spec: Any, values: Mapping[str, Value], gpu_name: str, host_mem_gib: float | None,
               node_gpus_given: int = 0) -> HostReport:
    """The host-memory estimate of a config (its rollout and actor-update plans), against the node's RAM: the given
    one, else the standard cloud shape's for the GPU type (said so), else none (the estimate alone).

    ``node_gpus_given``: the GPUs per node of the hardware the user named (recommend's --gpus / --nnodes), where an
    answer may use fewer: the node's RAM is assumed for the node they have, not for the GPUs the answer uses."""
    from ..costmodel.host import estimate_host, gpus_on_node, node_ram

    rollout, update = spec.plan(values, Phase.ROLLOUT), spec.plan(values, Phase.ACTOR_UPDATE)
    layout = spec.host_layout(values) if spec.host_layout is not None else None
    node_gpus = max((layout.node_gpus if layout is not None else 0) or gpus_on_node(update), node_gpus_given)
    return estimate_host(rollout, update, *node_ram(gpu_name, node_gpus, host_mem_gib),
                         framework=spec.framework, layout=layout)


def host_violation(fw: Framework, host: HostReport) -> Violation | None:
    """A host-memory rule broken: an error with the RAM given, a warning with the RAM assumed."""
    from ..rules.base import Severity, Stage

    if host.fits is None or host.fits:
        return None
    assumed = "" if host.ram_from == "given" else f" (RAM assumed: {host.ram_from}; give yours with --host-mem)"
    from ..costmodel.host import HOST_LIMIT_SHARE

    line = ("" if host.limit_share == HOST_LIMIT_SHARE else
            f" (the script's RAY_memory_usage_threshold={host.limit_share:g})")
    return Violation(
        memory_rule_id(fw.name, Phase.HOST),
        f"a node needs {host.peak_gib:.0f} GiB of RAM at {host.when} ({host.largest_terms_text()} GiB); "
        f"{host.ram_gib:.0f} GiB less the share the OOM killer keeps{line} is {host.limit_gib:.0f} GiB{assumed}: host out "
        f"of memory",
        Stage.WORKER_INIT if host.when == "start-up" else Stage.RUNTIME,
        "rlbatch-solver host-memory model (docs/cost-model.md section 11)",
        Severity.ERROR if host.ram_from == "given" else Severity.WARNING)


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
    # phase -> MiB at the data's typical lengths (the mean prompt and response, ``lengths``) where the micro batches
    # are packed (remove padding): a micro batch at the 99.9th percentile of its summed lengths (typical_peaks); the
    # peaks above are at the config's maximum lengths, the worst case it allows
    typical_peaks: dict[str, int] = field(default_factory=dict)
    # the typical peaks are at lengths with a source (the data's profile at the longest of its published runs, or
    # means given): a phase over the line at the maximum lengths is judged to fit when its typical peak is under the
    # line by more than the model's observed error (``fits_at``); False: shown beside the verdict, not judged by
    typical_judged: bool = False
    # the memory model's observed error, median |log(measured/predicted)| of a phase's peak (costmodel/accuracy.py)
    error_log: float = 0.0
    # phase -> its title in the tables where the framework names the GPUs it runs on
    # (``Framework.server_rollout_title``: a rollout server's GPU, not a training GPU)
    titles: dict[str, str] = field(default_factory=dict)

    def capacity_of(self, phase: str) -> int:
        return self.phase_capacity_mib.get(phase, self.capacity_mib)

    def fits_at(self, phase: str) -> bool:
        """Does the phase fit as the memory verdict judges it? At the config's maximum lengths (the worst case it
        allows), or, where the typical peaks are judged by (``typical_judged``), at the data's lengths by more than the
        model's observed error: a packed micro batch holds the tokens its sequences have, not the limits
        (docs/cost-model.md section 11.1)."""
        return self.peaks[phase] <= self.capacity_of(phase) or self.fits_at_data(phase)

    def clears_at_data(self, phase: str) -> bool:
        """The phase's typical peak (judged by: ``typical_judged``, and the phase re-priced at the data's lengths) is
        under the usable memory by more than the model's observed error, whichever side of the line its peak at the
        maximum lengths is on (one test for both sides keeps ``outlook`` monotone in the micro batch)."""
        typical = self.typical_peaks.get(phase)
        if not self.typical_judged or typical is None:
            return False
        return min(typical, self.peaks[phase]) <= self.capacity_of(phase) * math.exp(-self.error_log)

    def fits_at_data(self, phase: str) -> bool:
        """Over the line at the maximum lengths but judged to fit at the data's (``clears_at_data``)."""
        return self.peaks[phase] > self.capacity_of(phase) and self.clears_at_data(phase)

    @property
    def fits(self) -> bool:
        """Every phase's peak at the config's maximum lengths is under its usable memory (peak <= usable): the
        boolean issue 25 keeps in JSON. The verdict that may read the data's lengths is ``fits_judged``."""
        return all(peak <= self.capacity_of(p) for p, peak in self.peaks.items())

    @property
    def fits_judged(self) -> bool:
        """Every phase fits as the verdict judges it (``fits_at``): at the maximum lengths, or at the data's."""
        return all(self.fits_at(p) for p in self.peaks)

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

    def margin_gib(self, phase: str) -> float:
        """How far the phase's peak is under (positive) or over (negative) its usable memory, GiB."""
        return (self.capacity_of(phase) - self.peaks[phase]) / 1024

    def margin_errors(self, phase: str) -> float | None:
        """The same distance in units of the model's observed error: log(usable / peak) / error (None: no error
        measured)."""
        if not self.error_log or self.peaks[phase] <= 0:
            return None
        return math.log(self.capacity_of(phase) / self.peaks[phase]) / self.error_log

    def outlook(self, phase: str | None = None) -> str:
        """"fits" (under the usable memory by more than the model's error), "tight" (within one error of it either
        way, in the safety margin, or fitting at the data's typical lengths but not at the maximum ones) or "OOM",
        of one phase or (None) of the worst phase."""
        if phase is None:
            order = {"fits": 0, "tight": 1, "OOM": 2}
            return max((self.outlook(p) for p in self.peaks), key=order.__getitem__, default="fits")
        errors = self.margin_errors(phase)
        within = errors is not None and abs(errors) < 1.0
        typical = self.typical_peaks.get(phase, self.peaks[phase])
        if self.clears_at_data(phase):
            return "fits"
        if self.verdict(phase) == "yes":
            return "tight" if within else "fits"
        if within or self.verdict(phase) == "tight" or typical <= self.capacity_of(phase):
            return "tight"
        return "OOM"

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "model": self.model,
            "capacity_mib": self.capacity_mib,
            "hard_limit_mib": self.hard_mib,
            "total_mib": self.total_mib,
            # every peak <= usable at the config's maximum lengths (the worst case it allows)
            "fits": self.fits,
            # the verdict: every phase fits at the maximum lengths or, judged there, at the data's (``fits_judged``)
            "fits_judged": self.fits_judged,
            "typical_judged": self.typical_judged,
            "verdict": self.verdict(),
            "outlook": self.outlook(),
            "error_log": self.error_log,
            "phase_titles": dict(self.titles),
            "step_seconds": round(self.step_s, 3),
            "mean_lengths": self.lengths,
            "phase_seconds": self.seconds,
            "pipeline": [{"pool": name, "seconds": round(s, 3), "idle_ratio": round(idle, 3)}
                         for name, s, idle in self.stages],
            "phases": {p: {"peak_mib": self.peaks[p], "fits": self.peaks[p] <= self.capacity_of(p),
                           "fits_at_data": self.fits_at_data(p),
                           "capacity_mib": self.capacity_of(p),
                           "verdict": self.verdict(p),
                           "outlook": self.outlook(p),
                           "margin_gib": round(self.margin_gib(p), 2),
                           "margin_errors": None if self.margin_errors(p) is None else round(self.margin_errors(p), 2),
                           "typical_peak_mib": self.typical_peaks.get(p, self.peaks[p]),
                           "largest_terms": [t for t, _ in self.largest_terms(p)], "terms_mib": terms}
                       for p, terms in self.phases.items()},
        }


def check(
    config: Sequence[str] | Mapping[str, Any] | str | Path,
    *,
    framework: str | None = None,
    gpus: int | None = None,
    model: str | ModelCard | None = None,
    gpu: str | None = None,
    extra_gpus: str | Path | None = None,
    length_fraction: float = 1.0,
    calibration: "Efficiency | None" = None,
    mean_prompt_len: float | None = None,
    mean_response_len: float | None = None,
    mean_lengths_from: str = "given",
    host_mem_gib: float | None = None,
    compare_with: str | None = None,
    response_profile: str | None = None,
    longest_response_len: float | None = None,
) -> CheckReport:
    """Every rule the config breaks, with its numbers, stage and source.

    Given ``gpu`` and ``model``, also the memory of every phase of the RL step
    against the GPU (memory rules ``<fw>.memory.<phase>``, stage = the phase).
    ``length_fraction``: how long the longest micro batch's sequences are, as a fraction of
    max prompt + response (1.0: every one at the limits, the worst case). ``mean_prompt_len`` /
    ``mean_response_len``: the data's mean lengths (tokens) the step time is predicted at (``mean_lengths_from``
    says where they came from); unset, the length profile's (``response_profile`` names one; else chosen by the model
    and the training data the config names: docs/cost-model.md section 4). ``longest_response_len``: the longest
    response the data reaches (tokens), where it is known: the rollout waits for it, not for the length law's longest.
    Checked with an older release than the newest (its keys show it, or ``compare_with`` names the unpinned
    framework when ``framework`` pins a release an error message showed), ``upgrade`` says what the newest refuses.
    ``config``: the arguments (a list, or one string), a mapping, a YAML/JSON file's path, or a launch script's path
    (its framework, launcher GPU count and model read as the CLI reads them); ``framework`` unset is the script's,
    else verl.
    """
    from .script_args import api_config

    check_length_fraction(length_fraction)
    check_mean_lengths(mean_prompt_len, mean_response_len)
    check_longest_response(longest_response_len, mean_response_len)
    named(response_profile)
    config, framework, gpus, model, script_notes = api_config(config, framework, gpus, model)
    asked = get_framework(framework or "verl")
    flat, ignored = read_config(asked, config)
    fw, version_notes = framework_for(asked, flat)
    card, values = read_inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus)
    ruleset = fw.ruleset
    priced = memory_evaluated(gpu, card, fw, flat)
    unknown, refused, typos = findings(fw.key_list(flat), fw.name, fw.release_named)
    notes = script_notes + typos + version_notes + list(fw.config_notes(flat, priced=priced)) + list(
        fw.value_notes(values, priced=priced))
    notes += vision_note(fw, card, values, priced)
    memory = host = None
    if priced:
        ruleset, memory, host = _with_memory(fw, card, gpu, values, extra_gpus, length_fraction, calibration,
                                             (mean_prompt_len, mean_response_len, mean_lengths_from), host_mem_gib,
                                             (response_profile, fw.training_data(flat)), longest_response_len)
        notes += _other_reading_notes(fw, flat, memory, card, gpu, values, extra_gpus, length_fraction)
    elif gpu and card is not None:
        notes.append(unmodelled_note(fw, flat))
    elif gpu or card is not None:
        notes.append(half_given_note(bool(gpu)))
    else:
        notes.append("memory was not evaluated (no --gpu/--model): this is a pure rule check")
    result = ruleset.check(values)
    violations = refused + [at_data_lengths(v, fw.name, memory) for v in result.violations]
    broken_host = host_violation(fw, host) if host is not None else None
    if broken_host is not None:
        violations.append(broken_host)
    if card is None:
        notes.append("no --model given: head-count and context-length rules were not checked")
    upgrade = upgrade_check(get_framework(compare_with) if compare_with else asked, fw, flat, {v.rule for v in result.errors}, gpus=gpus, model=card)
    return CheckReport(fw.name, fw.version, violations, values, result.skipped, ignored, notes, memory, host, upgrade,
                       unknown, fw.micro_batches_per_gpu(values), fw.release_named)


def at_data_lengths(violation: Violation, framework: str, memory: "MemoryCheck | None") -> Violation:
    """A phase's memory limit broken at the config's maximum lengths, where the verdict judges the phase to fit at the
    data's lengths (``MemoryCheck.fits_at_data``): kept, as a tolerated warning (the worst case the config allows
    stays on the record, and the search still avoids it), not an error."""
    from dataclasses import replace

    from ..rules.base import Severity

    if memory is None or violation.severity != Severity.ERROR:
        return violation
    for phase in memory.peaks:
        if violation.rule == memory_rule_id(framework, phase) and memory.fits_at_data(phase):
            return replace(violation, severity=Severity.WARNING, tolerated=True,
                           message=violation.message + AT_DATA_LENGTHS)
    return violation


# what a memory rule broken only at the maximum lengths says (``at_data_lengths``): check, fix and explain use it
AT_DATA_LENGTHS = " (at the maximum lengths; it fits at the data's lengths: see will it OOM?)"


def only_at_max_lengths(violation: Violation) -> bool:
    """A memory rule broken at the config's maximum lengths that the verdict judges to fit at the data's
    (``at_data_lengths``)."""
    return violation.message.endswith(AT_DATA_LENGTHS)


def typical_peaks(spec: Any, values: Mapping[str, Value],
                  length_fraction: float) -> tuple[dict[str, int], tuple[float, float] | None, tuple[str, str] | None]:
    """The peak (MiB) of each phase whose micro batches are packed (remove padding) at the data's lengths instead of
    the maximum ones, the mean prompt and response (tokens) they are priced at, and where the prompt and response lengths come
    from (``lengths.judged_sources``) where the verdict may judge by them (None: it may not).

    A micro batch of n sequences holds the 99.9th percentile of the sum of n lengths (constants.PACKED_SUM_Z): n
    prompts at the data's mean, n responses drawn from the length law, never more than the maximum lengths allow.
    The responses' mean is the one given (``--mean-response-len``, a calibration), else the length profile's law at
    the longest of its published runs (``lengths.judged_response_fraction``); the prompts' the one given, the data's
    published mean or the profile's. Only where both have a source may the verdict judge by these peaks
    (``MemoryCheck.typical_judged``); a default share (``default`` profile) is shown beside the verdict, not judged by.
    A padded phase (no remove padding) is not re-priced: its forward runs on rows padded to the batch's longest, so the
    data's lengths do not lower its peak (with a token budget, verl's rearrange_micro_batches fits more of the short
    rows in a micro batch: if anything higher), and it keeps the worst case."""
    from dataclasses import replace

    from ..costmodel import constants as C
    from ..costmodel.lengths import judged_prompt_fraction, judged_response_fraction, judged_sources
    from ..costmodel.memory import estimate_memory
    from ..costmodel.tables import MIB, mean_lengths

    ml = mean_lengths(spec, values)
    longest = max(1.0, float(ml["max_prompt"] + ml["max_response"]))
    if (ml["prompt"] + ml["response"]) / longest >= length_fraction:
        return {}, None, None
    plan = spec.plan
    rollout = plan(values, Phase.ROLLOUT)
    sources = judged_sources(rollout)
    fraction = judged_response_fraction(rollout)
    judged = None if fraction is None else fraction * float(ml["max_response"])
    prompt = judged_prompt_fraction(rollout)
    judged_prompt = float(ml["prompt"]) if prompt is None else prompt * float(ml["max_prompt"])

    def at_data(v: Mapping[str, Value], phase: str) -> Any:
        priced = plan(v, phase).replace(packed_sum_z=C.PACKED_SUM_Z)
        fraction, prompt = judged_response_fraction(priced), judged_prompt_fraction(priced)
        if prompt is not None:  # the profile's prompt at its longest run's, beside that run's responses
            priced = priced.replace(avg_prompt_fraction=prompt)
        return priced if fraction is None else priced.replace(avg_response_fraction=fraction)

    typical = replace(spec, plan=at_data)
    peaks = {p: int(-(-estimate_memory(typical.plan(values, p)).peak(p) // MIB)) for p in spec.phases_run(values)
             if plan(values, p).remove_padding and plan(values, p).data_lengths_judged}
    if not peaks or sources is None:
        return peaks, None, None
    return peaks, (judged_prompt, judged), sources


def server_titles(fw: Framework, spec: Any, values: Mapping[str, Value], reports: Mapping[str, Any]) -> dict[str, str]:
    """The rollout row's title where its engine runs on GPUs of its own that the framework names (a rollout server's:
    ``Framework.server_rollout_title``): that row is the server's GPU, the others the trainer's."""
    title = fw.server_rollout_title
    if not title or Phase.ROLLOUT not in reports:
        return {}
    plan = spec.plan(values, Phase.ROLLOUT)
    return {Phase.ROLLOUT: title} if plan.engine != "hf" and not plan.colocated else {}


def memory_error_log(framework: str) -> float:
    """The memory model's observed error for a framework: median |log(measured / predicted)| of the training phases'
    peak over the measured set (costmodel/accuracy.yaml), its family's where it has points, else pooled."""
    from ..costmodel.accuracy import MEMORY, error_log

    return error_log(framework, MEMORY) or 0.0


# MemoryCheck.verdict's words in an other reading's note
READING_WORDS = {"yes": "fits", "tight": "tight: within the hard margin", "no": "out of memory"}


def _other_reading_notes(fw: Framework, flat: Mapping[str, Any], memory: MemoryCheck, card: ModelCard, gpu: str,
                         values: Mapping[str, Value], extra_gpus: str | Path | None,
                         length_fraction: float) -> list[str]:
    """The worst peak of each other release the config's flags allow whose code prices its memory differently
    (``Framework.other_readings``), beside the one priced: at the maximum lengths, as the verdict's peaks are."""
    notes = []
    for what, other in fw.other_readings(flat):
        _, mem, _ = _with_memory(other, card, gpu, values, extra_gpus, length_fraction)
        worst = max(mem.peaks, key=lambda p: mem.peaks[p] - mem.capacity_of(p))
        notes.append(f"read {what}: {Phase(worst).label} peaks at {mem.peaks[worst] / 1024:.1f} of "
                     f"{mem.capacity_of(worst) / 1024:.1f} GiB usable ({READING_WORDS[mem.verdict(worst)]}), where it is priced "
                     f"at {memory.peaks[worst] / 1024:.1f} GiB here")
    return notes


def _with_memory(fw: Framework, card: ModelCard, gpu_name: str, values: Mapping[str, Value],
                 extra_gpus: str | Path | None, length_fraction: float = 1.0,
                 calibration: "Efficiency | None" = None,
                 means: tuple = (None, None, "given"),
                 host_mem_gib: float | None = None,
                 profile: tuple = (None, None),
                 longest: float | None = None) -> tuple[RuleSet, MemoryCheck, HostReport]:
    """The rule set plus memory rules for these exact values, and the per-phase breakdown."""
    from ..catalog.gpus import load_gpu
    from ..costmodel.tables import (MIB, build_cost_terms, full_reports, given_means, mean_lengths, stage_seconds,
                                    step_seconds, with_efficiency, with_length_fraction, with_longest_response, with_mean_lengths,
                                    with_response_profile)

    gpu = load_gpu(gpu_name, extra_gpus)
    prompt_mean, response_mean, source = means
    spec = with_longest_response(with_mean_lengths(with_response_profile(with_efficiency(with_length_fraction(
        fw.cost_spec(card, gpu), length_fraction), calibration), *profile), prompt_mean, response_mean), longest)
    terms = build_cost_terms(spec, {k: [v] for k, v in values.items()}, time=False)
    reports, seconds = full_reports(spec, values)
    phases = {p: {t: int(-(-b // MIB)) for t, b in r.phases[p].items()} for p, r in reports.items()}
    peaks = {p: int(-(-r.peak(p) // MIB)) for p, r in reports.items()}
    total = int(gpu.memory_bytes // MIB)
    typical, judged, sources = typical_peaks(spec, values, length_fraction)
    mem = MemoryCheck(gpu.name, card.name, terms.capacity_mib, total, phases, peaks,
                      {p: round(t, 3) for p, t in seconds.items() if t}, terms.hard_mib,
                      {p: c for p, c in terms.phase_capacity_mib.items() if c != terms.capacity_mib},
                      step_seconds(spec, values, seconds),
                      {**mean_lengths(spec, values),
                       "prompt_from": source if prompt_mean is not None else "assumed",
                       "response_from": source if response_mean is not None else "assumed",
                       "longest_from": "given" if longest is not None else "assumed",
                       **given_means(prompt_mean, response_mean),
                       "judged_prompt": None if judged is None else round(judged[0], 1),
                       "judged_response": None if judged is None else round(judged[1], 1),
                       # where the judged lengths come from (lengths.judged_sources; "given" is ``source`` here)
                       "judged_prompt_from": None if sources is None else sources[0].replace("given", source),
                       "judged_response_from": None if sources is None else sources[1].replace("given", source)},
                      stage_seconds(spec, values, seconds), typical, judged is not None,
                      error_log=memory_error_log(fw.name), titles=server_titles(fw, spec, values, reports))
    return fw.ruleset.extended(terms.rules, terms.derived), mem, host_check(spec, values, gpu.name, host_mem_gib)

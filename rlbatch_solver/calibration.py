"""Predicted against measured: one run's phases from the cost model, the efficiencies that fit a run's
log best (``rlbatch calibrate``), and the profile file that carries them to the other commands.

The fit is a bounded least squares on log(predicted / measured) over the phases the log times: each
efficiency of ``costmodel/efficiency.py`` is moved within its bounds (golden-section search, a few rounds of
coordinate descent: each efficiency drives its own phases, so the rounds converge in two or three), and the
memory offset is the measured peak less the predicted one. Phases the log does not time keep the defaults.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .costmodel.phase import TRAIN_PHASES, Phase
from .costmodel.efficiency import BOUNDS, DEFAULT_EFFICIENCY, GIB, Efficiency
from .errors import InputError

PROFILE_KEY = "rlbatch_calibration"
# which efficiency moves which phases (the others barely: a phase's time is one efficiency's term plus fixed costs)
DRIVES: dict[str, tuple[str, ...]] = {
    "hbm_decode": (Phase.ROLLOUT, Phase.WEIGHT_SYNC),
    "mfu_forward": (Phase.OLD_LOG_PROB, Phase.REF, Phase.CRITIC_UPDATE, Phase.CRITIC_VALUES),
    "mfu_train": (Phase.ACTOR_UPDATE, Phase.CRITIC_UPDATE),
}


@dataclass
class Run:
    """One configured run: the framework's values, the cost spec, and the mean lengths it generated."""

    framework: str
    gpu: str
    model: str
    values: dict[str, Any]
    spec: Any  # CostSpec
    prompt_mean: float | None = None
    response_mean: float | None = None
    # time: the longest response the data reaches, where a source or the run's log states it (tokens; None: the
    # limit): the length law's cap (costmodel/lengths.py response_cap)
    response_longest: float | None = None
    # memory: the longest sequence the run reached, as a share of max prompt + response (None: the worst case)
    peak_fraction: float | None = None
    # the training data its config names (costmodel/lengths.py dataset_of): where no mean is given, it chooses
    # the length profile with the model's family
    dataset: str = ""
    # the length profile the user names (check's --response-profile; costmodel/lengths.py PROFILES), None: chosen
    # by the model's family and the data
    response_profile: str | None = None

    def predict(self, eff: Efficiency = DEFAULT_EFFICIENCY) -> "Prediction":
        """Seconds per phase and the training phases' largest peak, as check computes them (full_reports),
        at this run's lengths and the efficiencies ``eff``."""
        from dataclasses import replace

        from functools import partial

        from .costmodel.tables import full_reports, phases_seconds, step_seconds

        reports, seconds = full_reports(replace(self.spec, plan=lambda values, phase: self._plan(values, phase, eff)),
                                        self.values)
        peak = max((r.peak(p) for p, r in reports.items() if p in TRAIN_PHASES), default=0.0)
        whole = max((r.peak(p) for p, r in reports.items()), default=0.0)
        return Prediction(seconds, peak, step_seconds(self.spec, self.values, seconds), whole,
                          partial(phases_seconds, self.spec, self.values, seconds))

    def _plan(self, values: Mapping[str, Any], phase: str, eff: Efficiency):
        from .costmodel.tables import at_mean_lengths

        plan = at_mean_lengths(self.spec.plan(values, phase), self.prompt_mean, self.response_mean)
        changes: dict[str, Any] = {"efficiency": eff, "dataset": self.dataset}
        if self.response_profile:
            changes["response_profile"] = self.response_profile
        if self.response_longest is not None:
            changes["longest_response"] = float(self.response_longest)
        if self.peak_fraction is not None:
            changes["peak_length_fraction"] = min(1.0, max(1e-3, self.peak_fraction))
        return plan.replace(**changes)


@dataclass
class Prediction:
    seconds: dict[str, float]  # phase -> seconds
    train_peak_bytes: float  # the largest predicted peak of the training phases (log-prob, ref, updates)
    step: float  # the phases combined into one step (tables.step_seconds: concurrent groups at their slowest)
    peak_bytes: float  # the largest predicted peak of any phase, rollout included (what nvidia-smi shows)
    # phases -> their seconds together as the step counts them (tables.phases_seconds over ``seconds``)
    combined: Callable[[Sequence[str]], float | None]

    def group(self, phases: Sequence[str]) -> float | None:
        """What a log's figure timing the phases ``phases`` as one should read: those phases as the step combines
        them (concurrent ones at their slowest; the one definition the step and the cross-validation use)."""
        return self.combined(phases)


def make_run(framework: str, args: Sequence[str] | Mapping[str, Any], *, gpu: str, model: str, gpus: int | None,
             prompt_mean: float | None = None, response_mean: float | None = None,
             response_profile: str | None = None, response_longest: float | None = None) -> Run:
    """A run from the framework's own arguments (as ``check`` reads them; ``response_profile`` as its
    ``--response-profile``; ``response_longest`` the longest response the data reaches, where it is stated)."""
    from .catalog.gpus import load_gpu
    from .commands.common import read_config, read_inputs
    from .frameworks import get_framework

    fw = get_framework(framework)
    flat, _ = read_config(fw, args)
    card, values = read_inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=None)
    g = load_gpu(gpu)
    return Run(fw.name, g.name, card.name, dict(values), fw.cost_spec(card, g), prompt_mean, response_mean,
               dataset=fw.training_data(flat), response_profile=response_profile, response_longest=response_longest)


# ----------------------------------------------------------------------------- the fit
@dataclass
class Observation:
    """A run and what its log measured: (our phases, seconds) groups and the training phases' peak."""

    run: Run
    groups: list[tuple[tuple[str, ...], float]]
    peak_bytes: float | None = None
    step_s: float | None = None  # the whole step, where the log times it


def _scaled(eff: Efficiency, k: float) -> Efficiency:
    changes = {}
    for n in ("mfu_train", "mfu_forward", "mfu_prefill", "hbm_decode"):
        lo, hi = BOUNDS[n]
        changes[n] = min(hi, max(lo, getattr(eff, n) * k))
    return eff.replace(**changes)


def _step_loss(obs: Sequence[Observation], eff: Efficiency) -> float:
    return sum(math.log(o.run.predict(eff).step / o.step_s) ** 2 for o in obs if o.step_s)


def _loss(obs: Sequence[Observation], eff: Efficiency, names: set[str] | None = None) -> float:
    total = 0.0
    for o in obs:
        pred = o.run.predict(eff)
        for phases, measured in o.groups:
            if names is not None and not any(p in names for p in phases):
                continue
            p = pred.group(phases)
            if p and measured > 0:
                total += math.log(p / measured) ** 2
    return total


def _golden(f, lo: float, hi: float, iters: int = 40) -> float:
    """The minimum of a unimodal f on [lo, hi], searched on a log scale."""
    a, b = math.log(lo), math.log(hi)
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(math.exp(c)), f(math.exp(d))
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(math.exp(d))
    return math.exp((a + b) / 2)


@dataclass
class Fit:
    efficiency: Efficiency
    fitted: list[str]  # the names the logs could inform
    phases: list[dict[str, Any]] = field(default_factory=list)  # per run and phase: measured, before, after

    @property
    def at_bound(self) -> list[str]:
        """Fitted efficiencies that ended within 1% of a bound: the log asks for more than that efficiency can
        explain (a term the model lacks, e.g. a long generation tail), so the fit is not a measurement of it."""
        out = []
        for name in self.fitted:
            if name not in BOUNDS or name == "train_memory_offset_bytes":
                continue
            lo, hi = BOUNDS[name]
            x = getattr(self.efficiency, name)
            if x <= lo * 1.01 or x >= hi * 0.99:
                out.append(name)
        return out

    def error(self, key: str) -> float:
        """The worst |log error| over the phases, before or after, as a ratio - 1."""
        worst = max((abs(math.log(r[key] / r["measured_s"])) for r in self.phases if r[key] and r["measured_s"]),
                    default=0.0)
        return math.exp(worst) - 1.0


def fit(obs: Sequence[Observation], start: Efficiency = DEFAULT_EFFICIENCY, rounds: int = 3) -> Fit:
    timed = {p for o in obs for phases, _ in o.groups for p in phases}
    names = [n for n, phases in DRIVES.items() if timed & set(phases)]
    eff = start
    for _ in range(rounds):
        before = eff
        for name in names:
            lo, hi = BOUNDS[name]
            best = _golden(lambda x, n=name: _loss(obs, eff.replace(**{n: x}), set(DRIVES[n])), lo, hi)
            eff = eff.replace(**{name: best})
        if all(abs(getattr(eff, n) / getattr(before, n) - 1) < 1e-4 for n in names):
            break
    if not names and any(o.step_s for o in obs):
        # only whole steps were timed (ms-swift's train_speed): one common factor on every efficiency
        names = ["common factor"]
        k = _golden(lambda x: _step_loss(obs, _scaled(start, x)), 0.05, 5.0)
        eff = _scaled(start, k)
    no_offset = eff.replace(train_memory_offset_bytes=0.0)
    peaks = [(o.peak_bytes, o.run.predict(no_offset).train_peak_bytes) for o in obs if o.peak_bytes]
    if peaks:
        lo, hi = BOUNDS["train_memory_offset_bytes"]
        offset = sum(m - p for m, p in peaks) / len(peaks)
        eff = eff.replace(train_memory_offset_bytes=min(hi, max(lo, offset)))
        names.append("train_memory_offset_bytes")
    rows = []
    for i, o in enumerate(obs):
        b, a = o.run.predict(start), o.run.predict(eff)
        for phases, measured in o.groups:
            rows.append({"run": i, "phase": "+".join(phases), "measured_s": measured,
                         "before_s": b.group(phases), "after_s": a.group(phases)})
        if o.step_s:
            rows.append({"run": i, "phase": "step", "measured_s": o.step_s, "before_s": b.step, "after_s": a.step})
        if o.peak_bytes:
            rows.append({"run": i, "phase": "peak memory (GiB)", "measured_s": o.peak_bytes / GIB,
                         "before_s": b.train_peak_bytes / GIB, "after_s": a.train_peak_bytes / GIB})
    return Fit(eff, names, rows)


# ----------------------------------------------------------------------------- profiles
@dataclass
class Profile:
    """A calibration profile: efficiencies measured for one GPU type (and the run they came from)."""

    gpu: str
    efficiency: Efficiency
    framework: str = ""
    model: str = ""
    source: str = ""
    path: str = ""
    # the run's mean prompt and response lengths (tokens) from its log: the step time of later commands is
    # predicted at them unless they are given (--mean-prompt-len / --mean-response-len)
    prompt_mean: float | None = None
    response_mean: float | None = None

    def to_yaml(self, fit_rows: Sequence[Mapping[str, Any]] = ()) -> str:
        import yaml

        doc = {PROFILE_KEY: 1, "gpu": self.gpu, "framework": self.framework, "model": self.model,
               "source": self.source,
               "efficiency": {k: round(v, 6) for k, v in self.efficiency.as_dict().items()},
               "mean_lengths": {"prompt": self.prompt_mean, "response": self.response_mean},
               "fit": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in fit_rows]}
        return yaml.safe_dump(doc, sort_keys=False)

    def applies_to(self, gpu: str) -> bool:
        return not self.gpu or self.gpu == gpu


def load_profile(path: str | Path) -> Profile:
    from .frameworks.overrides import load_yaml_file

    doc = load_yaml_file(path, "calibration")
    if not isinstance(doc, Mapping) or PROFILE_KEY not in doc or not isinstance(doc.get("efficiency"), Mapping):
        raise InputError("calibration", f"{path} is not a calibration profile (no '{PROFILE_KEY}' and 'efficiency').",
                         "write one with `rlbatch calibrate LOG ... --out FILE`.")
    values = {}
    for k, v in doc["efficiency"].items():
        if k not in BOUNDS:
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = float("nan")
        lo, hi = BOUNDS[k]
        if not (lo <= x <= hi):
            raise InputError("calibration", f"{path}: efficiency.{k} = {v!r} is outside [{lo:g}, {hi:g}].",
                             "calibrate again, or correct the value.")
        values[k] = x
    lengths = doc.get("mean_lengths") if isinstance(doc.get("mean_lengths"), Mapping) else {}
    means = {}
    for k in ("prompt", "response"):
        v = lengths.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 10**7):
            raise InputError("calibration", f"{path}: mean_lengths.{k} = {v!r} is not a token count.",
                             "calibrate again, or correct the value.")
        means[k] = float(v)
    return Profile(str(doc.get("gpu") or ""), Efficiency.from_mapping(values), str(doc.get("framework") or ""),
                   str(doc.get("model") or ""), str(doc.get("source") or ""), str(path), means.get("prompt"),
                   means.get("response"))


def user_profile_path() -> Path:
    """The per-user profile picked up when no --calibration is given: $RLBATCH_CONFIG_DIR/calibration.yaml,
    else ~/.config/rlbatch/calibration.yaml."""
    base = os.environ.get("RLBATCH_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".config", "rlbatch")
    return Path(base) / "calibration.yaml"


def resolve_profile(path: str | None) -> Profile | None:
    """--calibration FILE, else the per-user profile when there is one, else none."""
    if path:
        return load_profile(path)
    user = user_profile_path()
    return load_profile(user) if user.is_file() else None


def lengths_for(profile: Profile | None, gpu: str | None) -> tuple[float | None, float | None]:
    """The profile's mean prompt and response lengths where the profile applies (None, None otherwise)."""
    if profile is None or gpu is None or not profile.applies_to(gpu):
        return None, None
    return profile.prompt_mean, profile.response_mean


def efficiency_for(profile: Profile | None, gpu: str | None) -> tuple[Efficiency | None, str | None]:
    """The profile's efficiencies when it was measured on this GPU type; a note either way."""
    if profile is None or gpu is None:
        return None, None
    if not profile.applies_to(gpu):
        return None, (f"calibration {profile.path} was measured on {profile.gpu}, not {gpu}: "
                      "not applied (the defaults are used)")
    return profile.efficiency, f"calibrated efficiencies from {profile.path} ({profile.gpu})"

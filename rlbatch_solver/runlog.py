"""A training run's own log, read into per-phase seconds, peak memory and mean lengths (``rlbatch calibrate``).

Formats, each written by the framework's own code at the version we follow:

* verl console: one line per step, ``step:N - key:value - key:value ...`` (verl/utils/tracking.py, the
  console logger, via ``_compute_metrics`` in the trainer): ``timing_s/gen``, ``timing_s/old_log_prob``,
  ``timing_s/ref``, ``timing_s/values``, ``timing_s/update_critic``, ``timing_s/update_actor``,
  ``timing_s/update_weights``, ``timing_s/step``, ``perf/max_memory_allocated_gb`` (torch's
  ``max_memory_allocated() / 1024**3`` in the actor worker: verl/workers/engine_workers.py), and
  ``prompt_length/mean``, ``response_length/mean``. Ray prefixes such as ``(TaskRunner pid=1)`` are ignored.
* verl file logger (``trainer.logger=['file']``): JSON lines ``{"step": N, "data": {...}}`` with the same keys
  (verl/utils/tracking.py ``FileLogger.log``).
* OpenRLHF 0.11: ``✨ Global step N: {...}`` (a Python dict, trainer/ppo_trainer.py ``fit``) with
  ``timing/generation``, ``timing/make_experience``, ``timing/ppo_train``, ``timing/broadcast``,
  ``timing/step_total``, and the means ``response_length`` and ``total_length`` (trainer/ray/ppo_actor.py).
* ms-swift 4.6 ``logging.jsonl``: JSON lines with ``train_speed(s/it)`` (seconds per optimizer step since the
  start), ``memory(GiB)`` (the largest ``max_memory_reserved`` so far) and ``completions/mean_length``
  (swift/trainers/patcher.py ``add_train_message``; GRPO's metrics).

The phases are our cost model's names (rollout, old_log_prob, ref, actor_update, critic_update, weight_sync);
a log's phase that covers several of ours (OpenRLHF's make_experience) is compared with their sum.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError

# log key -> (our phases it covers). Keys that add up to one of our phases share it.
VERL_PHASES: dict[str, tuple[str, ...]] = {
    "timing_s/gen": ("rollout",),
    "timing_s/old_log_prob": ("old_log_prob",),
    "timing_s/ref": ("ref",),
    "timing_s/values": ("critic_update",),  # the critic's value forward: part of our critic phase
    "timing_s/update_critic": ("critic_update",),
    "timing_s/update_actor": ("actor_update",),
    "timing_s/update_weights": ("weight_sync",),
}
OPENRLHF_PHASES: dict[str, tuple[str, ...]] = {
    "timing/generation": ("rollout",),
    "timing/make_experience": ("old_log_prob", "ref"),
    "timing/ppo_train": ("actor_update", "critic_update"),
    "timing/broadcast": ("weight_sync",),
}

# the formats parse_log reads (``Framework.log_formats`` names those a framework's runs print)
FORMATS = ("verl", "verl-jsonl", "openrlhf", "swift")

_VERL_LINE = re.compile(r"(?:^|\s)step:(\d+) - (.*)$")
_OPENRLHF_LINE = re.compile(r"Global step (\d+): (\{.*\})\s*$")


@dataclass
class RunLog:
    """What one run's log says, step by step."""

    format: str  # "verl" | "verl-jsonl" | "openrlhf" | "swift"
    steps: dict[int, dict[str, float]] = field(default_factory=dict)  # step -> metric -> value

    def used_steps(self) -> list[int]:
        """The steps a summary uses: all but the first when there are several (the first step compiles
        kernels, captures CUDA graphs and warms the allocator)."""
        s = sorted(self.steps)
        return s[1:] if len(s) > 1 else s

    def _over_used(self, key: str, agg=statistics.median) -> float | None:
        """``agg`` of ``key`` over the used steps that log it."""
        vals = [self.steps[s][key] for s in self.used_steps() if key in self.steps[s]]
        return agg(vals) if vals else None

    def _median(self, key: str) -> float | None:
        return self._over_used(key)

    def phase_groups(self) -> list[tuple[tuple[str, ...], float]]:
        """(our phases, measured seconds): the median over the used steps of each phase the log times."""
        table = VERL_PHASES if self.format.startswith("verl") else OPENRLHF_PHASES if self.format == "openrlhf" \
            else {}
        groups: dict[tuple[str, ...], float] = {}
        for key, phases in table.items():
            m = self._median(key)
            if m is not None:
                groups[phases] = groups.get(phases, 0.0) + m
        return sorted(groups.items())

    def step_seconds(self, optimizer_steps_per_rl_step: int = 1) -> float | None:
        key = {"verl": "timing_s/step", "verl-jsonl": "timing_s/step", "openrlhf": "timing/step_total",
               "swift": "train_speed(s/it)"}[self.format]
        m = self._median(key) if self.format != "swift" else self._last(key)
        if m is None:
            return None
        return m * (optimizer_steps_per_rl_step if self.format == "swift" else 1)

    def _last(self, key: str) -> float | None:
        for s in sorted(self.steps, reverse=True):
            if key in self.steps[s]:
                return self.steps[s][key]
        return None

    def peak_memory_gib(self) -> tuple[float, str] | None:
        """(GiB, what it measures): the largest value the log reports (both are running maxima)."""
        key, what = {"verl": ("perf/max_memory_allocated_gb", "allocated"),
                     "verl-jsonl": ("perf/max_memory_allocated_gb", "allocated"),
                     "swift": ("memory(GiB)", "reserved")}.get(self.format, (None, ""))
        vals = [m[key] for m in self.steps.values() if key and key in m]
        return (max(vals), what) if vals else None

    def max_lengths(self) -> tuple[float | None, float | None]:
        """(longest prompt, longest response) over the used steps, where the log reports them (verl)."""
        if self.format.startswith("verl"):
            return self._over_used("prompt_length/max", max), self._over_used("response_length/max", max)
        return None, None

    def mean_lengths(self) -> tuple[float | None, float | None]:
        """(mean prompt, mean response) tokens over the used steps."""
        if self.format.startswith("verl"):
            return self._median("prompt_length/mean"), self._median("response_length/mean")
        if self.format == "openrlhf":
            r, t = self._median("response_length"), self._median("total_length")
            return (t - r if r is not None and t is not None else None), r
        return None, self._median("completions/mean_length")


def _numbers(d: dict) -> dict[str, float]:
    out = {}
    for k, v in d.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[str(k)] = float(v)
        elif isinstance(v, str):
            try:
                out[str(k)] = float(v)
            except ValueError:
                pass
    return out


def _verl_pairs(body: str) -> dict[str, float]:
    out = {}
    for part in body.split(" - "):
        key, sep, value = part.strip().rpartition(":")
        if not sep:
            continue
        try:
            out[key] = float(value)
        except ValueError:
            continue
    return out


def parse_log(text: str) -> RunLog:
    """Read any of the formats above; the first line that matches one decides it."""
    fmt = None
    steps: dict[int, dict[str, float]] = {}
    swift_step = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("{") and fmt in (None, "verl-jsonl", "swift"):
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                if isinstance(obj.get("data"), dict) and "step" in obj:
                    fmt = fmt or "verl-jsonl"
                    steps.setdefault(int(obj["step"]), {}).update(_numbers(obj["data"]))
                    continue
                if any(k in obj for k in ("train_speed(s/it)", "memory(GiB)", "global_step/max_steps")):
                    fmt = fmt or "swift"
                    gs = str(obj.get("global_step/max_steps", "")).split("/")[0]
                    swift_step = int(gs) if gs.isdigit() else swift_step + 1
                    steps.setdefault(swift_step, {}).update(_numbers(obj))
                    continue
        m = _OPENRLHF_LINE.search(line)
        if m and fmt in (None, "openrlhf"):
            try:
                d = ast.literal_eval(m.group(2))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                d = None
            if isinstance(d, dict):
                fmt = "openrlhf"
                steps.setdefault(int(m.group(1)), {}).update(_numbers(d))
                continue
        m = _VERL_LINE.search(line)
        if m and fmt in (None, "verl"):
            pairs = _verl_pairs(m.group(2))
            if pairs:
                fmt = "verl"
                steps.setdefault(int(m.group(1)), {}).update(pairs)
    if fmt is None or not steps:
        raise InputError("log", "no step metrics found in the log.",
                         "give verl's console output (lines 'step:N - timing_s/gen:... - ...') or its file logger's "
                         "JSON lines, OpenRLHF's output ('Global step N: {...}'), or ms-swift's logging.jsonl.")
    return RunLog(fmt, steps)


def read_log(path: str | Path) -> RunLog:
    from .frameworks.overrides import is_file

    p = Path(path)
    if not is_file(p):
        raise InputError("log", f"{path} is not a readable file.", "give the path of the run's log file.")
    try:
        text = p.read_bytes().decode("utf-8", errors="replace")
    except OSError as e:
        raise InputError("log", f"{path} cannot be read ({e.strerror}).", "give the path of the run's log file.")
    return parse_log(text)

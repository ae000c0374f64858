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
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .safe_input import MAX_LOG_BYTES, MAX_LOG_LINE, parse_json_line, read_text

# log key -> (our phases it covers). Keys that add up to one of our phases share it. A key covering several of our
# phases is predicted as the step counts those phases (calibration.Prediction.group: tables.phases_seconds, a
# concurrency group at its slowest member), never as their sum.
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
    "timing/make_experience": ("old_log_prob", "ref", "critic_values"),  # the value forward too (cost.py concurrency)
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

    def longest_response(self) -> float | None:
        """A step's longest response (tokens): the median over the used steps of each step's longest, where the log
        reports it (verl's response_length/max), the straggler a synchronous rollout waits for."""
        return self._median("response_length/max") if self.format.startswith("verl") else None

    def mean_lengths(self) -> tuple[float | None, float | None]:
        """(mean prompt, mean response) tokens over the used steps."""
        if self.format.startswith("verl"):
            return self._median("prompt_length/mean"), self._median("response_length/mean")
        if self.format == "openrlhf":
            r, t = self._median("response_length"), self._median("total_length")
            return (t - r if r is not None and t is not None else None), r
        return None, self._median("completions/mean_length")


def _step(value: Any) -> int | None:
    """A step number as a log writes it (an integer, or up to 12 ASCII digits), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12:
        return value
    if isinstance(value, str) and 0 < len(value) <= 12 and value.isascii() and value.isdigit():
        return int(value)
    return None


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
        if not line or len(line) > MAX_LOG_LINE:  # no step line is that long: not read (bounds time and memory)
            continue
        if line.startswith("{") and fmt in (None, "verl-jsonl", "swift"):
            obj = parse_json_line(line)
            if isinstance(obj, dict):
                step = _step(obj.get("step"))
                if isinstance(obj.get("data"), dict) and step is not None:
                    fmt = fmt or "verl-jsonl"
                    steps.setdefault(step, {}).update(_numbers(obj["data"]))
                    continue
                if any(k in obj for k in ("train_speed(s/it)", "memory(GiB)", "global_step/max_steps")):
                    fmt = fmt or "swift"
                    gs = _step(str(obj.get("global_step/max_steps", "")).split("/")[0])
                    swift_step = gs if gs is not None else swift_step + 1
                    steps.setdefault(swift_step, {}).update(_numbers(obj))
                    continue
        # a line that does not end in '}' is no OpenRLHF step line (and the search would scan it once per 'Global step')
        m = _OPENRLHF_LINE.search(line) if line.endswith("}") else None
        if m and fmt in (None, "openrlhf") and _step(m.group(1)) is not None:
            try:
                d = ast.literal_eval(m.group(2))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                d = None
            if isinstance(d, dict):
                fmt = "openrlhf"
                steps.setdefault(_step(m.group(1)), {}).update(_numbers(d))
                continue
        m = _VERL_LINE.search(line)
        if m and fmt in (None, "verl") and _step(m.group(1)) is not None:
            pairs = _verl_pairs(m.group(2))
            if pairs:
                fmt = "verl"
                steps.setdefault(_step(m.group(1)), {}).update(pairs)
    if fmt is None or not steps:
        raise InputError("log", "no step metrics found in the log.",
                         "give verl's console output (lines 'step:N - timing_s/gen:... - ...') or its file logger's "
                         "JSON lines, OpenRLHF's output ('Global step N: {...}'), or ms-swift's logging.jsonl.")
    return RunLog(fmt, steps)


def read_log(path: str | Path) -> RunLog:
    text = read_text(path, "log", MAX_LOG_BYTES, "the run's log file (its step lines: grep 'step' run.log)",
                     lenient=True)
    return parse_log(text)

"""The cost model's error observed on the measured set, for error bars on its predictions.

``accuracy.yaml`` (beside this file) holds, per framework family and quantity, how the measured values
of published runs compare with our predictions (measured / predicted: smallest, median, largest, and the
number of points). The time quantities are out of sample: each source predicted with the time model's fitted
constants (``fitted.yaml``) fitted to the other sources only (leave-one-source-out, tests/crossval.py); memory
has no fitted constant. It is generated from ``tests/data/measured/points.yaml`` by ``python tests/accuracy.py``,
which also writes docs/accuracy.md (every point, predicted against measured); a test keeps the three in step.
"""

from __future__ import annotations

from .phase import MEMORY_PHASES
import functools
from dataclasses import dataclass
from pathlib import Path

from ..safe_input import load_package_yaml

PATH = Path(__file__).with_name("accuracy.yaml")
# a framework's points count for its family (``Framework.accuracy_family``); below MIN_POINTS the error bar pools
# every framework's points
POOLED = "all"
MIN_POINTS = 3
# quantity names: the step, a phase of ours, or the training phases' peak memory
STEP, MEMORY = "step", "train_peak_memory"
PEAK = "peak_memory"  # the largest peak of any phase: a source's nvidia-smi figure (reserved, vLLM's share included)


@dataclass(frozen=True)
class ErrorBar:
    """measured / predicted over the published points of one quantity."""

    points: int
    low: float
    median: float
    high: float
    family: str
    out_of_sample: bool = False  # a time quantity: each source predicted by a fit that did not see it

    def text(self) -> str:
        where = "published runs" if self.family == POOLED else f"published {self.family} runs"
        return (f"measured/predicted {self.low:.2f}-{self.high:.2f} (median {self.median:.2f}) on {self.points} "
                f"{where}{', out of sample' if self.out_of_sample else ''}, docs/accuracy.md")


def families() -> dict[str, str]:
    """Each registered framework's family: the frameworks whose published runs its error bars count."""
    from ..frameworks.registry import FRAMEWORKS, get_framework

    return {name: get_framework(name).accuracy_family for name in FRAMEWORKS}


def family_of(framework: str) -> str:
    """The family of ``framework`` (``name``, ``name==version`` or ``name@version``); an unknown name is its own.
    Only that framework is loaded (``families()`` imports every one: a tenth of a second at start-up)."""
    from ..frameworks.registry import FRAMEWORKS, get_framework

    name = framework.split("==")[0].split("@")[0]
    return get_framework(name).accuracy_family if name in FRAMEWORKS else framework


def __getattr__(name: str):
    if name == "FAMILY":  # framework -> family, read from the registry when first asked for
        return families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    if not PATH.exists():
        return {}
    return load_package_yaml(PATH.read_text()) or {}


def _row(framework: str, quantity: str, usable) -> tuple[str, dict] | None:
    """(family, row) of ``quantity``: the framework's family's where ``usable(row)``, else the pooled one's."""
    table = _table().get("families", {})
    family = family_of(framework)
    for fam in (family, POOLED):
        row = table.get(fam, {}).get(quantity)
        if row and usable(row):
            return fam, row
    return None


def error_bar(framework: str, quantity: str) -> ErrorBar | None:
    """The observed error of ``quantity`` for ``framework`` (its family's points, else all points pooled)."""
    found = _row(framework, quantity, lambda row: int(row["points"]) >= MIN_POINTS)
    if found is None:
        return None
    fam, row = found
    return ErrorBar(int(row["points"]), float(row["low"]), float(row["median"]), float(row["high"]), fam,
                    quantity in TIME_QUANTITIES)


def error_log(framework: str, quantity: str) -> float | None:
    """The median |log(measured / predicted)| of ``quantity`` for ``framework`` (its family's points, else pooled)."""
    found = _row(framework, quantity, lambda row: int(row["points"]) >= 2 and "median_abs_log_error" in row)
    return None if found is None else float(found[1]["median_abs_log_error"])


TIME_QUANTITIES = (STEP, *MEMORY_PHASES)


def error_bars(framework: str, quantities: tuple[str, ...] = TIME_QUANTITIES + (MEMORY, PEAK)) -> dict[str, ErrorBar]:
    """Every quantity of ``quantities`` that has an error bar for ``framework``."""
    out = {}
    for q in quantities:
        bar = error_bar(framework, q)
        if bar is not None:
            out[q] = bar
    return out


def error_bars_dict(framework: str) -> dict[str, dict]:
    """JSON form: quantity -> {points, low, median, high, family, out_of_sample}."""
    return {q: {"points": b.points, "low": b.low, "median": b.median, "high": b.high, "family": b.family,
                "out_of_sample": b.out_of_sample}
            for q, b in error_bars(framework).items()}


def time_error_text(framework: str) -> str | None:
    """One line on the step time's observed error, with the phases' ranges beside it."""
    bars = error_bars(framework, TIME_QUANTITIES)
    if STEP not in bars:
        return None
    phases = ", ".join(f"{q.replace('_', ' ')} {b.low:.2f}-{b.high:.2f}" for q, b in bars.items() if q != STEP)
    return f"observed error: step {bars[STEP].text()}" + (f"; phases {phases}" if phases else "")


def memory_error_text(framework: str) -> str | None:
    parts = [f"{what} {bar.text()}" for what, bar in (("training-phase peak", error_bar(framework, MEMORY)),
                                                       ("peak of any phase", error_bar(framework, PEAK))) if bar]
    return "observed error: " + "; ".join(parts) if parts else None


PLACEMENT_PATH = Path(__file__).with_name("placement_accuracy.yaml")


@functools.lru_cache(maxsize=1)
def placement_error() -> tuple[float, int] | None:
    """How far our colocated/split step ratio is from the published one: (median |log(published / ours)|, points),
    from docs/async.md's comparisons (``python tests/async_evidence.py`` writes placement_accuracy.yaml)."""
    if not PLACEMENT_PATH.exists():
        return None
    data = load_package_yaml(PLACEMENT_PATH.read_text()) or {}
    return float(data["median_abs_log_error"]), int(data["points"])

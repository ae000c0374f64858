"""Whether a search that found no config proved that none fits."""

from __future__ import annotations

from typing import Any


def no_fit_is_proven(report: Any) -> bool:
    """Whether "no config" is a proof: the solver's, or a phase whose least memory over the space exceeds the GPU
    (``memory_floor``). Otherwise the time limit ran out first, which is no verdict."""
    return report.status == "infeasible" or any(least > cap for least, cap in report.memory_floor.values())

"""The time and memory model's named efficiencies: the numbers ``rlbatch calibrate`` fits to a user's own run.

Each default is a constant of ``constants.py`` with its source there (docs/cost-model.md section 5). A
calibration profile (``--calibration FILE``) replaces some of them for one GPU/framework/model; everything
else in the model stays as derived.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from ..safe_input import load_package_yaml

from . import constants as C
from .constants import GIB

# The constants fitted to the measured set (tests/data/measured/points.yaml) by `python tests/accuracy.py`:
# leave-one-source-out cross-validated, their out-of-sample error is what the CLI prints (docs/accuracy.md).
FITTED_PATH = Path(__file__).with_name("fitted.yaml")
FITTED_NAMES = ("rollout_scale", "forward_scale", "train_scale", "step_fixed_s")


def _fitted() -> dict[str, float]:
    data = load_package_yaml(FITTED_PATH.read_text()) if FITTED_PATH.exists() else {}
    values = (data or {}).get("fitted") or {}
    return {n: float(values[n]) for n in FITTED_NAMES if n in values}


FITTED = _fitted()


@dataclass(frozen=True)
class Efficiency:
    mfu_train: float = C.MFU_TRAIN  # training passes (forward + backward), large micro batches
    mfu_forward: float = C.MFU_FORWARD  # forward-only log-prob passes (old log-prob, reference, values)
    mfu_prefill: float = C.MFU_PREFILL  # the inference engine's prefill
    hbm_decode: float = C.HBM_EFF_DECODE  # the inference engine's decode: achieved / peak HBM bandwidth
    # bytes the training phases hold beyond the derived terms (allocator blocks, workspace, kernels' buffers);
    # may be negative where the derived terms over-count
    train_memory_offset_bytes: float = 0.0
    # bytes one training phase holds beyond those, as (Phase value, bytes) pairs: an out-of-memory message that names
    # its phase shows the excess there only (explain). Not part of a calibration profile: as_dict and from_mapping
    # hold the numbers only
    phase_memory_offsets: tuple[tuple[str, float], ...] = ()
    # fitted to the measured set (FITTED_PATH): measured / derived seconds of the rollout (an inference engine's
    # generation; not the trained model's own generate, whose cost is measured), the forward-only passes (old
    # log-prob, reference) and the updates (actor, critic) -- of their compute and host time, which mfu_train and
    # mfu_forward price as one GPU measured them, not of their collectives or optimizer step (time.PassSeconds) --
    # and the seconds every step spends whatever the model's size beyond the sourced host and reward time
    # (time.step_host_seconds), added to the rollout
    rollout_scale: float = FITTED.get("rollout_scale", 1.0)
    forward_scale: float = FITTED.get("forward_scale", 1.0)
    train_scale: float = FITTED.get("train_scale", 1.0)
    step_fixed_s: float = FITTED.get("step_fixed_s", 0.0)

    def replace(self, **changes: Any) -> "Efficiency":
        return replace(self, **changes)

    def as_dict(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if isinstance(v, float)}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Efficiency":
        """Known fields only (a profile from a newer version may hold more: ignored)."""
        names = {f.name for f in fields(cls) if f.type in ("float", float)}
        return cls(**{k: float(v) for k, v in values.items() if k in names})


DEFAULT_EFFICIENCY = Efficiency()
# the derived model alone, none of the fitted constants applied (what the fit starts from)
DERIVED_EFFICIENCY = Efficiency(rollout_scale=1.0, forward_scale=1.0, train_scale=1.0, step_fixed_s=0.0)

# What calibrate may fit, and the bounds it keeps them in: efficiencies between 2% and the ceilings of
# constants.py's sources (torchao's achievable GEMM and HBM fractions, 0.69 and 0.92); memory within +-16 GiB.
BOUNDS: dict[str, tuple[float, float]] = {
    "mfu_train": (0.02, 0.69),
    "mfu_forward": (0.02, 0.69),
    "mfu_prefill": (0.02, 0.69),
    "hbm_decode": (0.05, 0.92),
    "train_memory_offset_bytes": (-16 * GIB, 16 * GIB),
}

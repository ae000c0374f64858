"""A sweep grid: lists of hardware and workload choices, expanded into scenarios.

    # grid.yaml
    framework: verl
    gpu: [rtx4090, a100-80gb, h100, h200]
    gpus: [1, 2, 4, 8, 16]
    gpus_per_node: 8          # optional: nodes = ceil(gpus / gpus_per_node)
    model: [qwen2.5-7b]
    algorithm: [grpo]
    n: [8]
    prompt_length: [1024]
    response_length: [4096]
    placement: [colocate, split]   # optional: rollout on the training GPUs or on a pool of its own (docs/async.md)
    response_profile: [gsm8k, math]  # optional: how long the model answers (docs/cost-model.md section 4)
    mean_response_length: [600, 1200]   # optional: the data's mean lengths (mean_prompt_length too), and
    longest_response_length: [3000]     # the longest response it reaches (time only), where known
    objective: time
    price_per_gpu_hour: {h100: 2.5, a100-80gb: 1.6}   # or one number
    fixed: {...}               # framework keys, as in a scenario
    time_limit_s: 20           # per point

The hardware and workload fields (AXES: framework to longest_response_length
above, and nnodes) may be a single value or a list; lists are crossed, and a
crossed point that is no valid scenario (a longest response under its mean
response) is refused, naming the point. Each point has an id that depends only
on its scenario, so a resumed sweep knows what it has done even if the grid file
was reordered.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..catalog.gpus import load_gpu
from ..catalog.models import load_model
from ..errors import InputError, did_you_mean, shown
from ..frameworks.overrides import load_yaml_file
from ..scenario import FIELD_NAMES, scenario_from_dict

AXES = ("framework", "gpu", "gpus", "model", "algorithm", "n", "prompt_length", "response_length", "nnodes",
        "placement", "response_profile", "mean_prompt_length", "mean_response_length", "longest_response_length")
GRID_ONLY = ("price_per_gpu_hour", "time_limit_s", "gpus_per_node")
DEFAULT_POINT_TIME_LIMIT_S = 20.0
MAX_POINT_TIME_LIMIT_S = 3600.0  # an hour a point: the solves answer in seconds
MAX_GRID_POINTS = 10_000  # points of one grid: at seconds a point, a day of solving


@dataclass
class Point:
    id: str
    scenario: dict[str, Any]
    time_limit_s: float

    def label(self) -> str:
        s = self.scenario
        return f"{s.get('model')} {s.get('algorithm')} on {s.get('gpus')}x {s.get('gpu')}"


@dataclass
class Grid:
    points: list[Point]
    source: str = ""
    axes: dict[str, list[Any]] = field(default_factory=dict)


def point_id(scenario: Mapping[str, Any]) -> str:
    text = json.dumps(scenario, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _as_list(key: str, value: Any) -> list[Any]:
    if isinstance(value, list):
        if not value:
            raise InputError(f"grid.{key}", "is an empty list.", f"give at least one value for {key}.")
        return value
    return [value]


def grid_from_dict(data: Mapping[str, Any], where: str = "grid") -> Grid:
    if not isinstance(data, Mapping):
        raise InputError(where, "must be a mapping of scenario fields to values or lists.", "see docs/sweeps.md.")
    allowed = set(FIELD_NAMES) | set(GRID_ONLY)
    for key in data:
        if key not in allowed:
            raise InputError(f"{where}.{key}", f"is not a grid field.{did_you_mean(key, allowed)}",
                             f"known fields: {', '.join(sorted(allowed))}.")
    axes = {k: _as_list(k, data[k]) for k in AXES if k in data}
    per_node = data.get("gpus_per_node")
    price = data.get("price_per_gpu_hour")
    limit = data.get("time_limit_s", DEFAULT_POINT_TIME_LIMIT_S)
    if not isinstance(limit, (int, float)) or isinstance(limit, bool) or not 0 < limit <= MAX_POINT_TIME_LIMIT_S:
        raise InputError(f"{where}.time_limit_s", f"{shown(repr(limit))} is not a number of seconds in "
                         f"(0, {MAX_POINT_TIME_LIMIT_S:g}].", "write time_limit_s: 20.")
    size = math.prod(len(values) for values in axes.values())
    if size > MAX_GRID_POINTS:
        raise InputError(where, f"its axes make {size:,} points, more than the {MAX_GRID_POINTS:,} one sweep runs.",
                         "split it into several grids (one per model or GPU type), each with its own --out.")
    common = {k: v for k, v in data.items() if k not in AXES and k not in GRID_ONLY}
    names = list(axes)
    points: list[Point] = []
    seen: set[str] = set()
    known_gpus: set[str] = set()
    known_models: set[str] = set()
    for combo in itertools.product(*(axes[n] for n in names)):
        sc = dict(common)
        sc.update(zip(names, combo))
        if per_node is not None and "gpus" in sc and isinstance(sc["gpus"], int) and sc["gpus"] > per_node:
            if sc["gpus"] % per_node:
                raise InputError(f"{where}.gpus", f"{sc['gpus']} GPUs do not fill nodes of {per_node}.",
                                 f"use multiples of {per_node} above one node.")
            sc["nnodes"] = sc["gpus"] // per_node
        if isinstance(price, Mapping):
            if sc.get("gpu") in price:
                sc["price_per_gpu_hour"] = price[sc["gpu"]]
        elif price is not None:
            sc["price_per_gpu_hour"] = price
        try:  # validate every point now; a value no scenario takes names its field, and the point says which
            point = scenario_from_dict(sc, where=f"{where} point {dict(zip(names, combo))}")
            # a GPU type or model the catalog lacks fails each of its points only when run (the runner's
            # recommend loads them): found now, the sweep stops before it spends its time on the other points
            for name, load, known in ((point.gpu, load_gpu, known_gpus), (point.model, load_model, known_models)):
                if name is not None and name not in known:
                    load(name)
                    known.add(name)
        except InputError as e:
            crossed = {n: v for n, v in zip(names, combo) if len(axes[n]) > 1}  # the lists' values at this point
            if not crossed:
                raise
            raise InputError(e.field, f"{e.problem.rstrip('.')}, at the point {crossed} of {where}.", e.fix) from None
        pid = point_id(sc)
        if pid not in seen:
            seen.add(pid)
            points.append(Point(pid, sc, float(limit)))
    return Grid(points, where, axes)


def load_grid(path: str | Path) -> Grid:
    return grid_from_dict(load_yaml_file(path, "grid", "a grid YAML file (docs/sweeps.md)") or {}, where=str(path))

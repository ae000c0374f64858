"""The fitted constants of the time model, and their honest error: leave-one-source-out cross-validation.

The derived model (costmodel/time.py, every number sourced in docs/cost-model.md) is corrected by four constants
fitted to the measured set (costmodel/efficiency.py ``FITTED_NAMES``): a scale on the rollout, on the forward-only
passes and on the updates (on their compute and host time, not their collectives or optimizer step:
costmodel/time.py ``PassSeconds``, cached per point as ``Cached.passes``), and the seconds each step spends whatever
the model's size. The fit minimises the
squared log error of every measured quantity (the step and each timed phase), each source weighted equally
(a source with twelve rows counts as much as one with one row). Leave-one-source-out: for each source, the
constants are fitted to the other sources and that source is predicted with them; these out-of-sample predictions
are the error the CLI prints (tests/accuracy.py). The constants shipped are the fit to every source.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from rlbatch_solver.costmodel.efficiency import DERIVED_EFFICIENCY, FITTED_NAMES
from rlbatch_solver.costmodel.phase import Phase

# the bounds each constant is fitted within: scales within 8x either way of the derived seconds (a larger
# correction is a missing term, not an efficiency), the fixed seconds within what the measured sets' shortest
# steps leave room for
BOUNDS: dict[str, tuple[float, float]] = {"rollout_scale": (0.125, 8.0), "forward_scale": (0.125, 8.0),
                                          "train_scale": (0.125, 8.0), "step_fixed_s": (0.0, 60.0)}
START = {"rollout_scale": 1.0, "forward_scale": 1.0, "train_scale": 1.0, "step_fixed_s": 0.0}
SCALE_OF = {Phase.ROLLOUT: "rollout_scale", Phase.OLD_LOG_PROB: "forward_scale", Phase.REF: "forward_scale",
            Phase.ACTOR_UPDATE: "train_scale", Phase.CRITIC_UPDATE: "train_scale", Phase.CRITIC_VALUES: "forward_scale"}
ROUNDS = 6


def source_key(point: Mapping[str, Any]) -> str:
    """The source a point comes from: its ``source_family`` where the file names one (several documents of one
    author and setup), else the first address of ``source`` without its commit, anchor or query."""
    if point.get("source_family"):
        return str(point["source_family"])
    url = str(point["source"]).split()[0].strip("'\"")
    url = re.sub(r"^https?://", "", url).split("#")[0].split("?")[0]
    return re.sub(r"/(blob|tree)/[0-9a-f]{7,40}/", "/", url)


@dataclass
class Cached:
    """One point's derived prediction (no fitted constant applied): what the fit rescales."""

    name: str
    source: str
    framework: str
    seconds: dict[str, float]  # phase -> derived seconds
    # (phases' seconds, which of them or None for all) -> those phases as the step counts them (tables.phases_seconds)
    combine: Callable[..., float]
    measured: dict[str, float]  # quantity -> measured (time quantities only)
    memory: dict[str, tuple[float, float]]  # memory quantity -> (predicted, measured): not fitted
    series: str = ""  # points of one source differing in the model or the response limit only
    params: float = 0.0  # the model's parameters
    max_response: float = 0.0  # the response limit (tokens)
    host_s: float = 0.0  # the rollout's sourced host seconds (time.step_host_seconds): added unscaled, as estimate_time
    engine_rollout: bool = True  # an inference engine generates (rollout_scale applies), not the model's own generate
    passes: dict[str, Any] = field(default_factory=dict)  # phase -> time.PassSeconds (what the pass scales multiply)


def scaled(c: Cached, k: Mapping[str, float]) -> dict[str, float]:
    """The phases' seconds with the constants ``k`` applied, as estimate_time applies them."""
    out = {}
    for phase, s in c.seconds.items():
        name = SCALE_OF.get(phase)
        if phase in c.passes:
            out[phase] = c.passes[phase].at(k[name])
            continue
        if phase == Phase.ROLLOUT:
            s -= c.host_s
            if not c.engine_rollout:
                name = None
        out[phase] = s * k[name] if name else s
    if Phase.ROLLOUT in out:
        out[Phase.ROLLOUT] += k["step_fixed_s"] + c.host_s
    return out


# quantity -> the phases a source times as one figure, combined as the step combines them (a concurrency group at its
# slowest member): OpenRLHF's benchmark table reports as "Generation" PPOTrainer.fit's gen_exp_time, the
# make_experience loop in which each micro batch is generated and then given its experience forwards
# (openrlhf/trainer/ppo_trainer.py ``fit``, utils/perf.py ``print_throughput_step3``, read at the table's commit)
COMPOSITE = {"generation_experience": (Phase.ROLLOUT, Phase.OLD_LOG_PROB, Phase.REF, Phase.CRITIC_VALUES)}


def predicted(c: Cached, k: Mapping[str, float]) -> dict[str, float]:
    """quantity -> predicted seconds of every time quantity ``c`` measures."""
    sec = scaled(c, k)
    out = {}
    for q in c.measured:
        if q in COMPOSITE:
            v = c.combine(sec, COMPOSITE[q])
        else:
            v = c.combine(sec) if q == "step" else sec.get(q)
        if v:
            out[q] = v
    return out


def loss(points: Sequence[Cached], k: Mapping[str, float]) -> float:
    by_source: dict[str, list[float]] = {}
    for c in points:
        pred = predicted(c, k)
        for q, m in c.measured.items():
            if q in pred and m > 0:
                by_source.setdefault(c.source, []).append(math.log(pred[q] / m) ** 2)
    return sum(sum(v) / len(v) for v in by_source.values())


def _golden(f: Callable[[float], float], lo: float, hi: float, log: bool, iters: int = 36) -> float:
    tf = (math.log, math.exp) if log else (lambda x: x, lambda x: x)
    a, b = tf[0](lo), tf[0](hi)
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(tf[1](c)), f(tf[1](d))
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(tf[1](c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(tf[1](d))
    x = tf[1]((a + b) / 2)
    # the bounds themselves (a constant the data does not inform stays where it starts, or at its bound)
    return min((lo, x, hi), key=lambda v: f(v))


def fixed_ceiling(points: Sequence[Cached]) -> float:
    """The most the fixed seconds per step may take: the median, over the points that time every phase, of what
    they measure outside their phases (step minus the phases' sum: weight sync, reward, host work) less what the
    model already prices there for the point (``priced_outside``: its weight sync, offload moves and sourced host
    seconds), so that the fixed seconds and those terms together match it rather than pay it twice. Fitted
    freely, the constant absorbs the phases' own misses (the step totals ask for 22 s where the sources that time
    their phases measure a median of 6 s outside them, of which the model prices ~3.5), and a step that large
    flattens the growth with the response limit that the sources measure. Without such points, BOUNDS."""
    rest = [c.measured["step"] - sum(c.measured[str(p)] for p in timed) - priced_outside(c)
            for c in points for timed in [[p for p in c.seconds if p in SCALE_OF and c.seconds[p] > 0]]
            if "step" in c.measured and timed and all(str(p) in c.measured for p in timed)]
    if not rest:
        return BOUNDS["step_fixed_s"][1]
    return min(max(statistics.median(rest), 0.0), BOUNDS["step_fixed_s"][1])


def priced_outside(c: Cached) -> float:
    """Seconds of ``c``'s step the model prices outside the phases that have a fitted scale (the weight sync, the
    offload moves) and the sourced host seconds added to its rollout (``Cached.host_s``): none of them a fitted
    constant, all of them in the measured step beside its timed phases."""
    return c.host_s + sum(s for p, s in c.seconds.items() if p not in SCALE_OF)


def fit(points: Sequence[Cached]) -> dict[str, float]:
    """The constants that minimise ``loss`` within BOUNDS (coordinate descent, golden-section per constant); a
    constant no point informs (no phase it scales is measured or in a measured step) keeps its START value."""
    k = dict(START)
    informed = {n for c in points for p in c.seconds for n in [SCALE_OF.get(p)] if n
                and (p in c.measured or "step" in c.measured)}
    names = [n for n in FITTED_NAMES if n in informed or (n == "step_fixed_s" and points)]
    bounds = {**BOUNDS, "step_fixed_s": (0.0, fixed_ceiling(points))}
    for _ in range(ROUNDS):
        before = dict(k)
        for n in names:
            lo, hi = bounds[n]
            k[n] = _golden(lambda x, n=n: loss(points, {**k, n: x}), lo, hi, log=n != "step_fixed_s")
        if all(abs(k[n] - before[n]) <= 1e-4 * max(1.0, abs(before[n])) for n in names):
            break
    return k


def cross_validate(points: Sequence[Cached]) -> dict[str, dict[str, float]]:
    """source -> the constants fitted without that source's points."""
    sources = sorted({c.source for c in points})
    return {s: fit([c for c in points if c.source != s]) for s in sources}


def rounded(k: Mapping[str, float]) -> dict[str, float]:
    return {n: round(float(k[n]), 4) for n in FITTED_NAMES}


def derived_run(point: Mapping[str, Any]):
    """The calibration Run of a point, predicting with the derived model alone."""
    from rlbatch_solver.calibration import make_run

    return make_run(point["framework"], point["args"], gpu=point["gpu"], model=point["model"],
                    gpus=point.get("gpus"), prompt_mean=point.get("mean_prompt_length"),
                    response_mean=point.get("mean_response_length"),
                    response_profile=point.get("response_profile"),
                    response_longest=point.get("longest_response_length"))


def cache(point: Mapping[str, Any], time_quantity: Mapping[str, str], memory_prediction) -> Cached:
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.tables import mean_lengths, phases_seconds
    from rlbatch_solver.costmodel.time import pass_seconds, step_host_seconds

    run = derived_run(point)
    pred = run.predict(DERIVED_EFFICIENCY)
    spec, values = run.spec, run.values
    measured, memory = {}, {}
    for key, value in (point.get("measured") or {}).items():
        q = time_quantity.get(key)
        if q is None or value is None:
            continue
        if q in memory_prediction:
            memory[q] = (memory_prediction[q](pred), float(value))
        else:
            measured[q] = float(value)
    passes = {}
    for phase in pred.seconds:
        parts = pass_seconds(run._plan(values, phase, DERIVED_EFFICIENCY), phase) if phase in SCALE_OF else None
        if parts is not None:
            assert math.isclose(parts.at(1.0), pred.seconds[phase], rel_tol=1e-9, abs_tol=1e-12), (point["name"], phase)
            passes[phase] = parts
    return Cached(point["name"], source_key(point), point["framework"], dict(pred.seconds),
                  lambda sec, phases=None: phases_seconds(spec, values, sec, sec if phases is None else phases), measured, memory, str(point.get("series") or ""),
                  float(load_model(point["model"]).total_params()),
                  float(mean_lengths(spec, values)["max_response"]),
                  step_host_seconds(spec.plan(values, Phase.ROLLOUT)) if Phase.ROLLOUT in pred.seconds else 0.0,
                  spec.plan(values, Phase.ROLLOUT).engine != "hf", passes)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None under three pairs or with a constant side."""
    if len(xs) < 3:
        return None

    def ranks(v: Sequence[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for t in range(i, j + 1):
                r[order[t]] = (i + j) / 2.0
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    if sx == 0 or sy == 0:
        return None
    return sum((a - mx) * (b - my) for a, b in zip(rx, ry)) / (sx * sy)


def attainable_spearman(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Spearman's rank correlation against ``measured`` of a prediction that orders every pair the measured way but
    for the ties that are not a prediction's to break: rows predicted exactly alike (one config: any prediction
    from the config ties them) stay tied, placed at their measured mean, and rows measured alike (a source giving
    one figure for several runs) are ordered by the prediction, which cannot tie runs whose configs differ. Three
    runs with one such tie reach sqrt(3)/2 = 0.866 at most. None where ``spearman`` is."""
    group: dict[float, list[float]] = {}
    for p, m in zip(predicted, measured):
        group.setdefault(p, []).append(m)
    best = [(sum(group[p]) / len(group[p]), p) for p in predicted]  # the measured order, the model's ties kept
    return spearman(best, measured)

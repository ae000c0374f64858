"""Run a sweep: every grid point gets its best config, written as it finishes.

* Results are JSON lines, one per point, appended and flushed (and fsynced)
  the moment a point finishes, so a killed sweep loses only what was running.
* ``resume`` reads the file, drops a torn last line, and skips every point id
  already there: nothing is done twice, nothing is lost.
* Points are handed out one at a time (``imap_unordered``-style), so a slow
  point occupies one worker and the others keep going.
* Backends: local processes (default) or a Ray cluster (``pip install .[ray]``).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import InputError, shown
from ..safe_input import MAX_LOG_BYTES, MAX_LOG_LINE, exists, output_file, parse_json_line, read_text
from .grid import Grid, Point

GIB = 2**30


def evaluate_point(point: Point) -> dict[str, Any]:
    """The best config of one point by its objective, or why there is none."""
    from .. import api
    from ..scenario import scenario_from_dict
    from ..solver.proof import no_fit_is_proven

    start = time.perf_counter()
    row: dict[str, Any] = {"id": point.id, "point": point.scenario}
    try:
        sc = priced_lengths(scenario_from_dict(point.scenario))
        # one CP-SAT thread per point: the points are what runs in parallel
        rep = api.recommend(sc, top=1, time_limit_s=point.time_limit_s, solver_workers=1)
    except InputError as err:
        row.update(status="error", reason=str(err))
    else:
        row["proven"] = rep.proven or rep.status == "infeasible"  # the answer is proven, whichever it is
        row["solver_status"] = rep.status
        row["capacity_gib"] = round(rep.capacity_mib / 1024, 3)
        best = rep.best
        if best is None:
            ids = rep.conflict.ids if rep.conflict else []
            short = {k: {"least_gib": round(a / 1024, 2), "capacity_gib": round(b / 1024, 2)}
                     for k, (a, b) in rep.memory_floor.items() if a > b}
            proven = no_fit_is_proven(rep)
            row["status"] = "infeasible" if proven else "timed_out"
            row["proven"] = proven
            row["conflict"] = ids
            row["memory_short"] = short
            row["reason"] = _reason(ids, short, rep.status)
            host = getattr(rep, "host_unfit", None)  # no config fits the point's host_mem_gib (commands/host_fit.py)
            if host is not None:
                row["host_memory"] = host.to_dict()
                row["reason"] = (f"host RAM: the least any config excluded needs is {host.peak_gib:.0f} GiB per node at "
                                 f"{host.when}, over the {host.limit_gib:.0f} GiB usable of {host.ram_gib:.0f}")
        else:
            row.update(
                status="ok",
                native=best.native,
                step_time_s=round(best.step_time_s, 4),
                tokens_per_s=round(best.tokens_per_s, 2),
                phase_seconds={k: round(v, 4) for k, v in best.phase_seconds.items()},
                memory_gib={p: round(r.peak(p) / GIB, 3) for p, r in best.memory.items()},
                # each phase's own line (a vLLM rollout's is the GPU less its fixed margin: MemoryReport.usable_for)
                capacity_gib_by_phase={p: round(r.usable_for(p) / GIB, 3) for p, r in best.memory.items()},
                memory_terms_gib={p: {k: round(v / GIB, 3) for k, v in r.phases[p].items()}
                                  for p, r in best.memory.items()},
            )
            if best.stages:
                row["pipeline"] = [{"pool": n, "seconds": round(s, 3), "idle_ratio": round(i, 3)}
                                   for n, s, i in best.stages]
            if rep.placement is not None:
                row["placement"] = rep.placement.to_dict()
            if rep.lengths:  # the mean lengths the step time assumed, and the length profile that set them
                row["mean_lengths"] = rep.lengths
            if rep.host is not None:  # the node's RAM (host_mem_gib of the point, else the GPU type's standard node)
                row["host_memory"] = rep.host.to_dict()
            price = point.scenario.get("price_per_gpu_hour")
            if price:
                row["cost_per_step"] = round(best.step_time_s / 3600 * sc.total_gpus * price, 6)
    row["wall_s"] = round(time.perf_counter() - start, 3)
    return row


def priced_lengths(sc: Any) -> Any:
    """The point's scenario with the data its step time is priced for: a grid that names no ``dataset`` names
    none (``""``), so its lengths come from its ``response_profile``, or the model's, or the ``default`` share of
    its own response_length (docs/cost-model.md section 4), not from the example data a recommend command would
    print (commands/recommend.py printed_dataset): a sweep prints no command to check, and its grid's
    response_length is the user's stated answer."""
    return replace(sc, dataset="") if sc.dataset is None else sc


def _reason(ids: list[str], short: dict[str, Any], status: str) -> str:
    if short:
        k, v = max(short.items(), key=lambda kv: kv[1]["least_gib"] - kv[1]["capacity_gib"])
        return (f"{k}: needs at least {v['least_gib']} GiB per GPU, {v['capacity_gib']} GiB usable"
                + (f"; conflicting rules: {', '.join(ids)}" if ids else ""))
    if ids:
        return "conflicting rules: " + ", ".join(ids)
    if status not in ("infeasible", "optimal"):
        return (f"no config found within the time limit (solver status {status}): not proven infeasible; "
                "raise time_limit_s in the grid")
    return f"no config found (solver status {status})"


# ----------------------------------------------------------------------------- results file
def read_results(path: str | Path, field: str = "summary") -> list[dict[str, Any]]:
    """Complete result lines; a torn last line (killed mid-write), a line that is not JSON within ``safe_input``'s
    limits and a row not shaped as a sweep writes it are ignored. ``field`` names the option in the errors
    (a results file larger than ``MAX_LOG_BYTES``, or not a regular file)."""
    p = Path(path)
    if not exists(p):
        return []
    text = read_text(p, field, MAX_LOG_BYTES, "the --out file of a sweep (JSON lines)", lenient=True)
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line or len(line) > MAX_LOG_LINE:
            continue
        row = parse_json_line(line)
        if _well_formed(row):
            rows.append(row)
    return rows


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(value: Any) -> bool:
    """None, or a mapping of names to finite numbers."""
    return value is None or (isinstance(value, dict) and all(_number(v) for v in value.values()))


def _well_formed(row: Any) -> bool:
    """A row shaped as ``evaluate_point`` writes it, in the fields the summary and the plots read."""
    if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("point"), dict):
        return False
    gpus = row["point"].get("gpus")
    if gpus is not None and not (isinstance(gpus, int) and not isinstance(gpus, bool) and 0 <= gpus <= 10**9):
        return False
    if any(row.get(k) is not None and not _number(row[k])
           for k in ("step_time_s", "tokens_per_s", "cost_per_step", "capacity_gib")):
        return False
    if not (_numbers(row.get("memory_gib")) and _numbers(row.get("capacity_gib_by_phase"))):
        return False
    terms = row.get("memory_terms_gib")
    if terms is not None and not (isinstance(terms, dict) and all(_numbers(t) and t is not None
                                                                  for t in terms.values())):
        return False
    if row.get("status") == "ok" and not _number(row.get("tokens_per_s")):
        return False
    host = row.get("host_memory")
    if host is not None and not (isinstance(host, dict) and (host.get("fits") is not False or all(
            _number(host.get(k)) for k in ("peak_gib", "limit_gib", "ram_gib")))):
        return False
    return row.get("placement") is None or isinstance(row["placement"], dict)


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (a write cut by a kill), so appends start clean."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    with path.open("r+b") as f:
        f.truncate(cut)


class ResultWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.f = path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        self.f.write(json.dumps(row, sort_keys=True, default=str) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


# ----------------------------------------------------------------------------- backends
def _local(points: list[Point], workers: int, fn: Callable[[Point], dict]) -> Iterable[dict[str, Any]]:
    if workers <= 1:
        for p in points:
            yield fn(p)
        return
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # CP-SAT threads and fork do not mix
    with ctx.Pool(workers) as pool:
        yield from pool.imap_unordered(fn, points, chunksize=1)


def _ray(points: list[Point], workers: int, fn: Callable[[Point], dict], address: str | None) -> Iterable[dict]:
    try:
        import ray
    except ImportError:
        raise InputError("backend", "ray is not installed.", 'pip install ".[ray]", or use --backend local.') from None
    started_here = not ray.is_initialized()
    if started_here:  # a local Ray instance with `workers` CPUs, or the cluster at `address`
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 **({} if address else {"num_cpus": max(1, workers)}))
    try:
        remote = ray.remote(num_cpus=1)(fn)
        pending = [remote.remote(p) for p in points]  # one task per point: a slow point holds one CPU
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()


@dataclass
class SweepSummary:
    total: int
    skipped: int
    ran: int
    ok: int
    infeasible: int
    errors: int
    wall_s: float
    timed_out: int = 0  # no config found within the time limit, and none proven impossible


def run_sweep(
    grid: Grid,
    out: str | Path,
    *,
    resume: bool = False,
    workers: int = 1,
    backend: str = "local",
    ray_address: str | None = None,
    progress: bool = True,
    fn: Callable[[Point], dict] = evaluate_point,
) -> SweepSummary:
    """Evaluate every point not already in ``out``; append each result as it finishes."""
    # a pipe or a device would block or never end: only a results file, new or there, is appended to
    path = output_file(out, "out", "a results file (JSON lines), new or from an earlier sweep")
    if exists(path) and path.stat().st_size and not resume:
        raise InputError("out", f"{path} already has results.", "pass --resume to continue it, or choose a new --out.")
    if backend not in ("local", "ray"):
        raise InputError("backend", f"unknown backend '{backend}'.", "use --backend local or --backend ray.")
    if workers < 1:
        raise InputError("workers", f"{workers} must be at least 1.", "pass --workers 2.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as err:
        raise InputError("out", f"cannot create the folder of {shown(path, 60)}: "
                         f"{getattr(err, 'strerror', None) or err}.", "pass a writable --out path.") from None
    done = {r["id"] for r in read_results(path, "out")}  # first: it refuses a file beyond MAX_LOG_BYTES
    _drop_torn_tail(path)
    todo = [p for p in grid.points if p.id not in done]
    start = time.perf_counter()
    counts = {"ok": 0, "infeasible": 0, "error": 0}
    try:
        writer = ResultWriter(path)
    except (OSError, ValueError) as err:
        raise InputError("out", f"cannot write {shown(path, 60)}: {getattr(err, 'strerror', None) or err}.",
                         "pass a writable --out path.") from None
    stream = _local(todo, workers, fn) if backend == "local" else _ray(todo, workers, fn, ray_address)
    try:
        if progress and todo:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
                TimeRemainingColumn

            with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.description}")) as bar:
                task = bar.add_task("", total=len(todo))
                for row in stream:
                    writer.write(row)
                    counts[row.get("status", "error")] = counts.get(row.get("status", "error"), 0) + 1
                    bar.update(task, advance=1, description=f"last: {row.get('status')}")
        else:
            for row in stream:
                writer.write(row)
                counts[row.get("status", "error")] = counts.get(row.get("status", "error"), 0) + 1
    finally:
        writer.close()
    return SweepSummary(len(grid.points), len(grid.points) - len(todo), len(todo), counts["ok"],
                        counts["infeasible"], counts["error"], time.perf_counter() - start,
                        counts.get("timed_out", 0))

"""The commands, run for the web page in a worker process (worker.py): each takes ``Inputs`` and returns a plain
dict the page shows. They make the command line's own calls (commands/entry.py) and print its own text
(render.py); the page adds the chart and the copy button around them."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import api  # noqa: F401 - imported before the first request forks (worker.PRELOAD)
from .. import render
from ..commands import entry
from ..frameworks.overrides import exported_pair
from ..rules.base import stage_text
from .form import Inputs
from .pasted import materialize

GIB = 2**30


@dataclass(frozen=True)
class Job:
    inputs: Inputs
    time_limit_s: float = 10.0  # the solver's share of the request's time cap


def _console():
    from rich.console import Console

    return Console(record=True, file=io.StringIO(), width=110, color_system=None, highlight=False, soft_wrap=False)


class _Folder:
    """The request's own working folder (pasted files go there); its path never shows on the page."""

    def __enter__(self) -> Path:
        self._tmp = tempfile.TemporaryDirectory(prefix="rlbatch-web-")
        self._cwd = os.getcwd()
        os.chdir(self._tmp.name)
        return Path(self._tmp.name)

    def __exit__(self, *exc) -> None:
        os.chdir(self._cwd)
        self._tmp.cleanup()


def _clean(text: str, folder: Path) -> str:
    return text.replace(f"{folder}{os.sep}", "").replace(str(folder), ".")


def _run(job: Any, body: Callable[[Any, Path, Any, float], dict]) -> dict:
    """``body`` with the request's folder, a recording console and its notes (stderr) captured."""
    notes = io.StringIO()
    console = _console()
    with _Folder() as folder, contextlib.redirect_stderr(notes):
        out = body(getattr(job, "inputs", job), folder, console, getattr(job, "time_limit_s", 0.0))
    out["text"] = _clean(console.export_text(), folder)
    out["notes"] = [_clean(line.removeprefix("note: "), folder) for line in notes.getvalue().splitlines() if line]
    out.setdefault("status", 200)
    return out


def _opt(text: str) -> str | None:
    return text or None


# ------------------------------------------------------------------------------------------------ chart data
def check_chart(mem: Any) -> dict:
    """check's memory per phase (MemoryCheck) as the chart's data: GiB per term, the usable line per phase."""
    return {"gpu": mem.gpu, "model": mem.model, "total_gib": mem.total_mib / 1024,
            "phases": {render.PHASE_TITLE.get(p, p): {"terms": {t: v / 1024 for t, v in terms.items()},
                                                      "usable_gib": mem.capacity_of(p) / 1024}
                       for p, terms in mem.phases.items()}}


def choice_chart(report: Any, choice: Any) -> dict:
    """A recommended config's memory per phase as the chart's data."""
    return {"gpu": report.gpu.display_name, "model": report.model.name, "total_gib": report.gpu.memory_gib,
            "phases": {render.PHASE_TITLE.get(p, p): {"terms": {t: v / GIB for t, v in r.phases[p].items()},
                                                      "usable_gib": r.usable_for(p) / GIB}
                       for p, r in choice.memory.items()}}


def _times(seconds: dict[str, float], step: float) -> dict:
    return {"phases": {render.PHASE_TITLE.get(p, p): round(s, 2) for p, s in seconds.items()}, "step_s": round(step, 2)}


# ------------------------------------------------------------------------------------------------ the commands
def _check(i: Inputs, folder: Path, console: Any, time_limit: float) -> dict:
    overrides, config = materialize(i.config, folder)
    report = entry.check(overrides, framework=_opt(i.fw), gpus=i.gpus, model=_opt(i.model), gpu=_opt(i.gpu),
                         extra_gpus=None, config=config, length_fraction=None, calibration=None,
                         mean_prompt_len=None, mean_response_len=None, host_mem=None,
                         longest_response_len=i.longest_response_len)
    render.print_check(console, report)
    out = {"valid": report.valid, "framework": f"{report.framework} {report.version}",
           "violations": [v.to_dict() | {"when": stage_text(v.stage)} for v in report.violations]}
    if report.memory is not None:
        out["chart"] = check_chart(report.memory)
        out["times"] = _times(report.memory.seconds, report.memory.step_s)
    return out


def _diff(report: Any) -> list[str]:
    """recommend from a pasted config: '- key=old' / '+ key=new' lines that turn it into the best one."""
    from ..commands.recommend import start_changes

    changed, dropped = start_changes(report)
    old = dict(exported_pair(x) for x in report.start.native) if report.start is not None else {}
    lines = []
    for arg in changed:
        key = exported_pair(arg)[0]
        if key in old:
            lines.append(f"- {key}={old[key]}")
        lines.append(f"+ {arg}")
    lines += [f"- {key}" for key in dropped]
    return lines


def _recommend(i: Inputs, folder: Path, console: Any, time_limit: float) -> dict:
    overrides, config = materialize(i.config, folder)
    common = dict(top=5, time_limit=time_limit, extra_gpus=None, length_fraction=None, calibration=None,
                  mean_prompt_len=None, mean_response_len=None, placement=None,
                  longest_response_len=i.longest_response_len)
    if overrides or config:
        path = overrides[0] if overrides and len(overrides) == 1 and overrides[0].endswith(".sh") else config
        if path is None:  # pasted arguments: written as the YAML config they make, as recommend --from reads it
            flat, _ = entry.inputs.pasted(i.fw or "verl", None, overrides, "recommend from")
            path = str(folder / "pasted.yaml")
            Path(path).write_text(_yaml(flat), encoding="utf-8")
        report = entry.recommend_from(path, framework=_opt(i.fw), gpu=_opt(i.gpu), gpus=i.gpus, model=_opt(i.model),
                                      objective=None, scenario_given=[], **common)
    else:
        flags = {"framework": _opt(i.fw), "gpu": _opt(i.gpu), "gpus": i.gpus, "nnodes": None, "model": _opt(i.model),
                 "algorithm": _opt(i.algo), "n": i.n, "prompt_length": i.prompt_len,
                 "response_length": i.response_len, "objective": None}
        report = entry.recommend(flags, scenario_file=None, set_=None, search=None, host_mem=None, **common)
    render.print_recommend(console, report, verbose=True)
    out: dict[str, Any] = {"found": bool(report.choices), "framework": f"{report.framework} {report.version}"}
    if report.choices:
        best = report.best
        script = overrides[0] if overrides and overrides[0] == str(folder / "pasted.sh") else None
        out["best"] = {"args": best.native, "copy": _best_copy(report, script, folder), "script": bool(script),
                       "step_time_s": round(best.step_time_s, 2), "tokens_per_s": round(best.tokens_per_s)}
        out["chart"] = choice_chart(report, best)
        out["times"] = _times(best.phase_seconds, best.step_time_s)
        # what checks the copy: a script says its own framework and GPUs; bare arguments need them said
        out["check_with"] = {"fw": i.fw, "gpus": i.gpus} if script else \
            {"fw": report.framework, "gpus": report.scenario.total_gpus}
    if report.start is not None:
        out["start"] = {"verdict": report.start.verdict, "diff": _diff(report)}
    return out


def _best_copy(report: Any, script: str | None, folder: Path) -> str:
    """What the copy button copies: the best config as a whole command (the one recommend prints); from a pasted
    script, the script with the best config written in, every other line as it was (``recommend --from run.sh
    --write best.sh``)."""
    from ..commands.recommend import best_command, companion_commands, start_changes

    if script is None:
        # a server the run talks to first, in the background (TRL's trl vllm-serve), then the run
        lines = [render.command_text(words, background=True) for words in companion_commands(report)]
        return "\n".join(lines + [render.command_text(best_command(report))])

    changed, dropped = start_changes(report)
    if not changed and not dropped:  # the verdict is to keep the script as it is
        return Path(script).read_text(encoding="utf-8")
    return entry.inputs.write_script(script, changed, report.framework, str(folder / "best.sh"), drop=dropped).text


def _yaml(flat: dict) -> str:
    import yaml

    return yaml.safe_dump(dict(flat), sort_keys=False)


def _explain(i: Inputs, folder: Path, console: Any, time_limit: float) -> dict:
    from ..errors import InputError

    if not i.error:
        raise InputError("error", "no error line given.", "paste the line your job died on into the error box.")
    overrides, config = materialize(i.config, folder)
    report = entry.explain(i.error, overrides, framework=_opt(i.fw), gpus=i.gpus, model=_opt(i.model),
                           gpu=_opt(i.gpu), config=config, time_limit=time_limit, started=entry.started())
    render.print_explain(console, report)
    return {"matched": report.matched, "rules": [r.rule for r in report.rules]}


COMMANDS = {"check": _check, "recommend": _recommend, "explain": _explain}


def run(job: Job) -> dict:
    """The page's answer to ``job`` (its action one of form.ACTIONS)."""
    return _run(job, COMMANDS[job.inputs.action])


# ------------------------------------------------------------------------------------------------ sweep results
@dataclass(frozen=True)
class SweepJob:
    results: str  # a sweep's results file (JSON lines), pasted
    metric: str = "tokens_per_s"


def _png(path: Path) -> str:
    import base64

    return base64.b64encode(path.read_bytes()).decode("ascii")


def _sweep(job: SweepJob, folder: Path, console: Any) -> dict:
    from ..errors import InputError
    from ..sweep.runner import read_results
    from ..sweep.summary import plot_heatmap, plot_memory, print_summary, summary_rows

    path = folder / "results.jsonl"
    path.write_text(job.results, encoding="utf-8")
    rows = read_results(path)
    if not rows:
        raise InputError("results", "no result lines in the pasted text.",
                         "paste the file a sweep wrote (rlbatch sweep grid.yaml --out results.jsonl): one JSON "
                         "object a line.")
    print_summary(console, rows)
    out: dict[str, Any] = {"points": len(rows), "plots": {}}
    try:
        out["plots"]["heatmap"] = _png(plot_heatmap(rows, folder / "heatmap.png", job.metric))
        best = [r for r in rows if r["id"] in {x["id"] for x in summary_rows(rows) if x["best"]}]
        if best:
            out["plots"]["memory"] = _png(plot_memory(best[0], folder / "memory.png"))
            out["memory_point"] = best[0]["id"]
    except InputError as err:  # no matplotlib: the table alone, and what draws the pictures
        out["plot_error"] = str(err)
    return out


def run_sweep(job: SweepJob) -> dict:
    """The sweep page's answer: the summary table the command line prints, and its two pictures."""
    return _run(job, lambda j, folder, console, _: _sweep(j, folder, console))

"""The ``rlbatch`` command line: thin typed wrappers around the Python API.

Exit codes: 0 valid / found, 1 invalid config or infeasible scenario (with the
conflicting rules and their numbers), 2 bad input (a one-paragraph message
naming the field, never a traceback).
"""

from __future__ import annotations

import json
import sys
from typing import Any, List, Optional

import typer

from .errors import InputError, shown
from .frameworks.registry import FRAMEWORKS

# the frameworks as --framework takes them, from the registry (verl: the default)
_FRAMEWORK_NAMES = ", ".join(f"{name} (default)" if name == "verl" else name for name in FRAMEWORKS)
_FRAMEWORK_HELP = f"{_FRAMEWORK_NAMES}; a launch script names its own."

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Valid, fitting and fast batch-size and parallelism settings for RL post-training "
    f"({', '.join(FRAMEWORKS)}), answered before you launch.",
    pretty_exceptions_enable=False,
)
catalog_app = typer.Typer(help="List the GPUs and models we know.", add_completion=False)
app.add_typer(catalog_app, name="catalog")


def _console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def _fail_input(err: InputError) -> None:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(code=2)


# ----------------------------------------------------------------------------- check
_CALIBRATION_HELP = ("A calibration profile (rlbatch calibrate); default: the per-user profile if there is one. "
                     "Applied where its GPU type is the one asked about.")


def _calibration(path: Optional[str], gpu: Optional[str]):
    """The profile's efficiencies for this GPU (or None), with a note on stderr when a profile was found."""
    from .calibration import efficiency_for, resolve_profile

    eff, note = efficiency_for(resolve_profile(path), gpu)
    if note:
        typer.echo(f"note: {note}", err=True)
    return eff


_MEAN_PROMPT_HELP = ("Time: your data's mean prompt length in tokens (verl logs prompt_length/mean); default: "
                     "the calibration profile's, else max_prompt_length.")
_MEAN_RESPONSE_HELP = ("Time: your data's mean response length in tokens (verl logs response_length/mean); "
                       "default: the calibration profile's, else a share of max_response_length (docs/cost-model.md).")
_HOST_MEM_HELP = ("RAM of one node in GiB: with --gpu and --model, checks the host memory (CPU offload, sleeping "
                  "engines' weights, model loading); unset, the standard cloud node's for the GPU type, said so.")


def _means(calibration: Optional[str], gpu: Optional[str], prompt: Optional[float],
           response: Optional[float]) -> tuple[Optional[float], Optional[float], str]:
    """The mean lengths to time a step at: the flags, else the calibration profile's (said on stderr)."""
    if prompt is not None or response is not None:
        return prompt, response, "given"
    from .calibration import lengths_for, resolve_profile

    profile = resolve_profile(calibration)
    p, r = lengths_for(profile, gpu)
    if p is None and r is None:
        return None, None, "assumed"
    typer.echo(f"note: mean lengths from {profile.path}: prompt {p or '-'}, response {r or '-'} tokens", err=True)
    return p, r, "calibration"


@app.command()
def check(
    overrides: Optional[List[str]] = typer.Argument(None, help="The framework's own arguments, pasted after --, "
                                                    "or a launch script (run.sh)."),
    framework: Optional[str] = typer.Option(None, "--framework", "-f", help=_FRAMEWORK_HELP),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="Total GPUs (or give trainer.n_gpus_per_node/nnodes)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name or path to a HF config.json."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type: with --model, predicts out-of-memory per phase."),
    extra_gpus: Optional[str] = typer.Option(None, "--gpu-file", help="A YAML file with more GPU types."),
    config: Optional[str] = typer.Option(None, "--config", help="A YAML config file (instead of, or before, overrides)."),
    length_fraction: Optional[float] = typer.Option(
        None, "--length-fraction", help="Memory: the longest micro batch's length as a share of max prompt+response "
        "(default 1.0, the worst case)."),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=_CALIBRATION_HELP),
    mean_prompt_len: Optional[float] = typer.Option(None, "--mean-prompt-len", help=_MEAN_PROMPT_HELP),
    mean_response_len: Optional[float] = typer.Option(None, "--mean-response-len", help=_MEAN_RESPONSE_HELP),
    host_mem: Optional[float] = typer.Option(None, "--host-mem", help=_HOST_MEM_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Check a config: every broken rule with its numbers, stage and source (and memory, given --gpu and --model)."""
    from . import api

    try:
        framework, overrides, gpus, model = _script(framework, overrides, gpus, model)
        flat, ignored = _pasted(framework, config, overrides, "check")
        prompt_mean, response_mean, source = _means(calibration, gpu, mean_prompt_len, mean_response_len)
        report = api.check(flat, framework=framework, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus,
                           length_fraction=1.0 if length_fraction is None else length_fraction,
                           calibration=_calibration(calibration, gpu), mean_prompt_len=prompt_mean,
                           mean_response_len=response_mean, mean_lengths_from=source,
                           host_mem_gib=_host_mem(host_mem))
        report.ignored = ignored
    except InputError as err:
        _fail_input(err)
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        from .render import print_check

        print_check(_console(), report)
    raise typer.Exit(code=0 if report.valid else 1)


def _host_mem(value: Optional[float]) -> Optional[float]:
    """--host-mem: a positive number of GiB."""
    if value is None:
        return None
    if not value > 0 or value != value or value > 2**20:
        raise InputError("host-mem", f"{value} is not a node's RAM in GiB.", "give --host-mem as a positive number "
                         "of GiB, for example --host-mem 1024 for a node with 1 TiB of RAM.")
    return float(value)


def _script(framework: Optional[str], overrides: Optional[List[str]], gpus: Optional[int], model: Optional[str],
            default: Optional[str] = "verl"):
    """A launch script given in place of the arguments (``rlbatch check run.sh``): its framework, its
    arguments, its launcher's GPU count, its model when the catalog knows it; its notes printed first.
    Otherwise the arguments as they are."""
    from .launch_script import is_launch_script, read_launch_script

    if not overrides or not is_launch_script(overrides[0]):
        return framework or default, overrides, gpus, model
    script = read_launch_script(overrides[0])
    given = framework.split("==")[0].split("@")[0].strip().lower() if framework else None
    if given == "verl" and script.framework == "verl-megatron":  # the Megatron backend of the verl named
        framework = script.framework + framework.strip()[len(given):]
        given = script.framework
    if framework and given != script.framework:
        raise InputError("framework", f"--framework {framework} was given, but {overrides[0]} runs {script.framework}.",
                         f"drop --framework (or pass --framework {script.framework}).")
    notes = [f"read {overrides[0]}: {script.framework}"] + script.notes
    if model is None and script.model:
        from .catalog.models import load_model

        try:
            model = load_model(script.model).name
            notes.append(f"model from the script: {script.model} (catalog card {model})")
        except InputError:
            notes.append(f"the script's model {script.model} is not in the catalog: pass --model for the head, "
                         "length and memory rules")
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    # a version named with --framework (verl==0.7.1) is kept: the script says which framework, not which release
    name = framework.strip() if framework and any(sep in framework for sep in ("==", "@")) else script.framework
    return name, script.args + list(overrides[1:]), gpus if gpus is not None else script.gpus, model


def _pasted(framework: str, config: Optional[str], overrides: Optional[List[str]], verb: str):
    """A YAML file and/or pasted arguments -> (flat native config, ignored tokens)."""
    from . import api
    from .frameworks import get_framework

    fw = get_framework(framework)
    flat: dict[str, Any] = {}
    ignored: list[str] = []
    if config:
        flat.update(api.read_config(fw, config)[0])
    if overrides:
        more, ignored = fw.parse(overrides)
        flat.update(more)
    if not flat:
        raise InputError("config", f"nothing to {verb}.", "paste the arguments after -- or pass --config FILE.")
    return flat, ignored


# ----------------------------------------------------------------------------- fix
@app.command()
def fix(
    overrides: Optional[List[str]] = typer.Argument(None, help="The framework's own arguments, pasted after --, "
                                                    "or a launch script."),
    framework: Optional[str] = typer.Option(None, "--framework", "-f", help=_FRAMEWORK_HELP),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="Total GPUs (or give them in the config)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name or HF config.json: enables head and memory rules."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type: with --model, repairs toward fitting in memory."),
    keep: Optional[str] = typer.Option(None, "--keep", help="Comma-separated keys that must not change."),
    config: Optional[str] = typer.Option(None, "--config", help="A YAML config file."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="Seconds for the whole command (it says whether "
                                     "its answer is proven within them)."),
    extra_gpus: Optional[str] = typer.Option(None, "--gpu-file", help="A YAML file with more GPU types."),
    length_fraction: Optional[float] = typer.Option(
        None, "--length-fraction", help="Memory: the longest micro batch's length as a share of max prompt+response "
        "(default 1.0, the worst case)."),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=_CALIBRATION_HELP),
    host_mem: Optional[float] = typer.Option(None, "--host-mem", help=_HOST_MEM_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The smallest change that makes a config valid (and fit, given --gpu and --model)."""
    import time

    started = time.monotonic()
    from . import api

    try:
        framework, overrides, gpus, model = _script(framework, overrides, gpus, model)
        flat, _ = _pasted(framework, config, overrides, "fix")
        report = api.fix(flat, framework=framework, gpus=gpus, model=model, gpu=gpu,
                         keep=(keep or "").split(","), time_limit_s=time_limit, extra_gpus=extra_gpus,
                         started=started, length_fraction=1.0 if length_fraction is None else length_fraction,
                         calibration=_calibration(calibration, gpu), host_mem_gib=_host_mem(host_mem))
    except InputError as err:
        _fail_input(err)
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        from .render import print_fix

        print_fix(_console(), report)
    raise typer.Exit(code=0 if report.after is not None else 1)


# ----------------------------------------------------------------------------- explain
@app.command()
def explain(
    error: str = typer.Argument(..., help="The error line your job died on, in quotes."),
    overrides: Optional[List[str]] = typer.Argument(None, help="Optionally the config, pasted after --."),
    framework: Optional[str] = typer.Option(None, "--framework", "-f",
                                            help=f"Limit to one framework: {', '.join(FRAMEWORKS)}."),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="Total GPUs (for the fix)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name or HF config.json (for the fix)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type (out-of-memory messages: unset, inferred from "
                                      "the capacity the message reports)."),
    config: Optional[str] = typer.Option(None, "--config", help="A YAML config file (for the fix)."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="Seconds for the whole command (the fix's search)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Map a framework's error message to our rule, in plain words; with the config, propose the fix. Out-of-memory
    messages (CUDA, vLLM's KV cache, Ray's node memory) get their phase, their numbers beside our prediction, and
    with the config and model the nearest change that fits."""
    import time

    started = time.monotonic()
    from . import api

    try:
        cfg = None
        framework, overrides, gpus, model = _script(framework, overrides, gpus, model, default=None)
        if overrides or config:
            if framework is None:  # the config is read in the syntax of the framework whose message matched
                from .frameworks.error_text import match_error

                found = match_error(error)
                framework = found[0][0].framework if found else None
                if framework is None:  # an out-of-memory message: the framework whose traceback frames it shows
                    from .commands.explain_oom import read_oom

                    oom = read_oom(error)
                    framework = oom[1] if oom else None
            cfg, _ = _pasted(framework or "verl", config, overrides, "explain")
        report = api.explain(error, framework=framework, config=cfg, gpus=gpus, model=model, time_limit_s=time_limit,
                             started=started, gpu=gpu)
    except InputError as err:
        _fail_input(err)
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        from .render import print_explain

        print_explain(_console(), report)
    raise typer.Exit(code=0 if report.matched else 1)


# ----------------------------------------------------------------------------- sweep
@app.command()
def sweep(
    grid_file: Optional[str] = typer.Argument(None, help="The grid YAML (see docs/sweeps.md)."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Results file (JSON lines), written as points finish."),
    resume: bool = typer.Option(False, "--resume", help="Skip the points already in --out."),
    workers: int = typer.Option(1, "--workers", "-j", help="Processes (or Ray tasks) at once."),
    backend: str = typer.Option("local", "--backend", help="local | ray"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Ray cluster address (default: local)."),
    summary: Optional[str] = typer.Option(None, "--summary", help="Print a table of this results file."),
    plot: Optional[str] = typer.Option(None, "--plot", help="With --summary: heatmap PNG of GPU type x count."),
    metric: str = typer.Option("tokens_per_s", "--metric", help="tokens_per_s | cost_per_step | step_time_s"),
    memory_plot: Optional[str] = typer.Option(None, "--memory-plot", help="With --summary: stacked-bar PNG ..."),
    point: Optional[str] = typer.Option(None, "--point", help="... of this point id (default: the best point)."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=_CALIBRATION_HELP),
) -> None:
    """Best config for every point of a hardware/model grid; resumable; tables and plots."""
    from .sweep.runner import read_results

    try:
        if summary:
            from .sweep.summary import plot_heatmap, plot_memory, print_summary, summary_rows

            if not __import__("pathlib").Path(summary).exists():
                raise InputError("summary", f"{summary} does not exist.", "give the --out file of a sweep.")
            rows = read_results(summary)
            print_summary(_console(), rows)
            if plot:
                typer.echo(f"wrote {plot_heatmap(rows, plot, metric)}")
            if memory_plot:
                chosen = [r for r in rows if r["id"] == point] if point else \
                    [r for r in rows if r["id"] in {x["id"] for x in summary_rows(rows) if x["best"]}]
                if not chosen:
                    raise InputError("point", f"no point with id {point}." if point else "no point fits.",
                                     "pick an id from the summary table's results file.")
                typer.echo(f"wrote {plot_memory(chosen[0], memory_plot)}")
            return
        if not grid_file or not out:
            raise InputError("grid", "a sweep needs a grid file and --out.",
                             "run: rlbatch sweep grid.yaml --out results.jsonl (or --summary results.jsonl).")
        from .sweep.grid import load_grid
        from .sweep.runner import run_sweep

        grid = load_grid(grid_file)
        _calibrate_grid(grid, calibration)
        result = run_sweep(grid, out, resume=resume, workers=workers, backend=backend, ray_address=ray_address,
                           progress=not no_progress)
    except InputError as err:
        _fail_input(err)
        return
    typer.echo(f"{result.total} points: {result.skipped} already done, ran {result.ran} "
               f"({result.ok} ok, {result.infeasible} infeasible, "
               + (f"{result.timed_out} timed out (not proven infeasible: raise time_limit_s), " if result.timed_out else "")
               + f"{result.errors} errors) in {result.wall_s:.1f} s; "
               f"results in {out}")


# ------------------------------------------------------------------------- scenario
def _scenario(
    scenario_file: Optional[str], framework: Optional[str], gpu: Optional[str], gpus: Optional[int],
    nnodes: Optional[int], model: Optional[str], algo: Optional[str], n: Optional[int],
    prompt_len: Optional[int], response_len: Optional[int], set_: Optional[List[str]],
    search: Optional[List[str]], objective: Optional[str] = None,
):
    from .frameworks.overrides import parse_scalar
    from .scenario import default_scenario, load_scenario, scenario_from_dict

    base = load_scenario(scenario_file) if scenario_file else None
    flags = {
        "framework": framework, "gpu": gpu, "gpus": gpus, "nnodes": nnodes, "model": model, "algorithm": algo,
        "n": n, "prompt_length": prompt_len, "response_length": response_len, "objective": objective,
    }
    given = {k: v for k, v in flags.items() if v is not None}
    if base is None and not given and not set_ and not search:
        return default_scenario()
    data = base.to_dict() if base else {}
    data.update(given)
    fixed = dict(data.get("fixed") or {})
    for item in set_ or []:
        key, eq, raw = item.partition("=")
        if not eq or not key:
            raise InputError("--set", f"'{item}' is not key=value.", "write --set data.train_batch_size=64.")
        fixed[key] = parse_scalar(raw)
    srch = dict(data.get("search") or {})
    for item in search or []:
        key, eq, raw = item.partition("=")
        if not eq or not key or not raw:
            raise InputError("--search", f"'{item}' is not key=v1,v2,...", "write --search data.train_batch_size=32,64.")
        srch[key] = [parse_scalar(x) for x in raw.split(",") if x.strip()]
    data["fixed"], data["search"] = fixed, srch
    return scenario_from_dict(data)


_SCENARIO_OPTS = dict(
    scenario_file=typer.Option(None, "--scenario", help="Scenario YAML file (flags override it)."),
    framework=typer.Option(None, "--framework", "-f", help=_FRAMEWORK_NAMES),
    gpu=typer.Option(None, "--gpu", help="GPU type, e.g. rtx4090, a100-80gb, h100."),
    gpus=typer.Option(None, "--gpus", help="Total GPUs."),
    nnodes=typer.Option(None, "--nnodes", help="Nodes (default 1)."),
    model=typer.Option(None, "--model", help="Model name or path to a HF config.json."),
    algo=typer.Option(None, "--algo", help="ppo, grpo, dapo, gspo, adpo, rloo, reinforce++"),
    n=typer.Option(None, "--n", help="Responses per prompt (rollout.n)."),
    prompt_len=typer.Option(None, "--prompt-len", help="max_prompt_length"),
    response_len=typer.Option(None, "--response-len", help="max_response_length"),
    set_=typer.Option(None, "--set", help="Fix a native key: --set data.train_batch_size=64 (repeatable)."),
    search=typer.Option(None, "--search", help="Search a native key: --search key=1,2,4 (repeatable)."),
)


@app.command()
def enumerate(  # noqa: A001
    scenario_file: Optional[str] = _SCENARIO_OPTS["scenario_file"],
    framework: Optional[str] = _SCENARIO_OPTS["framework"],
    gpu: Optional[str] = _SCENARIO_OPTS["gpu"],
    gpus: Optional[int] = _SCENARIO_OPTS["gpus"],
    nnodes: Optional[int] = _SCENARIO_OPTS["nnodes"],
    model: Optional[str] = _SCENARIO_OPTS["model"],
    algo: Optional[str] = _SCENARIO_OPTS["algo"],
    n: Optional[int] = _SCENARIO_OPTS["n"],
    prompt_len: Optional[int] = _SCENARIO_OPTS["prompt_len"],
    response_len: Optional[int] = _SCENARIO_OPTS["response_len"],
    set_: Optional[List[str]] = _SCENARIO_OPTS["set_"],
    search: Optional[List[str]] = _SCENARIO_OPTS["search"],
    limit: int = typer.Option(100_000, "--limit", help="Stop after this many configs."),
    show: int = typer.Option(30, "--show", help="Rows in the table (JSON prints all)."),
    time_limit: float = typer.Option(20.0, "--time-limit", help="Solver time limit, seconds."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines: one config a line (its native keys; with --gpu "
                                 "and --model also _memory: the phase with the least headroom, its peak and headroom "
                                 "in MiB), then one summary line."),
) -> None:
    """List every valid batch-size tuple in the search space; with --gpu and --model, every one that fits in memory."""
    from . import api

    if limit < 1 or time_limit <= 0:
        _fail_input(InputError("--limit/--time-limit", "must be positive.", "pass --limit 100 --time-limit 20."))
    try:
        sc = _scenario(scenario_file, framework, gpu, gpus, nnodes, model, algo, n, prompt_len, response_len, set_, search)
        report = api.enumerate(sc, limit=limit, time_limit_s=time_limit * 0.8)
        conflict = None
        if report.count == 0 and report.status == "infeasible" and not report.memory_applied:
            from .solver.explain import conflicting_rules
            from .frameworks import get_framework

            fw = get_framework(sc.framework)
            conflict = conflicting_rules(fw.ruleset.extended(report.space.extra_rules), report.space.domains,
                                         time_limit_s=max(0.05, time_limit * 0.2))
    except InputError as err:
        _fail_input(err)
        return
    from .render import print_conflict, print_enumerate

    if as_json:
        fits = report.fits if report.memory_applied else [None] * len(report.native)
        for native, fit in zip(report.native, fits):
            line = _native_dict(native)
            if fit is not None:
                line["_memory"] = fit
            typer.echo(json.dumps(line))
        typer.echo(json.dumps({"count": report.count, "complete": report.complete, "status": report.status,
                               "raw_combinations": report.raw_size, "framework": report.framework,
                               "rules_version": report.version,
                               "memory_applied": report.memory_applied,
                               "memory_floor_mib": {k: {"least": a, "line": b}
                                                    for k, (a, b) in report.memory_floor.items()},
                               "conflict": conflict.ids if conflict else None}))
    else:
        from .render import print_no_fit

        print_enumerate(_console(), report, sc, show)
        if conflict is not None:
            print_conflict(_console(), conflict, report.space)
        elif report.memory_applied and not report.count and report.status == "infeasible":
            print_no_fit(_console(), report)
    raise typer.Exit(code=0 if report.count else 1)


@app.command()
def recommend(
    scenario_file: Optional[str] = _SCENARIO_OPTS["scenario_file"],
    framework: Optional[str] = _SCENARIO_OPTS["framework"],
    gpu: Optional[str] = _SCENARIO_OPTS["gpu"],
    gpus: Optional[int] = _SCENARIO_OPTS["gpus"],
    nnodes: Optional[int] = _SCENARIO_OPTS["nnodes"],
    model: Optional[str] = _SCENARIO_OPTS["model"],
    algo: Optional[str] = _SCENARIO_OPTS["algo"],
    n: Optional[int] = _SCENARIO_OPTS["n"],
    prompt_len: Optional[int] = _SCENARIO_OPTS["prompt_len"],
    response_len: Optional[int] = _SCENARIO_OPTS["response_len"],
    set_: Optional[List[str]] = _SCENARIO_OPTS["set_"],
    search: Optional[List[str]] = _SCENARIO_OPTS["search"],
    objective: Optional[str] = typer.Option(None, "--objective", help="time | memory-headroom | gpus"),
    top: int = typer.Option(5, "--top", help="How many configs to rank."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="Seconds for all of the command's solves together."),
    extra_gpus: Optional[str] = typer.Option(None, "--gpu-file", help="A YAML file with more GPU types."),
    length_fraction: Optional[float] = typer.Option(
        None, "--length-fraction", help="Memory: the longest micro batch's length as a share of max prompt+response "
        "(default 1.0, the worst case)."),
    from_: Optional[str] = typer.Option(
        None, "--from", help="Start from your own launch script (or YAML config): keep its model, GPUs, lengths, "
        "algorithm and batch per step; choose its micro batches, layout and memory switches; compare with it."),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=_CALIBRATION_HELP),
    mean_prompt_len: Optional[float] = typer.Option(None, "--mean-prompt-len", help=_MEAN_PROMPT_HELP),
    mean_response_len: Optional[float] = typer.Option(None, "--mean-response-len", help=_MEAN_RESPONSE_HELP),
    placement: Optional[str] = typer.Option(
        None, "--placement", help="colocate: rollout on the training GPUs, taking turns; split: rollout on a pool of its "
        "own, pipelined with training (verl separate_async, OpenRLHF --train.async_enable); auto: both, compared "
        "(docs/async.md). Default: the framework's synchronous placements."),
    host_mem: Optional[float] = typer.Option(None, "--host-mem", help=_HOST_MEM_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The fastest valid config that fits in memory, with its memory and time per phase.

    With no options it runs the built-in default scenario: ADPO, Qwen2.5-1.5B on 4x RTX 4090,
    prompt 880, response 1280, n 8 (the seed's worked example).
    """
    from . import api

    try:
        if from_ is not None:
            if placement is not None:
                raise InputError("--placement", "recommend --from keeps the placement of your config.",
                                 "drop --placement, or describe the scenario with flags instead of --from.")
            report = _recommend_from(from_, framework, gpu, gpus, model, objective, length_fraction, top, time_limit,
                                     extra_gpus, given=[scenario_file, nnodes, algo, n, prompt_len, response_len,
                                                        set_, search], calibration=calibration,
                                     means=_means(calibration, gpu, mean_prompt_len, mean_response_len))
        else:
            sc = _scenario(scenario_file, framework, gpu, gpus, nnodes, model, algo, n, prompt_len, response_len,
                           set_, search, objective)
            if length_fraction is not None:
                sc.length_fraction = length_fraction
            prompt_mean, response_mean, source = _means(calibration, sc.gpu, mean_prompt_len, mean_response_len)
            if source != "assumed":
                sc.mean_prompt_length, sc.mean_response_length = prompt_mean, response_mean
            if placement is not None:
                sc.placement = placement
            if host_mem is not None:
                sc.host_mem_gib = _host_mem(host_mem)
            sc.validate()
            eff = _calibration(calibration, sc.gpu)
            if eff is not None:
                sc.calibration = eff.as_dict()
            report = api.recommend(sc, top=top, time_limit_s=time_limit, extra_gpus=extra_gpus)
    except InputError as err:
        _fail_input(err)
        return
    from .render import print_recommend, recommend_dict

    if as_json:
        typer.echo(json.dumps(recommend_dict(report), indent=2))
    else:
        print_recommend(_console(), report)
    raise typer.Exit(code=0 if report.choices else 1)


def _recommend_from(path: str, framework: Optional[str], gpu: Optional[str], gpus: Optional[int],
                    model: Optional[str], objective: Optional[str], length_fraction: Optional[float], top: int,
                    time_limit: float, extra_gpus: Optional[str], given: list, calibration: Optional[str] = None,
                    means: tuple = (None, None, "assumed")):
    """``recommend --from run.sh`` (or a YAML config with --framework): the run the user's config describes."""
    from . import api
    from .launch_script import is_launch_script

    if any(g for g in given):
        raise InputError("--from", "the scenario comes from the config: --scenario, --nnodes, --algo, --n, "
                         "--prompt-len, --response-len, --set and --search do not apply.",
                         "edit the script (or drop --from and describe the scenario with flags).")
    if not gpu:
        raise InputError("gpu", "a launch script does not say which GPU it runs on.",
                         "pass --gpu (e.g. a100-80gb, h100, rtx4090).")
    from .frameworks.overrides import is_file

    if not is_file(path):  # else the path would be read as a pasted argument and "nothing to recommend from" said
        raise InputError("--from", f"file '{shown(path, 60)}' does not exist.",
                         "pass the path of your launch script (run.sh) or of a YAML config.")
    if is_launch_script(path):
        name, args, gpus, model = _script(framework, [path], gpus, model)
        flat, _ = _pasted(name, None, args, "recommend from")
    else:
        name = framework or "verl"
        flat, _ = _pasted(name, path, None, "recommend from")
    return api.recommend_from(name, flat, gpu=gpu, model=model, gpus=gpus, objective=objective or "time",
                              length_fraction=1.0 if length_fraction is None else length_fraction, top=top,
                              time_limit_s=time_limit, extra_gpus=extra_gpus,
                              calibration=_calibration(calibration, gpu), mean_lengths=means[:2])


def _native_dict(native: list[str]) -> dict[str, Any]:
    from .frameworks.overrides import parse_scalar

    out: dict[str, Any] = {}
    for item in native:
        if item.startswith("--"):
            k, _, v = item[2:].partition(" ")
        else:
            k, _, v = item.partition("=")
        out[k] = parse_scalar(v) if v else True
    return out


@app.command()
def rules(
    framework: str = typer.Option("verl", "--framework", "-f", help=_FRAMEWORK_NAMES),
    markdown: bool = typer.Option(False, "--markdown", help="Print the Markdown page (docs/rules-<fw>.md)."),
) -> None:
    """List a framework's rules: id, stage, message and the source it follows."""
    from .frameworks import get_framework

    try:
        fw = get_framework(framework)
    except InputError as err:
        _fail_input(err)
        return
    from .frameworks.docs import rules_page

    if markdown:
        typer.echo(rules_page(fw), nl=False)
        return
    for r in fw.ruleset.rules:
        typer.echo(f"{r.id:48s} {r.stage.value:13s} {r.source}")


def _calibrate_grid(grid, path: Optional[str]) -> None:
    """A profile's efficiencies on the grid points of its GPU type (each point records them)."""
    from .calibration import resolve_profile

    profile = resolve_profile(path)
    if profile is None:
        return
    hits = 0
    for p in grid.points:
        if profile.applies_to(str(p.scenario.get("gpu"))):
            p.scenario["calibration"] = profile.efficiency.as_dict()
            hits += 1
    typer.echo(f"note: calibration {profile.path} ({profile.gpu or 'any GPU'}) applied to {hits} of "
               f"{len(grid.points)} points", err=True)


# -------------------------------------------------------------------------- calibrate
@app.command()
def calibrate(
    log: str = typer.Argument(..., help="The run's log: verl console output or file-logger JSON lines, OpenRLHF's "
                              "output, or ms-swift's logging.jsonl."),
    overrides: Optional[List[str]] = typer.Argument(None, help="The config the run used: its arguments after --, "
                                                    "or its launch script."),
    framework: Optional[str] = typer.Option(None, "--framework", "-f", help=_FRAMEWORK_HELP),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="Total GPUs (or give them in the config)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name or HF config.json (required)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="The GPU type the run used (required)."),
    config: Optional[str] = typer.Option(None, "--config", help="A YAML config file."),
    out: Optional[str] = typer.Option(None, "--out", help="Where to write the profile (default: the per-user "
                                      "profile, which check, recommend, fix and sweep then pick up)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Fit the cost model's efficiencies to your own run's log; write a profile for --calibration."""
    from .calibration import user_profile_path
    from .commands.calibrate import calibrate as run_calibrate

    try:
        framework, overrides, gpus, model = _script(framework, overrides, gpus, model)
        if not gpu or not model:
            raise InputError("gpu" if not gpu else "model", "calibrate needs the GPU type and the model the run used.",
                             "pass --gpu (e.g. h100) and --model (e.g. qwen2.5-7b).")
        flat, _ = _pasted(framework, config, overrides, "calibrate")
        report = run_calibrate(log, flat, framework=framework, gpu=gpu, model=model, gpus=gpus,
                               out=out or user_profile_path())
    except InputError as err:
        _fail_input(err)
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        from .render import print_calibration

        print_calibration(_console(), report)
    if not report.profile.path:
        raise typer.Exit(code=1)


# -------------------------------------------------------------------------- catalog
@catalog_app.command("gpus")
def catalog_gpus(
    extra: Optional[str] = typer.Option(None, "--extra", help="A YAML file with more GPUs."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """GPU types: memory, BF16 TFLOP/s, HBM bandwidth, interconnect."""
    from .catalog.gpus import list_gpus

    try:
        gpus = list_gpus(extra)
    except InputError as err:
        _fail_input(err)
        return
    from .render import print_gpus

    if as_json:
        typer.echo(json.dumps([g.__dict__ | {"aliases": list(g.aliases)} for g in gpus], indent=2))
    else:
        print_gpus(_console(), gpus)


@catalog_app.command("models")
def catalog_models(as_json: bool = typer.Option(False, "--json")) -> None:
    """Model cards: layers, hidden, heads, parameters."""
    from .catalog.models import list_models, load_model
    from .render import print_models

    cards = [load_model(m) for m in list_models()]
    if as_json:
        typer.echo(json.dumps([{"name": c.name, "params": c.total_params(), "active_params": c.active_params(),
                                "layers": c.num_hidden_layers, "hidden": c.hidden_size,
                                "heads": c.num_attention_heads, "kv_heads": c.num_key_value_heads} for c in cards],
                              indent=2))
    else:
        print_models(_console(), cards)


def main() -> None:
    """Entry point: turns any bad input that slipped through into exit code 2."""
    try:
        app()
    except InputError as err:  # pragma: no cover - commands catch their own
        typer.echo(f"error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()

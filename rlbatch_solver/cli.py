"""The ``rlbatch`` command line: thin typed wrappers around the Python API.

Exit codes: 0 valid / found, 1 invalid config or infeasible scenario (with the
conflicting rules and their numbers), 2 bad input (a one-paragraph message
naming the field, never a traceback).

Each command parses its options (the shared ones are declared once, in cli_options.py), makes one call
(commands/entry.py) and prints the report; an ``InputError`` from any of them is handled in one place,
``InputErrorGroup``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, List, Optional

import typer
from typer.core import TyperGroup, TyperOption

from .cli_options import (MAX_LIMIT, MAX_SHOW, MAX_TIME_LIMIT_S, MAX_TOP, MAX_WORKERS, AsJson, Algo, Calibration,
                          Config, Framework, Gpu, GpuFile, Gpus, HostMem, LengthFraction, LongestResponseLen, MeanPromptLen,
                          MeanResponseLen, Model, N, Nnodes, Objective, Overrides, Placement, PromptLen, ResponseLen,
                          ResponseProfile, ScenarioFile, Search, Set, TimeLimit, bounded, gpus_option)
from .commands import entry
from .errors import InputError, shown
from .flag_order import BadParameter, NoSuchOption, misplaced_flag_text
from .frameworks.registry import FRAMEWORKS


def _flags_show_no_type() -> None:
    """typer prints every option's type in the help table, ``<bool>`` for a flag too; a flag takes no value, so
    its row shows none (``--json``, ``--help``)."""
    shown_type = getattr(TyperOption, "display_type_rich", None)
    if shown_type is None:  # typer releases that print no type column for a flag: nothing to mend
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) and self.metavar is None else shown_type(self, ctx)

    TyperOption.display_type_rich = display_type_rich


_flags_show_no_type()


class InputErrorGroup(TyperGroup):
    """The one handler of bad input: any command's ``InputError`` is printed as ``error: FIELD: PROBLEM Fix: ...``
    on stderr, with exit code 2 and no traceback."""

    def invoke(self, ctx):
        protected = getattr(ctx, "_protected_args", None)
        args = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        try:
            return super().invoke(ctx)
        except InputError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(code=2) from None
        except NoSuchOption as err:  # a framework's flag before `--`: say where it goes
            text = misplaced_flag_text(err, args)
            if text is None:
                raise
            typer.echo(text, err=True)
            raise typer.Exit(code=2) from None
        except BadParameter as err:  # a word where an option takes a number (--gpus abc): said as bad input is
            text = _bad_number_text(err, args)
            if text is None:
                raise
            typer.echo(text, err=True)
            raise typer.Exit(code=2) from None


def _bad_number_text(err: BadParameter, args: list[str]) -> str | None:
    """``error: gpus: 'abc' is not a whole number. Fix: ...`` for an option's value its number type refused (the
    argument parser printed its usage box, several lines, with no fix); None for any other bad parameter."""
    param = err.param
    message = str(getattr(err, "message", "")).lower()
    integer = "valid integer" in message
    if getattr(param, "param_type_name", "") != "option" or not (integer or "valid number" in message):
        return None
    opts = list(param.opts)
    opt = max(opts, key=len)
    # (the module's `enumerate` is the command: pairs of neighbouring words instead)
    value = next((after for a, after in zip(args, args[1:]) if a in opts),
                 next((a.partition("=")[2] for a in args if a.partition("=")[0] in opts), ""))
    words, example = ("a whole number", "4") if integer else ("a number", "0.5")
    default = getattr(param, "default", None)
    if isinstance(default, (int, float)) and not isinstance(default, bool) and default > 0:
        example = f"{default:g}"  # the option's own default (--port 8000, --time-limit 10)
    return "error: " + str(InputError(opt.lstrip("-"), f"'{shown(value)}' is not {words}.",
                                      f"pass {opt} {example}, or leave it out for its default."))


app = typer.Typer(
    cls=InputErrorGroup,
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


def _show(report: Any, as_json: bool, printer: str, default: Any = None) -> None:
    """The report as JSON (its ``to_dict``), or printed by ``render.<printer>``."""
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, default=default))
    else:
        from . import render

        getattr(render, printer)(_console(), report)


# ----------------------------------------------------------------------------- check
@app.command()
def check(
    overrides: Overrides = None,
    framework: Framework = None,
    gpus: Annotated[Optional[int], gpus_option("Total GPUs (or give trainer.n_gpus_per_node/nnodes).")] = None,
    model: Model = None,
    gpu: Gpu = None,
    extra_gpus: GpuFile = None,
    config: Config = None,
    length_fraction: LengthFraction = None,
    calibration: Calibration = None,
    mean_prompt_len: MeanPromptLen = None,
    mean_response_len: MeanResponseLen = None,
    longest_response_len: LongestResponseLen = None,
    response_profile: ResponseProfile = None,
    host_mem: HostMem = None,
    as_json: AsJson = False,
) -> None:
    """Check a config: every broken rule with its numbers, stage and source (and memory, given --gpu and --model)."""
    report = entry.check(overrides, framework=framework, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus,
                         config=config, length_fraction=length_fraction, calibration=calibration,
                         mean_prompt_len=mean_prompt_len, mean_response_len=mean_response_len, host_mem=host_mem,
                         response_profile=response_profile, longest_response_len=longest_response_len)
    _show(report, as_json, "print_check")
    raise typer.Exit(code=0 if report.valid else 1)


# ----------------------------------------------------------------------------- fix
@app.command()
def fix(
    overrides: Overrides = None,
    framework: Framework = None,
    gpus: Gpus = None,
    model: Model = None,
    gpu: Gpu = None,
    keep: Annotated[Optional[str], typer.Option("--keep", help="Comma-separated keys that must not change.")] = None,
    config: Config = None,
    time_limit: TimeLimit = 10.0,
    extra_gpus: GpuFile = None,
    length_fraction: LengthFraction = None,
    calibration: Calibration = None,
    host_mem: HostMem = None,
    write: Annotated[Optional[str], typer.Option("--write", help="With a launch script: write it back to this file "
                                                 "with the repair in, every other line as it was.")] = None,
    as_json: AsJson = False,
) -> None:
    """The smallest change that makes a config valid (and fit, given --gpu and --model)."""
    started = entry.started()
    script = entry.inputs.script_to_write(overrides, write)
    report = entry.fix(overrides, framework=framework, gpus=gpus, model=model, gpu=gpu, keep=keep, config=config,
                       time_limit=time_limit, extra_gpus=extra_gpus, length_fraction=length_fraction,
                       calibration=calibration, host_mem=host_mem, started=started)
    _show(report, as_json, "print_fix", default=str)
    if script is not None and report.after is not None:
        _wrote(entry.inputs.write_script(script, report.native_after, report.framework, write,
                                         drop=report.renamed,
                                         environment=entry.inputs.script_environment(overrides)[0]), write, as_json)
    # a repair that no node of the given RAM runs (--host-mem) is no answer either
    raise typer.Exit(code=0 if report.after is not None and report.host_unfit is None else 1)


def _write_best(script: str, report: Any, path: str, as_json: bool, environment: dict) -> None:
    """recommend --from --write: the script with the best config in, when the verdict is to change it (read in the
    ``environment`` given after its path)."""
    from .commands.recommend import start_changes

    changed, dropped = start_changes(report)
    if not changed and not dropped:
        verdict = report.start.verdict if report.start is not None else "no-config"
        typer.echo(f"nothing written to {path}: {verdict} (your config stays as it is)", err=as_json)
        return
    _wrote(entry.inputs.write_script(script, changed, report.framework, path, drop=dropped, environment=environment),
           path, as_json)


def _wrote(done: Any, path: str, as_json: bool) -> None:
    """What --write did, on stdout (stderr under --json, which keeps stdout one JSON document)."""
    text = (f"wrote {path}: {len(done.replaced)} key(s) changed where the script sets them"
            + (f", {len(done.added)} added after its entry point ({', '.join(done.added)})" if done.added else "")
            + (f", {len(done.dropped)} taken out ({', '.join(done.dropped)})" if done.dropped else "")
            + "; every other line as it was")
    typer.echo(text, err=as_json)
    for note in done.notes:
        typer.echo(f"note: {note}", err=True)


# ----------------------------------------------------------------------------- explain
@app.command()
def explain(
    error: Annotated[Optional[str], typer.Argument(help="The error line your job died on, in quotes; or the job's "
                                                        "log file (its end is read), or - to read it from stdin.",
                                                   show_default=False)] = None,
    overrides: Annotated[Optional[List[str]], typer.Argument(help="Optionally the config, pasted after --.")] = None,
    framework: Framework = None,
    gpus: Gpus = None,
    model: Model = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU type (out-of-memory messages: unset, inferred "
                                               "from the capacity the message reports).")] = None,
    config: Config = None,
    time_limit: TimeLimit = 10.0,
    as_json: AsJson = False,
) -> None:
    """Map a framework's error message to our rule, in plain words; with the config, propose the fix. Out-of-memory
    messages (CUDA, vLLM's KV cache, Ray's node memory) get their phase, their numbers beside our prediction, and
    with the config and model the nearest change that fits."""
    started = entry.started()
    report = entry.explain(error, overrides, framework=framework, gpus=gpus, model=model, gpu=gpu, config=config,
                           time_limit=time_limit, started=started)
    _show(report, as_json, "print_explain", default=str)
    raise typer.Exit(code=0 if report.matched else 1)


# ----------------------------------------------------------------------------- sweep
@app.command()
def sweep(
    grid_file: Annotated[Optional[str], typer.Argument(help="The grid YAML (see docs/sweeps.md).")] = None,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Results file (JSON lines), written as points "
                                               "finish.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip the points already in --out.")] = False,
    workers: Annotated[int, typer.Option("--workers", "-j", help="Processes (or Ray tasks) at once.",
                                         **bounded("--workers", 1, MAX_WORKERS, "4"))] = 1,
    backend: Annotated[str, typer.Option("--backend", help="local | ray")] = "local",
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="Ray cluster address (default: "
                                                       "local).")] = None,
    summary: Annotated[Optional[str], typer.Option("--summary", help="Print a table of this results file.")] = None,
    plot: Annotated[Optional[str], typer.Option("--plot", help="With --summary: heatmap PNG of GPU type x "
                                                "count.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="tokens_per_s | cost_per_step | step_time_s")] = "tokens_per_s",
    memory_plot: Annotated[Optional[str], typer.Option("--memory-plot", help="With --summary: stacked-bar PNG "
                                                       "...")] = None,
    point: Annotated[Optional[str], typer.Option("--point", help="... of this point id (default: the best "
                                                 "point).")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
    calibration: Calibration = None,
    response_profile: ResponseProfile = None,
) -> None:
    """Best config for every point of a hardware/model grid; resumable; tables and plots."""
    if summary:
        entry.sweep_summary(_console(), typer.echo, summary, plot=plot, metric=metric, memory_plot=memory_plot,
                            point=point)
        return
    try:
        result = entry.sweep(grid_file, out, resume=resume, workers=workers, backend=backend, ray_address=ray_address,
                             progress=not no_progress, calibration=calibration, response_profile=response_profile)
    except KeyboardInterrupt:  # Ctrl-C: every finished point is in the results file already, one line each
        typer.echo(f"interrupted: the points finished so far are in {out}; `rlbatch sweep {grid_file} --out {out} "
                   "--resume` runs the rest.", err=True)
        import os
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        # at once: the results file is closed; the interpreter's shutdown after a Ctrl-C caught mid-solve sometimes
        # ended in SIGINT's default action (-2) instead of this exit code
        os._exit(130)
    typer.echo(f"{result.total} points: {result.skipped} already done, ran {result.ran} "
               f"({result.ok} ok, {result.infeasible} infeasible, "
               + (f"{result.timed_out} timed out (not proven infeasible: raise time_limit_s), " if result.timed_out else "")
               + f"{result.errors} errors) in {result.wall_s:.1f} s; "
               f"results in {out}")


# ------------------------------------------------------------------------- enumerate
def _scenario_flags(framework, gpu, gpus, nnodes, model, algo, n, prompt_len, response_len, objective=None):
    """The scenario fields the flags set (None: not given)."""
    return {"framework": framework, "gpu": gpu, "gpus": gpus, "nnodes": nnodes, "model": model, "algorithm": algo,
            "n": n, "prompt_length": prompt_len, "response_length": response_len, "objective": objective}


ScenarioGpus = Annotated[Optional[int], gpus_option("Total GPUs.")]


@app.command()
def enumerate(  # noqa: A001
    scenario_file: ScenarioFile = None,
    framework: Framework = None,
    gpu: Gpu = None,
    gpus: ScenarioGpus = None,
    nnodes: Nnodes = None,
    model: Model = None,
    algo: Algo = None,
    n: N = None,
    prompt_len: PromptLen = None,
    response_len: ResponseLen = None,
    set_: Set = None,
    search: Search = None,
    limit: Annotated[int, typer.Option("--limit", help=f"Stop after this many configs (at most {MAX_LIMIT:,}).",
                                       **bounded("--limit", 1, MAX_LIMIT, "1000"))] = MAX_LIMIT,
    show: Annotated[int, typer.Option("--show", help=f"Rows in the table (at most {MAX_SHOW:,}; JSON prints all).",
                                      **bounded("--show", 0, MAX_SHOW, "30"))] = 30,
    time_limit: Annotated[float, typer.Option("--time-limit", help="Solver time limit, seconds.",
                                              **bounded("--time-limit", 0, MAX_TIME_LIMIT_S, "20",
                                                        above_low=True))] = 20.0,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines: one config a line (its native keys; with --gpu "
                                          "and --model also _memory: the phase with the least headroom, its peak and "
                                          "headroom in MiB), then one summary line.")] = False,
    host_mem: Annotated[Optional[float], typer.Option("--host-mem", help=(
        "RAM of one node in GiB: with --gpu and --model, lists only the configs whose host memory (CPU offload, "
        "sleeping engines' weights, model loading) fits it, and says how many it left out; unset, not checked."))]
    = None,
) -> None:
    """List every valid batch-size tuple in the search space; with --gpu and --model, every one that fits in memory."""
    flags = _scenario_flags(framework, gpu, gpus, nnodes, model, algo, n, prompt_len, response_len)
    sc, report, conflict = entry.enumerate_configs(flags, scenario_file=scenario_file, set_=set_, search=search,
                                                   limit=limit, time_limit=time_limit, host_mem=host_mem)
    if as_json:
        for line in _enumerate_json(report, conflict):
            typer.echo(json.dumps(line))
    else:
        from .render import print_conflict, print_enumerate, print_no_fit

        print_enumerate(_console(), report, sc, show)
        if conflict is not None:
            from .commands.recommend import answer_framework

            print_conflict(_console(), conflict, report.space, answer_framework(report))
        elif report.memory_applied and not report.count and report.status == "infeasible":
            print_no_fit(_console(), report)
    raise typer.Exit(code=0 if report.count else 1)


def _enumerate_json(report: Any, conflict: Any) -> list[dict[str, Any]]:
    """enumerate --json: one line per config (its native keys, _memory with a GPU and a model), then the summary."""
    from .render import no_fit_helps

    fits = report.fits if report.memory_applied else [None] * len(report.native)
    lines = []
    for native, fit in zip(report.native, fits):
        line = _native_dict(native)
        if fit is not None:
            line["_memory"] = fit
        lines.append(line)
    lines.append({"count": report.count, "complete": report.complete, "status": report.status,
                  "raw_combinations": report.raw_size, "framework": report.framework,
                  "rules_version": report.version,
                  "memory_applied": report.memory_applied,
                  "memory_floor_mib": {k: {"least": a, "line": b} for k, (a, b) in report.memory_floor.items()},
                  "host_mem_gib": report.host_mem_gib, "host_excluded": report.host_excluded,
                  "host_least_excluded": report.host_least.to_dict() if report.host_least is not None else None,
                  "conflict": conflict.ids if conflict else None, "notes": report.notes,
                  # none fits: what would help, as the text says it (first the fewest of recommend's switches a fit
                  # moves off the defaults this listing holds, as --set pairs: also alone, in switches_fit)
                  # whether switches_fit is proven the fewest, and how that search ended (enumerate.SWITCHES_SEARCH)
                  "switches_fit": report.switches_fit, "switches_fit_fewest": report.switches_fit_fewest,
                  "switches_search": report.switches_search,
                  "helps": no_fit_helps(report) if conflict is None
                  and report.memory_applied and not report.count and report.status == "infeasible" else []})
    return lines


def _native_dict(native: list[str]) -> dict[str, Any]:
    from .frameworks.overrides import exported_pair, parse_scalar

    return {k: parse_scalar(v) if v else True for k, v in map(exported_pair, native)}


# ------------------------------------------------------------------------- recommend
@app.command()
def recommend(
    scenario_file: ScenarioFile = None,
    framework: Framework = None,
    gpu: Gpu = None,
    gpus: ScenarioGpus = None,
    nnodes: Nnodes = None,
    model: Model = None,
    algo: Algo = None,
    n: N = None,
    prompt_len: PromptLen = None,
    response_len: ResponseLen = None,
    set_: Set = None,
    search: Search = None,
    objective: Objective = None,
    top: Annotated[int, typer.Option("--top", help="How many configs to rank.",
                                     **bounded("--top", 1, MAX_TOP, "5"))] = 5,
    time_limit: Annotated[float, typer.Option("--time-limit", help="Seconds for all of the command's solves "
                                              "together.", **bounded("--time-limit", 0, MAX_TIME_LIMIT_S, "10",
                                                                     above_low=True))] = 10.0,
    extra_gpus: GpuFile = None,
    length_fraction: LengthFraction = None,
    from_: Annotated[Optional[str], typer.Option(
        "--from", help="Start from your own launch script (or YAML config): keep its model, GPUs, lengths, "
        "algorithm and batch per step; choose its micro batches, layout and memory switches; compare with it.")] = None,
    calibration: Calibration = None,
    mean_prompt_len: MeanPromptLen = None,
    mean_response_len: MeanResponseLen = None,
    longest_response_len: LongestResponseLen = None,
    response_profile: ResponseProfile = None,
    placement: Placement = None,
    host_mem: HostMem = None,
    free_batch: Annotated[bool, typer.Option(
        "--free-batch", help="Let the search choose the algorithm's batch sizes too (prompts per step and per "
        "update); without it they stay as you --set them, or at the framework's defaults, said in the answer.")] = False,
    write: Annotated[Optional[str], typer.Option("--write", help="With --from a launch script: write it back to this "
                                                 "file with the best config in, every other line as it was.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print the details below the answer: the YAML "
                                          "copy, memory and time per phase, the lengths assumed, the error bars.")] = False,
    as_json: AsJson = False,
    environment: Annotated[Optional[List[str]], typer.Argument(
        help="With --from a launch script: NAME=value words of the environment it reads (DEVICE=gpu), as check "
        "takes them after the script's path.", show_default=False)] = None,
) -> None:
    """The fastest valid config that fits in memory, with its memory and time per phase.

    With no options it runs the built-in default scenario: ADPO, Qwen2.5-1.5B on 4x RTX 4090,
    prompt 880, response 1280, n 8 (the seed's worked example).
    """
    started = entry.command_started()
    words = entry.inputs.from_words(from_, environment)
    script = entry.inputs.script_to_write(words, write, "rlbatch recommend --from run.sh --gpu GPU --write fixed.sh")
    common = dict(top=top, time_limit=time_limit, extra_gpus=extra_gpus, length_fraction=length_fraction,
                  calibration=calibration, mean_prompt_len=mean_prompt_len, mean_response_len=mean_response_len,
                  longest_response_len=longest_response_len, placement=placement, response_profile=response_profile,
                  started=started)
    if from_ is not None:
        report = entry.recommend_from(words, framework=framework, gpu=gpu, gpus=gpus, model=model, objective=objective,
                                      scenario_given=[scenario_file, nnodes, algo, n, prompt_len, response_len, set_,
                                                      search], host_mem=host_mem, free_batch=free_batch, **common)
    else:
        flags = _scenario_flags(framework, gpu, gpus, nnodes, model, algo, n, prompt_len, response_len, objective)
        flags["free_batch"] = free_batch or None
        report = entry.recommend(flags, scenario_file=scenario_file, set_=set_, search=search, host_mem=host_mem,
                                 **common)
    from .render import print_recommend, recommend_dict

    if as_json:
        typer.echo(json.dumps(recommend_dict(report), indent=2))
    else:
        print_recommend(_console(), report, verbose=verbose)
    if script is not None:
        _write_best(script, report, write, as_json, entry.inputs.script_environment(words)[0])
    raise typer.Exit(code=0 if report.choices else 1)


# ----------------------------------------------------------------------------- rules
@app.command()
def rules(
    framework: Framework = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the Markdown page (docs/rules-<fw>.md).")] = False,
) -> None:
    """List a framework's rules: id, stage, message and the source it follows."""
    from .frameworks import get_framework
    from .frameworks.docs import rules_page

    fw = get_framework("verl" if framework is None else framework)
    if markdown:
        typer.echo(rules_page(fw), nl=False)
        return
    width = max((len(r.id) for r in fw.ruleset.rules), default=0)
    for r in fw.ruleset.rules:  # the message under its id, stage and source ({names}: the config's values)
        typer.echo(f"{r.id:{width}s}  {r.stage.value:13s} {r.source}\n    {r.message}")


# -------------------------------------------------------------------------- calibrate
@app.command()
def calibrate(
    log: Annotated[str, typer.Argument(help="The run's log: verl console output or file-logger JSON lines, OpenRLHF's "
                                       "output, or ms-swift's logging.jsonl.")],
    overrides: Annotated[Optional[List[str]], typer.Argument(help="The config the run used: its arguments after --, "
                                                             "or its launch script.")] = None,
    framework: Framework = None,
    gpus: Gpus = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Model name or HF config.json (required).")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="The GPU type the run used (required).")] = None,
    config: Config = None,
    out: Annotated[Optional[str], typer.Option("--out", help="Where to write the profile (default: the per-user "
                                               "profile, which check, recommend, fix and sweep then pick up).")] = None,
    as_json: AsJson = False,
) -> None:
    """Fit the cost model's efficiencies to your own run's log; write a profile for --calibration."""
    report = entry.calibrate(log, overrides, framework=framework, gpus=gpus, model=model, gpu=gpu, config=config,
                             out=out)
    _show(report, as_json, "print_calibration")
    if not report.profile.path:
        raise typer.Exit(code=1)


# -------------------------------------------------------------------------- catalog
@catalog_app.command("gpus")
def catalog_gpus(
    extra: Annotated[Optional[str], typer.Option("--extra", help="A YAML file with more GPUs.")] = None,
    as_json: AsJson = False,
) -> None:
    """GPU types: memory, BF16 TFLOP/s, HBM bandwidth, interconnect."""
    from .catalog.gpus import list_gpus
    from .commands.catalog import gpus_json
    from .render import print_gpus

    if as_json:
        typer.echo(json.dumps(gpus_json(extra), indent=2))
    else:
        print_gpus(_console(), list_gpus(extra))


@catalog_app.command("models")
def catalog_models(as_json: AsJson = False) -> None:
    """Model cards: layers, hidden, heads, parameters."""
    from .catalog.models import list_models, load_model
    from .commands.catalog import models_json
    from .render import print_models

    if as_json:
        typer.echo(json.dumps(models_json(), indent=2))
    else:
        print_models(_console(), [load_model(m) for m in list_models()])


# ------------------------------------------------------------------------------- mcp
@app.command()
def mcp() -> None:
    """Serve check, fix, recommend, explain and the catalogs as Model Context Protocol tools on stdin/stdout
    (docs/agents.md); needs the MCP SDK (the agent extra, or: pip install mcp)."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise InputError("mcp", "the MCP SDK is not installed.", 'pip install "rlbatch-solver[agent]" (or: pip '
                         'install mcp).')
    from .agent.server import serve

    serve()


# -------------------------------------------------------------------------------- serve
@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.",
                                      **bounded("--port", 0, 65_535, "8000"))] = 8000,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds one request may take; a slower solve is "
                                           "stopped.", **bounded("--timeout", 0, MAX_TIME_LIMIT_S, "30",
                                                                 above_low=True))] = 30.0,
    memory: Annotated[int, typer.Option("--memory", help="MiB of memory one request's solve may use.",
                                        **bounded("--memory", 256, 1 << 20, "4096"))] = 4096,
    workers: Annotated[int, typer.Option("--workers", help="Solves at once (each in a process of its own).",
                                         **bounded("--workers", 1, MAX_WORKERS, "4"))] = 4,
) -> None:
    """The web page: paste a launch script or fill a short form; the verdict, memory chart, fastest config (docs/web.md)."""
    from .web.server import Settings, serve as run_server
    from .web.worker import Limits

    run_server(host, port, Settings(Limits(timeout_s=timeout, memory_mib=memory, workers=workers)))


def main() -> None:
    """Entry point (``rlbatch``)."""
    entry.mark_process_start()
    app()


if __name__ == "__main__":
    main()

"""Each command line's one call: its parsed options in, its report out (cli.py prints it). Bad input is an
``InputError``, which the command line turns into its one-paragraph message and exit code 2."""

from __future__ import annotations

import time
from typing import Any, Callable, List, Optional

from ..errors import InputError, shown
from . import inputs


def check(overrides: Optional[List[str]], *, framework: Optional[str], gpus: Optional[int], model: Optional[str],
          gpu: Optional[str], extra_gpus: Optional[str], config: Optional[str], length_fraction: Optional[float],
          calibration: Optional[str], mean_prompt_len: Optional[float], mean_response_len: Optional[float],
          host_mem: Optional[float], response_profile: Optional[str] = None,
          longest_response_len: Optional[float] = None):
    from .check import check as check_config  # its module alone: the API's imports every command's (rlbatch_solver.api)

    _known_names(gpu, model, extra_gpus)
    framework, config, overrides, gpus, model = inputs.arguments(framework, config, overrides, gpus, model)
    flat, ignored = inputs.pasted(framework, config, overrides, "check")
    prompt_mean, response_mean, source = inputs.means(calibration, gpu, mean_prompt_len, mean_response_len)
    report = check_config(flat, framework=framework, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus,
                          length_fraction=1.0 if length_fraction is None else length_fraction,
                          calibration=inputs.calibration(calibration, gpu), mean_prompt_len=prompt_mean,
                          mean_response_len=response_mean, mean_lengths_from=source,
                          host_mem_gib=inputs.host_mem(host_mem), response_profile=response_profile,
                          longest_response_len=longest_response_len)
    report.ignored = ignored
    return report


def fix(overrides: Optional[List[str]], *, framework: Optional[str], gpus: Optional[int], model: Optional[str],
        gpu: Optional[str], keep: Optional[str], config: Optional[str], time_limit: float,
        extra_gpus: Optional[str], length_fraction: Optional[float], calibration: Optional[str],
        host_mem: Optional[float], started: float):
    from .. import api

    _known_names(gpu, model, extra_gpus)
    framework, config, overrides, gpus, model = inputs.arguments(framework, config, overrides, gpus, model)
    flat, _ = inputs.pasted(framework, config, overrides, "fix")
    return api.fix(flat, framework=framework, gpus=gpus, model=model, gpu=gpu,
                   keep=(keep or "").split(","), time_limit_s=time_limit, extra_gpus=extra_gpus,
                   started=started, length_fraction=1.0 if length_fraction is None else length_fraction,
                   calibration=inputs.calibration(calibration, gpu), host_mem_gib=inputs.host_mem(host_mem))


def explain(error: str, overrides: Optional[List[str]], *, framework: Optional[str], gpus: Optional[int],
            model: Optional[str], gpu: Optional[str], config: Optional[str], time_limit: float, started: float):
    from .. import api
    from .explain import no_error_line

    if not error:  # the one argument explain needs: said as every bad input is, not as a usage box
        raise no_error_line('paste the line your job died on: rlbatch explain "<error line>" (or the job\'s log file, '
                            'or - to read it from stdin).')
    _known_names(gpu, model, None)  # a typo in --gpu or --model is an input error here too, not silently left unused
    error = inputs.error_text(error)
    cfg, said = None, None
    framework, overrides, gpus, model = inputs.script(framework, overrides, gpus, model, default=None)
    if model:
        from ..catalog.models import load_model

        load_model(model)
    if overrides or config:
        if framework is None:  # the config is read in the syntax of the framework whose message matched
            framework, said = _framework_of_message(error, overrides, config)
        # a YAML config in place of the arguments, or a path that does not exist, as check reads them
        framework, config, overrides = inputs.config_file(framework or "verl", framework is not None, config,
                                                          overrides)
        cfg, _ = inputs.pasted(framework, config, overrides, "explain")
    report = api.explain(error, framework=framework, config=cfg, gpus=gpus, model=model, time_limit_s=time_limit,
                         started=started, gpu=gpu)
    if said:  # why the config was read as the framework it was, first among the notes, as the API says it
        report.notes.insert(0, said)
    return report


def _framework_of_message(error: str, overrides: Optional[List[str]],
                          config: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """(The framework whose message matched, chosen as the Python API chooses (``explain.config_framework``: where
    several frameworks print it, by the pasted words), else the one whose traceback frames an out-of-memory message
    shows; the note saying why, where it was a choice)."""
    from .explain import config_framework

    name, said = config_framework(error, overrides or [], config)
    if name:
        return name, said
    from ..frameworks.key_names import refused_in_message

    by, keys = refused_in_message(error)  # a parser refusing keys: its framework, where the message shows it
    if keys and by:
        return by, None
    from .explain_oom import read_oom

    oom = read_oom(error)
    return (oom[1] if oom else None), None


def enumerate_configs(sc_flags: dict[str, Any], *, scenario_file: Optional[str], set_: Optional[List[str]],
                      search: Optional[List[str]], limit: int, time_limit: float, host_mem: Optional[float] = None):
    """enumerate: (scenario, report, the conflicting rules when no config of the space is valid, else None);
    ``host_mem`` (--host-mem) overrides the scenario's host_mem_gib."""
    from .. import api

    if limit < 1 or time_limit <= 0:
        raise InputError("--limit/--time-limit", "must be positive.", "pass --limit 100 --time-limit 20.")
    sc = inputs.scenario(scenario_file, sc_flags, set_, search)
    _known_names(sc.gpu, sc.model, None)
    if host_mem is not None:
        sc.host_mem_gib = inputs.host_mem(host_mem)
        sc.validate()
    # the listing has four fifths of the limit, the conflicting rules of an empty one the rest (enumerate's own)
    report = api.enumerate(sc, limit=limit, time_limit_s=time_limit * 0.8)
    return sc, report, report.conflict


def _known_names(gpu: Optional[str], model: Any, extra_gpus: Optional[str]) -> None:
    """The model and the GPU type named on the command line are looked up first, together: an unknown one is the error
    a user meets, before what else is missing (``--gpus``), and both are named in the one paragraph, the model
    first, so a typo is not found only after fixing another error."""
    from ..catalog.gpus import load_gpu
    from ..catalog.models import load_model

    problems: list[InputError] = []
    for given, lookup in ((model, load_model), (gpu, lambda name: load_gpu(name, extra_gpus))):
        if isinstance(given, str) and given:
            try:
                lookup(given)
            except InputError as exc:
                problems.append(exc)
    _refuse(problems)


def _refuse(problems: list[InputError]) -> None:
    """One paragraph naming every problem, the first as the error, the others after it ("Also FIELD: ...")."""
    if problems:
        first, *others = problems
        said = [first.fix] + [f"Also {p.field}: {p.problem} Fix: {p.fix}" for p in others]
        raise InputError(first.field, first.problem, " ".join(s if s.endswith((".", "?")) else s + "." for s in said))


def _what_to_run(sc: Any, extra_gpus: Optional[str]) -> None:
    """The model, the GPU type and the GPU count a recommendation needs, looked up together once the framework is
    known (the scenario read it): every one unknown or missing is named in the one paragraph, a name given that
    names nothing known (a typo) first, then what is missing, the model before the GPUs, so no bad field is found
    only after fixing another."""
    from .recommend import _gpu, model_of

    wrong: list[InputError] = []  # a value given that names nothing known: a typo, said before what is missing
    missing: list[InputError] = []
    for given, lookup in ((sc.model, model_of), (sc.gpu, lambda scenario: _gpu(scenario, extra_gpus)),
                          (None, lambda scenario: scenario.total_gpus)):
        try:
            lookup(sc)
        except InputError as exc:
            (wrong if given else missing).append(exc)
    _refuse(wrong + missing)


def recommend(sc_flags: dict[str, Any], *, scenario_file: Optional[str], set_: Optional[List[str]],
              search: Optional[List[str]], top: int, time_limit: float, extra_gpus: Optional[str],
              length_fraction: Optional[float], calibration: Optional[str], mean_prompt_len: Optional[float],
              mean_response_len: Optional[float], placement: Optional[str], host_mem: Optional[float],
              response_profile: Optional[str] = None, started: Optional[float] = None,
              longest_response_len: Optional[float] = None):
    """recommend from flags (or a scenario file; none: the built-in default scenario); ``--time-limit`` counted from
    ``started`` (``started()``: the command's start) when given."""
    from .recommend import recommend as recommend_scenario  # its module alone, not the API's every command

    sc = inputs.scenario(scenario_file, sc_flags, set_, search)
    _what_to_run(sc, extra_gpus)
    if length_fraction is not None:
        sc.length_fraction = length_fraction
    prompt_mean, response_mean, source = inputs.means(calibration, sc.gpu, mean_prompt_len, mean_response_len)
    if source != "assumed":
        sc.mean_prompt_length, sc.mean_response_length = prompt_mean, response_mean
    if placement is not None:
        sc.placement = placement
    if response_profile is not None:
        sc.response_profile = response_profile
    if longest_response_len is not None:
        sc.longest_response_length = longest_response_len
    if host_mem is not None:
        sc.host_mem_gib = inputs.host_mem(host_mem)
    sc.validate()
    eff = inputs.calibration(calibration, sc.gpu)
    if eff is not None:
        sc.calibration = eff.as_dict()
    return recommend_scenario(sc, top=top, time_limit_s=time_limit, extra_gpus=extra_gpus,
                              deadline=_deadline(time_limit, started))


# of a command's --time-limit, what printing the answer and the interpreter's exit take (0.2-0.4 s measured on two
# loaded cores, with OR-Tools loaded): the searches end this much before the limit, a tenth of it at most
EXIT_RESERVE_S = 0.5


def _deadline(time_limit: float, started: Optional[float]) -> Any:
    """The command's one time budget (deadline.py), counted from ``started`` when given, less ``EXIT_RESERVE_S``."""
    from ..deadline import Deadline

    seconds = time_limit - min(EXIT_RESERVE_S, 0.1 * time_limit)
    return Deadline(seconds) if started is None else Deadline(seconds, started)


def recommend_from(words: str | list[str], *, framework: Optional[str], gpu: Optional[str], gpus: Optional[int],
                   model: Optional[str], objective: Optional[str], length_fraction: Optional[float], top: int,
                   time_limit: float, extra_gpus: Optional[str], scenario_given: list, placement: Optional[str],
                   calibration: Optional[str], mean_prompt_len: Optional[float],
                   mean_response_len: Optional[float], response_profile: Optional[str] = None,
                   host_mem: Optional[float] = None, free_batch: bool = False, started: Optional[float] = None,
                   longest_response_len: Optional[float] = None):
    """``recommend --from run.sh`` (or a YAML config with --framework; ``words``: its path, then the environment words
    given after it, ``DEVICE=gpu``): the run the user's config describes."""
    from .. import api

    words = [words] if isinstance(words, str) else list(words)
    path = words[0]

    _known_names(gpu, model, extra_gpus)
    if placement is not None:
        raise InputError("--placement", "recommend --from keeps the placement of your config.",
                         "drop --placement, or describe the scenario with flags instead of --from.")
    if free_batch:
        raise InputError("--free-batch", "recommend --from keeps your config's batch per step and per update.",
                         f"drop --free-batch: `rlbatch fix {path}` changes them to the nearest valid ones, or describe "
                         "the scenario with flags (recommend --free-batch, without --from) to let the search choose.")
    means = inputs.means(calibration, gpu, mean_prompt_len, mean_response_len)
    if any(g for g in scenario_given):
        raise InputError("--from", "the scenario comes from the config: --scenario, --nnodes, --algo, --n, "
                         "--prompt-len, --response-len, --set and --search do not apply.",
                         "edit the script (or drop --from and describe the scenario with flags).")
    name, flat, gpus, model = inputs.from_config(words, framework, gpu, gpus, model)
    report = api.recommend_from(name, flat, gpu=gpu, model=model, gpus=gpus, objective=objective or "time",
                                length_fraction=1.0 if length_fraction is None else length_fraction, top=top,
                                time_limit_s=time_limit, extra_gpus=extra_gpus,
                                calibration=inputs.calibration(calibration, gpu), mean_lengths=means[:2],
                                response_profile=response_profile, host_mem_gib=inputs.host_mem(host_mem),
                                deadline=_deadline(time_limit, started), longest_response=longest_response_len)
    from ..launch_script import is_launch_script, script_and_rest

    if report.start is not None and is_launch_script(path):  # its command line, to print back as it is
        script = script_and_rest(path, words[1:])[0]
        report.start.command, report.start.environment = script.command, script.environment
        report.start.layout = script.layout
    return report


def calibrate(log: str, overrides: Optional[List[str]], *, framework: Optional[str], gpus: Optional[int],
              model: Optional[str], gpu: Optional[str], config: Optional[str], out: Optional[str]):
    from ..calibration import user_profile_path
    from ..runlog import read_log
    from .calibrate import calibrate as run_calibrate

    read_log(log)  # a log path that does not exist (or has no step line) is said first, not "nothing to calibrate"
    framework, config, overrides, gpus, model = inputs.arguments(framework, config, overrides, gpus, model)
    if not gpu or not model:
        raise InputError("gpu" if not gpu else "model", "calibrate needs the GPU type and the model the run used.",
                         "pass --gpu (e.g. h100) and --model (e.g. qwen2.5-7b).")
    flat, _ = inputs.pasted(framework, config, overrides, "calibrate")
    return run_calibrate(log, flat, framework=framework, gpu=gpu, model=model, gpus=gpus,
                         out=out or user_profile_path())


def started() -> float:
    """When a command with a --time-limit began (its limit covers its input reading too)."""
    return time.monotonic()


# when this process began, set by the command line's entry point (cli.main) alone: a command run in-process (the
# tests' CliRunner, a server) counts its --time-limit from its own start
_PROCESS_START: list[float] = []


def mark_process_start() -> None:
    """The entry point's first act: remember when the process began (``process_started``)."""
    _PROCESS_START[:] = [process_started()]


def command_started() -> float:
    """When the user began to wait: the process's start where the entry point marked it (``rlbatch ...``), else
    now (``started``)."""
    return _PROCESS_START[0] if _PROCESS_START else started()


def process_started() -> float:
    """When this process began, on ``time.monotonic()``'s clock: ``recommend``'s --time-limit covers the
    interpreter's start and the imports too (what the user waits for). Read from Linux's /proc (the process's start
    in clock ticks since boot, beside the seconds since boot); where that cannot be read, now.

    /proc gives the fork, not the exec: a shell that runs other commands first and then execs this one as its last
    (``bash -c 'pip install . && rlbatch recommend'``) hands over its own start, minutes before the interpreter
    began, and the whole --time-limit was spent before the search. The interpreter's start and imports are CPU
    work, so the CPU time the process has used (``time.process_time``: the shell's own share of it is milliseconds)
    bounds the age."""
    import os

    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])  # field 22, starttime (proc(5))
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        age = min(uptime - ticks / os.sysconf("SC_CLK_TCK"), time.process_time())
    except (OSError, ValueError, IndexError):
        return time.monotonic()
    if not 0.0 <= age <= 30.0:  # a long-lived process (a server, tests calling the command line in-process): now
        return time.monotonic()
    return time.monotonic() - age


def sweep_summary(console: Any, say: Callable[[str], None], summary: str, *, plot: Optional[str], metric: str,
                  memory_plot: Optional[str], point: Optional[str]) -> None:
    """``sweep --summary``: the table printed on ``console``; the plots written, each said with ``say``."""
    from ..safe_input import exists
    from ..sweep.runner import read_results
    from ..sweep.summary import plot_heatmap, plot_memory, print_summary, summary_rows

    if not exists(summary):
        raise InputError("summary", f"{shown(summary, 60)} does not exist.", "give the --out file of a sweep.")
    rows = read_results(summary)
    if not rows:  # a grid YAML, another file, or a sweep that has not finished a point yet: not "0 points"
        raise InputError("summary", f"{shown(summary, 60)} holds no sweep result (no line as `rlbatch sweep --out` "
                         "writes them).", "give the --out file of a sweep (JSON lines); a grid YAML is run with "
                         "`rlbatch sweep grid.yaml --out results.jsonl`.")
    print_summary(console, rows)
    if plot:
        say(f"wrote {plot_heatmap(rows, plot, metric)}")
    if memory_plot:
        chosen = [r for r in rows if r["id"] == point] if point else \
            [r for r in rows if r["id"] in {x["id"] for x in summary_rows(rows) if x["best"]}]
        if not chosen:
            raise InputError("point", f"no point with id {point}." if point else "no point fits.",
                             "pick an id from the summary table's results file.")
        say(f"wrote {plot_memory(chosen[0], memory_plot)}")


def sweep(grid_file: Optional[str], out: Optional[str], *, resume: bool, workers: int, backend: str,
          ray_address: Optional[str], progress: bool, calibration: Optional[str],
          response_profile: Optional[str] = None):
    if not grid_file:
        raise InputError("grid", "a sweep needs a grid file and --out.",
                         "run: rlbatch sweep grid.yaml --out results.jsonl (or --summary results.jsonl).")
    from ..sweep.grid import load_grid

    if not out:  # the grid is read first: a grid file that is missing or wrong is said before the missing --out
        load_grid(grid_file)
        raise InputError("--out", "a sweep writes its results to a file, and none was given.",
                         f"run: rlbatch sweep {shown(grid_file, 60)} --out results.jsonl.")
    from ..sweep.runner import run_sweep

    grid = load_grid(grid_file)
    inputs.calibrate_grid(grid, calibration)
    inputs.profile_grid(grid, response_profile)
    return run_sweep(grid, out, resume=resume, workers=workers, backend=backend, ray_address=ray_address,
                     progress=progress)

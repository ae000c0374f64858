"""The agent tools (check, fix, recommend, explain, the catalogs): each one the command line's call
(``commands/entry.py``) with the same arguments, answering the dict its ``--json`` prints.

Pasted text (a launch script, a YAML config, a model's config.json) is written to a fresh folder, which the call runs
in, and read from there as the command line reads the files it is given: nothing pasted is ever run. A launch script
or model file named by its path is refused (paste its text): the server is given texts, not files to open."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import InputError, shown
from ..safe_input import load_yaml, refuse_named_files

SCRIPT, CONFIG, MODEL_CONFIG = "run.sh", "config.yaml", "model-config.json"


@dataclass
class Answer:
    """A tool's answer: the ``--json`` dict, and the text beside it (the command line's ``note:`` lines, a
    rewritten script)."""

    data: dict[str, Any]
    texts: list[str] = field(default_factory=list)


# the arguments that carry pasted text a reader may take a file name from (not ``error``: a traceback names the
# framework's files, which the explanation reads as text)
PASTED = ("args", "script", "config_yaml", "from_config", "scenario_yaml")


def run_tool(name: str, arguments: dict[str, Any]) -> Answer:
    """Tool ``name`` on ``arguments`` (already checked against its input schema), in the current folder (the
    caller's fresh one)."""
    for key in PASTED:
        value = arguments.get(key)
        if value:
            refuse_named_files(" ".join(value) if isinstance(value, list) else value, key, "the server",
                               "paste that file's text instead (as script, config_yaml or model_config).", Path.cwd())
    return TOOLS[name](**arguments)


def _json(report: Any) -> dict[str, Any]:
    """The report as ``--json`` prints it (values JSON has no type for written as text)."""
    return json.loads(json.dumps(report.to_dict(), default=str))


def _write(name: str, text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    Path(name).write_text(text, encoding="utf-8")
    return name


def _pasted(args: Optional[list[str]], script: Optional[str]) -> Optional[list[str]]:
    """The command line's positional arguments: the script (written here) first, then the pasted arguments."""
    from ..launch_script import is_launch_script

    if script is not None and not script.strip():
        raise InputError("script", "is empty.", "paste the launch script's text.")
    if script is not None and _file_name(script):
        raise InputError("script", f"{shown(script.strip(), 60)} is a file name, not a script's text; the server "
                         "reads no file a request names.", "paste the script's text as script.")
    if args and is_launch_script(args[0]):  # a path: relative ones name files of the call's folder, empty till now
        raise InputError("args", f"{shown(args[0], 60)} is a launch script on the server's machine; the server "
                         "reads no script a request names.", "paste the script's text as script.")
    words = ([_write(SCRIPT, script)] if script is not None else []) + list(args or [])
    return words or None


def _file_name(text: str) -> bool:
    """Whether pasted script text is one word naming a script file (run.sh, a path ending .sh or .bash), which a
    script's text never is: a launch script runs a command, with its arguments."""
    word = text.strip()
    return len(word.split()) == 1 and word.lower().endswith((".sh", ".bash"))


def _model(model: Optional[str], model_config: Optional[str]) -> Optional[str]:
    """The model: a catalog name, or the pasted config.json (written here)."""
    if model is not None and model_config is not None:
        raise InputError("model_config", "was given beside model.", "give one: a catalog name as model, or a "
                         "Hugging Face config.json's text as model_config.")
    if model_config is not None:
        return _write(MODEL_CONFIG, model_config)
    text = (model or "").strip()
    if text.lower().endswith((".json", ".yaml", ".yml")) or text.startswith((".", "/", "~")):
        raise InputError("model", f"{shown(model, 60)} is a file name; the server reads no file a request names.",
                         "paste the config.json's text as model_config, or give a catalog name (catalog_models).")
    return model


def check(*, args=None, script=None, config_yaml=None, framework=None, gpus=None, model=None, model_config=None,
          gpu=None, length_fraction=None, mean_prompt_len=None, mean_response_len=None, host_mem=None,
          response_profile=None, longest_response_len=None) -> Answer:
    from ..commands import entry

    report = entry.check(_pasted(args, script), framework=framework, gpus=gpus, model=_model(model, model_config),
                         gpu=gpu, extra_gpus=None, config=_write(CONFIG, config_yaml), length_fraction=length_fraction,
                         calibration=None, mean_prompt_len=mean_prompt_len, mean_response_len=mean_response_len,
                         host_mem=host_mem, response_profile=response_profile,
                         longest_response_len=longest_response_len)
    return Answer(_json(report))


def fix(*, args=None, script=None, config_yaml=None, framework=None, gpus=None, model=None, model_config=None,
        gpu=None, keep=None, time_limit=10.0, length_fraction=None, host_mem=None) -> Answer:
    """fix; with a script, also the script with the repair in (``fix run.sh --write``'s file)."""
    from ..commands import entry

    started = entry.started()
    report = entry.fix(_pasted(args, script), framework=framework, gpus=gpus, model=_model(model, model_config),
                       gpu=gpu, keep=",".join(keep or []), config=_write(CONFIG, config_yaml), time_limit=time_limit,
                       extra_gpus=None, length_fraction=length_fraction, calibration=None, host_mem=host_mem,
                       started=started)
    texts = []
    if script is not None and not args and report.after is not None and report.native_after:
        done = entry.inputs.write_script(SCRIPT, report.native_after, report.framework, "fixed.sh",
                                         drop=report.renamed)
        texts.append("the script with the repair in (every other line as it was):\n"
                     + Path("fixed.sh").read_text(encoding="utf-8"))
        texts += [f"note: {n}" for n in done.notes]
    return Answer(_json(report), texts)


def explain(*, error, args=None, script=None, config_yaml=None, framework=None, gpus=None, model=None,
            model_config=None, gpu=None, time_limit=10.0) -> Answer:
    from ..commands import entry

    started = entry.started()
    report = entry.explain(error, _pasted(args, script), framework=framework, gpus=gpus,
                           model=_model(model, model_config), gpu=gpu, config=_write(CONFIG, config_yaml),
                           time_limit=time_limit, started=started)
    return Answer(_json(report))


def recommend(*, framework=None, gpu=None, gpus=None, nnodes=None, model=None, model_config=None, algo=None, n=None,
              prompt_len=None, response_len=None, set=None, search=None, objective=None, top=5, time_limit=10.0,
              length_fraction=None, mean_prompt_len=None, mean_response_len=None, placement=None, host_mem=None,
              free_batch=False, from_config=None, scenario_yaml=None, response_profile=None,
              longest_response_len=None) -> Answer:
    from ..commands import entry
    from ..render import recommend_dict

    common = dict(top=top, time_limit=time_limit, extra_gpus=None, length_fraction=length_fraction, calibration=None,
                  mean_prompt_len=mean_prompt_len, mean_response_len=mean_response_len, placement=placement,
                  response_profile=response_profile, longest_response_len=longest_response_len)
    model = _model(model, model_config)
    scenario_file = _write("scenario.yaml", scenario_yaml)
    if from_config is not None:
        report = entry.recommend_from(_write(_from_name(from_config), from_config), framework=framework, gpu=gpu,
                                      gpus=gpus, model=model, objective=objective,
                                      scenario_given=[scenario_file, nnodes, algo, n, prompt_len, response_len, set,
                                                      search], **common)
    else:
        flags = {"framework": framework, "gpu": gpu, "gpus": gpus, "nnodes": nnodes, "model": model,
                 "algorithm": algo, "n": n, "prompt_length": prompt_len, "response_length": response_len,
                 "objective": objective, "free_batch": free_batch or None}
        report = entry.recommend(flags, scenario_file=scenario_file, set_=set, search=search, host_mem=host_mem,
                                 **common)
    return Answer(recommend_dict(report))


def _from_name(text: str) -> str:
    """A pasted --from: a YAML config when it reads as a mapping, else a launch script."""
    return CONFIG if isinstance(load_yaml(text, "from_config", "the pasted config", strict=False), dict) else SCRIPT


def catalog_gpus() -> Answer:
    from ..commands.catalog import gpus_json

    return Answer({"gpus": gpus_json()})


def catalog_models() -> Answer:
    from ..commands.catalog import models_json

    return Answer({"models": models_json()})


TOOLS: dict[str, Callable[..., Answer]] = {"check": check, "fix": fix, "recommend": recommend, "explain": explain,
                                           "catalog_gpus": catalog_gpus, "catalog_models": catalog_models}

"""A launch script (its path) or a pasted command line given in place of a config's arguments, read the same way by
the CLI and the Python API: the framework it runs, its arguments, its launcher's GPU count, the model it trains when
the catalog knows it, and what reading it noticed (the CLI prints the notes first, the API returns them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Mapping, Sequence

from ..errors import InputError


@dataclass
class ScriptArgs:
    framework: str  # as --framework takes it (a release named beside the script kept: verl==0.7.1)
    args: list[str]  # the framework's own arguments, then any given after the script's path
    gpus: int | None
    model: Any  # the catalog card's name (or the model given)
    notes: list[str] = field(default_factory=list)


def read_script_args(framework: str | None, words: Sequence[str], gpus: int | None, model: Any) -> ScriptArgs | None:
    """``words`` read as a launch script's path (its first word) or a pasted command line; None when they are
    neither (plain arguments). ``gpus`` and ``model``, given, win over the script's."""
    from ..launch_script import gpus_note, is_launch_script, read_pasted_command, script_and_rest

    words = [str(w) for w in words]
    if words and is_launch_script(words[0]):
        (found, rest), path = script_and_rest(words[0], words[1:]), words[0]
    elif words and (found := read_pasted_command(words)) is not None and pasted_for(framework, found):
        path, rest = "the pasted command", []  # the command line pasted after --
    else:
        return None
    framework = script_framework(framework, found.framework, path)
    notes = [f"read {path}: {found.framework}"] + found.notes
    if model is None and found.model:
        model = script_model(found.model, notes, framework=framework or found.framework)
    elif model is None:  # the model in the YAML the command's --config reads (TRL's grpo.py --config grpo.yaml)
        from .inputs import command_config_model

        model = command_config_model(framework or found.framework, found.args, notes)
    # a version named with --framework (verl==0.7.1) is kept: the script says which framework, not which release
    name = framework.strip() if framework and any(sep in framework for sep in ("==", "@")) else found.framework
    if gpus is not None and found.gpus is not None:
        # (launch_script.py launcher_gpus: torchrun's --nproc_per_node, deepspeed's --num_gpus, times the nodes, else
        # CUDA_VISIBLE_DEVICES): the job starts as many ranks as the script says, whatever --gpus says
        said = gpus_note(gpus, found.gpus, found.launched, path, script=path != "the pasted command")
        notes += [said] if said else []
    return ScriptArgs(name, found.args + rest, gpus if gpus is not None else found.gpus, model, notes)


def api_config(config: Any, framework: str | None, gpus: int | None, model: Any) -> tuple[Any, str | None, int | None,
                                                                                         Any, list[str]]:
    """The Python API's ``config`` read as the CLI reads a script: a launch script's path (a ``str`` or ``Path``, or
    the first word of a list, the rest arguments after it) -> (its arguments, its framework, GPU count and model,
    the notes); anything else as given (framework None when not named: a pasted command line is the framework's
    own parser's to read, as it always was). A script path that does not exist is an input error, not a word."""
    from ..frameworks.overrides import is_file
    from ..launch_script import is_launch_script

    if isinstance(config, (str, Path)):
        words: list[str] | None = [str(config)]
    elif isinstance(config, Sequence) and not isinstance(config, Mapping):
        words = [str(w) for w in config]
    else:
        words = None
    found = read_script_args(framework, words, gpus, model) if words and is_launch_script(words[0]) else None
    if found is not None:
        return found.args, found.framework, found.gpus, found.model, found.notes
    if words:
        first = words[0]
        if ("=" not in first and not first.startswith("-") and len(first) < 4096 and "\0" not in first
                and PurePath(first).suffix.lower() in (".sh", ".bash") and not is_file(first)):
            from .inputs import not_a_file

            raise InputError("config", not_a_file(first), "pass the path of your launch script (run.sh) or YAML "
                             "config, or the arguments as a list.")
    # a command line given as a list: its launcher's GPUs beside --gpus, noted as a pasted one's are
    notes = command_gpus_notes(words, gpus) if words and gpus is not None else []
    return config, framework, gpus, model, notes


def command_gpus_notes(words: Sequence[str], gpus: int) -> list[str]:
    """The note a command line's launcher words (``deepspeed --num_gpus 2 --module ...``) give beside ``gpus``
    (launch_script.gpus_note, the one a script or a pasted command gets); the words stay the framework's parser's
    to read."""
    from ..launch_script import gpus_note, read_pasted_command

    try:
        found = read_pasted_command(list(words))
    except InputError:  # not a command line this reading follows: the framework's parser says what it is
        return []
    # only the launcher's own count (launch_script.launcher_gpus: a launcher command's words, not a script's words read
    # back, which start with its flags: ``--nproc_per_node=8 openrlhf/cli/train_ppo.py``, noted when it was read)
    if found is None or found.launched is None or str(words[0]).startswith("-"):
        return []
    said = gpus_note(gpus, found.gpus, found.launched, "the command")
    return [said] if said else []


def pasted_for(framework: str | None, found) -> bool:
    """Whether a pasted command line is read as its script: yes unless --framework names another framework than its
    entry point's (``--framework swift-megatron -- swift rlhf ...``): then --framework decides, its words skipped."""
    try:
        script_framework(framework, found.framework, "the pasted command")
        return True
    except InputError:
        return False


def script_framework(framework: str | None, runs: str, path: str) -> str | None:
    """--framework beside a launch script: the script's framework (verl names the Megatron backend it runs)."""
    given = framework.split("==")[0].split("@")[0].strip().lower() if framework else None
    if given == "verl" and runs == "verl-megatron":  # the Megatron backend of the verl named
        framework = runs + framework.strip()[len(given):]
        given = runs
    if framework and given != runs:
        raise InputError("framework", f"--framework {framework} was given, but {path} runs {runs}.",
                         f"drop --framework (or pass --framework {runs}).")
    return framework


def script_model(name: str, notes: list[str], where: str = "the script", framework: str | None = None) -> str | None:
    """The catalog card of the model a script names, looked up by the name ``framework`` reads it as
    (``Framework.catalog_model_name``: Unsloth's pre-quantized and '-bf16' repos as the model they store), or None (each said in
    ``notes``)."""
    from ..catalog.models import load_model, nearest_models
    from ..frameworks import get_framework

    looked_up = get_framework(framework).catalog_model_name(name) if framework else name
    try:
        model = load_model(looked_up).name
        stored = f", the model the repo {name} stores" if looked_up != name else ""
        notes.append(f"model from {where}: {name} (catalog card {model}{stored})")
        return model
    except InputError:
        near = nearest_models(looked_up)
        hint = (f" (the nearest catalog names: {', '.join(near)}, where one is the same architecture; else the "
                "model's config.json)" if near else "")
        notes.append(f"the model {name} of {where} is not in the catalog: pass --model for the head, "
                     f"length and memory rules{hint}")
        return None

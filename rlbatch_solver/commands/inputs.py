"""What the command line's options become before a command runs: a launch script read in place of the arguments,
the pasted config, the scenario of enumerate and recommend, the calibration profile and the mean lengths.

Notes on where a value came from go to stderr as ``note: ...`` lines; bad input is an ``InputError``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, List, Optional

from ..errors import InputError, shown
from ..scenario import Scenario

if TYPE_CHECKING:
    from ..script_rewrite import Rewrite


def note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr, flush=True)


# explain reads the end of a log file: the error a job died on, with its traceback, is in its last lines
ERROR_TAIL_CHARS = 256 * 1024


def error_text(text: str) -> str:
    """explain's error: the pasted text, or the job's log when it names a file (``rlbatch explain job.log``) or is
    ``-`` (the log on stdin): its last ERROR_TAIL_CHARS characters, said in a note when cut."""
    from ..frameworks.overrides import is_file
    from ..safe_input import MAX_LOG_BYTES, read_text

    if text == "-":
        data, name = sys.stdin.read(MAX_LOG_BYTES).replace("\0", ""), "stdin"
    elif text and "\n" not in text and len(text) < 4096 and is_file(text):
        data, name = read_text(text, "log", MAX_LOG_BYTES, "the job's log, or its error line in quotes",
                               lenient=True), text
    else:
        return text
    if len(data) > ERROR_TAIL_CHARS:
        note(f"read the last {ERROR_TAIL_CHARS:,} characters of {name} ({len(data):,}): the error is at its end")
        data = data[-ERROR_TAIL_CHARS:]
    return data


def calibration(path: Optional[str], gpu: Optional[str]):
    """The profile's efficiencies for this GPU (or None), with a note on stderr when a profile was found."""
    from ..calibration import efficiency_for, resolve_profile

    eff, text = efficiency_for(resolve_profile(path), gpu)
    if text:
        note(text)
    return eff


def means(calibration_path: Optional[str], gpu: Optional[str], prompt: Optional[float],
          response: Optional[float]) -> tuple[Optional[float], Optional[float], str]:
    """The mean lengths to time a step at: the flags, else the calibration profile's (said on stderr)."""
    if prompt is not None or response is not None:
        return prompt, response, "given"
    from ..calibration import lengths_for, resolve_profile

    profile = resolve_profile(calibration_path)
    p, r = lengths_for(profile, gpu)
    if p is None and r is None:
        return None, None, "assumed"
    note(f"mean lengths from {profile.path}: prompt {p or '-'}, response {r or '-'} tokens")
    return p, r, "calibration"


def host_mem(value: Optional[float]) -> Optional[float]:
    """--host-mem: a positive number of GiB."""
    if value is None:
        return None
    if not value > 0 or value != value or value > 2**20:
        raise InputError("host-mem", f"{value} is not a node's RAM in GiB.", "give --host-mem as a positive number "
                         "of GiB, for example --host-mem 1024 for a node with 1 TiB of RAM.")
    return float(value)


def script(framework: Optional[str], overrides: Optional[List[str]], gpus: Optional[int], model: Optional[str],
           default: Optional[str] = "verl"):
    """A launch script given in place of the arguments (``rlbatch check run.sh``) or a pasted command line
    (``script_args.read_script_args``): its framework, its arguments, its launcher's GPU count, its model when the
    catalog knows it; its notes printed first. Otherwise the arguments as they are."""
    from .script_args import read_script_args

    found = read_script_args(framework, overrides or [], gpus, model)
    if found is None:
        if model is None and overrides and (framework or default):
            model = _pasted_model(framework or default, overrides)
        return framework or default, overrides, gpus, model
    for text in found.notes:
        note(text)
    return found.framework, found.args, found.gpus, found.model


def arguments(framework: Optional[str], config: Optional[str], overrides: Optional[List[str]], gpus: Optional[int],
              model: Optional[str]):
    """What check, fix and calibrate read: a launch script or pasted command (``script``), then a YAML config given
    in place of the arguments (``config_file``, its framework by its keys unless --framework named one) ->
    (framework, config, overrides, gpus, model)."""
    named = framework is not None
    framework, overrides, gpus, model = script(framework, overrides, gpus, model)
    framework, config, overrides = config_file(framework, named, config, overrides)
    if model is None and config:
        model = _config_model(framework, config)
    return framework, config, overrides, gpus, model


def _config_model(framework: str, path: str, notes: Optional[list[str]] = None) -> Optional[str]:
    """The catalog card of the model a YAML config names under the framework's model key (open-r1's recipes'
    model_name_or_path, verl's actor_rollout_ref.model.path, Unsloth's from_pretrained model_name), said on stderr as
    a script's is (or added to ``notes``); None without one (the memory check then asks for --model, as before)."""
    from ..frameworks import get_framework
    from .script_args import script_model

    fw = get_framework(framework)
    flat = fw.normalize(_config_keys(path, "--config"))
    for key in fw.model_keys:
        value = next((flat[k] for k in (key, key.lstrip("-")) if k in flat), None)
        if isinstance(value, str) and value:
            said: list[str] = []
            model = script_model(value, said, path, framework)
            if notes is not None:
                notes.extend(said)
            else:
                for text in said:
                    note(text)
            return model
    return None


def command_config_model(framework: str, args: List[str], notes: list[str]) -> Optional[str]:
    """The model named in the YAML a command's own ``--config FILE`` reads (TRL's grpo.py: TrlParser's GRPOConfig
    YAML with model_name_or_path), where the file is here and the command names no model itself; else None."""
    from ..frameworks.overrides import is_file

    for i, word in enumerate(args):
        key, eq, value = word.partition("=")
        if key != "--config":
            continue
        path = value if eq else (args[i + 1] if i + 1 < len(args) else "")
        if path.lower().endswith(CONFIG_SUFFIXES) and is_file(path):
            return _config_model(framework, path, notes)
    return None


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def config_file(framework: str, named: bool, config: Optional[str], overrides: Optional[List[str]],
                field: str = "--config") -> tuple[str, Optional[str], Optional[List[str]]]:
    """A YAML config given in place of the arguments (``rlbatch check run.yaml``) read as ``--config``; a script or
    config path that does not exist said so (it was read as a pasted word: "nothing to check"); and, without
    --framework, a YAML config whose keys are no verl key read as the framework that knows them (``field``: the
    option that named the file, in the error when it is no YAML config)."""
    from pathlib import PurePath

    from ..frameworks.overrides import is_file

    first = overrides[0] if overrides else None
    if first is not None and "=" not in first and not first.startswith("-"):
        suffix = PurePath(first).suffix.lower() if len(first) < 4096 and "\0" not in first else ""
        if suffix in CONFIG_SUFFIXES and config is None and is_file(first):
            config, overrides = first, list(overrides[1:])
        elif (suffix in CONFIG_SUFFIXES + (".sh", ".bash") or (len(overrides) == 1 and _is_dir(first))) \
                and not is_file(first):
            raise InputError("config", not_a_file(first),
                             "pass the path of your launch script (run.sh) or YAML config, or paste the arguments "
                             "after --.")
    if not named and config and PurePath(config).suffix.lower() in CONFIG_SUFFIXES and is_file(config):
        framework = _framework_of_config(framework, config, field)
    return framework, config, overrides


def _is_dir(word: str) -> bool:
    """Whether the one word given in place of the arguments names a directory (``rlbatch check runs/``: it was read as
    a pasted word, "nothing to check (runs/ is not an argument it takes)"). The first word of a longer command stays a
    word (``trl grpo ...`` run beside a clone of trl)."""
    from pathlib import Path

    try:
        return len(word) < 4096 and "\0" not in word and Path(word).expanduser().is_dir()
    except (OSError, ValueError):
        return False


def _framework_of_config(default: str, path: str, field: str) -> str:
    """The framework whose keys a YAML config given without --framework sets: the default while no framework knows
    more of them (an EasyR1 config shares data.* and trainer.* keys with verl's); else the one that knows the most
    (said in a note), or an input error naming the candidates."""
    from ..commands.common import load_config_file
    from ..frameworks import FRAMEWORKS

    flat = load_config_file(path, field)

    def known(name: str) -> int:
        return keys_known(name, flat)

    base = known(default) if flat else 0
    if not flat or base == len(flat):
        return default
    scores = {name: known(name) for name in FRAMEWORKS}
    best = max(scores.values())
    if best == base and base:
        return default
    top = [n for n, s in scores.items() if s == best]
    if best == 0:
        raise InputError("framework", f"none of the {len(flat)} keys of {shown(path, 60)} (e.g. "
                         f"{shown(next(iter(flat)), 40)}) is a key of a framework we know.",
                         f"pass --framework (one of: {', '.join(FRAMEWORKS)}).")
    theirs = f"{best} of its {len(flat)} keys are"
    if len(top) > 1:  # alike by their keys: the one whose own model key names the model (TRL's model_name_or_path,
        # Unsloth's from_pretrained model_name) is the config's
        named = [n for n in top if _names_model(n, flat)]
        if len(named) == 1:
            note(f"{path} read as {named[0]}'s config ({theirs} of {' and '.join(top)} alike; it names its model "
                 f"under {named[0]}'s key); --framework to name another")
            return named[0]
    if len(top) > 1:
        raise InputError("framework", f"{shown(path, 60)} reads as the config of {', '.join(top[:-1])} or "
                         f"{top[-1]} ({theirs} theirs, {base} {default}'s).",
                         f"pass --framework with the one you run it with ({', '.join(top[:-1])} or {top[-1]}).")
    note(f"{path} read as {top[0]}'s config ({theirs} {top[0]}'s, {base} {default}'s); --framework to name "
         "another")
    return top[0]


def keys_known(name: str, flat: dict) -> int:
    """How many keys of a config the framework ``name`` knows (its release's, or another release's: a TRL 0.15
    GRPOConfig's max_prompt_length and vllm_device, which TRL dates the config by, are no 1.16 field: the YAML was
    read as Unsloth's, which knows max_prompt_length by dropping it, and priced with Unsloth's 4-bit base)."""
    return key_counts(name, flat)[0]


def key_counts(name: str, flat: dict) -> tuple[int, int]:
    """How many keys of a config the framework ``name`` knows (``keys_known``) and how many its parser refuses (where
    we know every key it takes, or it says so: ``KeyList.complete``, ``KeyList.refused``), from one key list."""
    from ..frameworks import get_framework

    fw = get_framework(name)
    kl, own = fw.key_list(flat, command=True), set(fw.normalize({}))  # own: what the reading adds by itself
    given = [k for k in kl.given if k not in own]
    known = sum(1 for k in given if k in kl.keys or k in kl.others)
    refused = sum(1 for k in given if k in kl.refused or (kl.complete and k not in kl.keys and k not in kl.others))
    return known, refused


def _names_model(framework: str, flat: dict) -> bool:
    """Whether a config sets the framework's own model key (``Framework.model_keys``, as its reading spells it)."""
    from ..frameworks import get_framework

    fw = get_framework(framework)
    keys = fw.normalize(flat)
    return any(k in keys or k.lstrip("-") in keys for k in fw.model_keys)


def _pasted_model(framework: str, overrides: List[str]) -> Optional[str]:
    """The catalog card of the model pasted arguments name under the framework's model key (as a script's is read:
    ``actor_rollout_ref.model.path=Qwen/Qwen2.5-14B`` after ``--``), said on stderr; None without one."""
    from ..frameworks import get_framework
    from ..launch_script import model_named

    try:
        keys = get_framework(framework).model_keys
    except InputError:
        return None  # an unknown --framework is said where it is resolved
    name = model_named([str(a) for a in overrides], keys)
    if name is None:
        return None
    from .script_args import script_model

    notes: list[str] = []
    model = script_model(name, notes, "the arguments", framework)
    for text in notes:
        note(text)
    return model


def pasted(framework: str, config: Optional[str], overrides: Optional[List[str]], verb: str, field: str = "--config"):
    """A YAML file (named by the option ``field``) and/or pasted arguments -> (flat native config, ignored tokens)."""
    from ..frameworks import get_framework

    fw = get_framework(framework)
    flat: dict[str, Any] = {}
    ignored: list[str] = []
    if config:
        flat.update(_config_keys(config, field))
    if overrides:
        more, ignored = fw.parse(overrides)
        flat.update(more)
    if not flat and config and not overrides:
        raise InputError(field, f"'{shown(config, 60)}' holds no config keys (it is empty, or only comments).",
                         "write the config's keys in it (key: value lines)"
                         + (", or paste the arguments after --." if field == "--config" else "."))
    if not flat:
        read_past = f" ({', '.join(shown(t, 40) for t in ignored[:3])} {'is' if len(ignored) == 1 else 'are'} not " \
            "an argument it takes)" if ignored else ""
        entry = next((t for t in ignored if t.endswith(".py")), None)
        if entry is not None and ignored[0].rsplit("/", 1)[-1] in _LAUNCHER_WORDS:  # accelerate launch grpo.py ...
            raise InputError("config", f"nothing to {verb}{read_past}: {shown(entry, 60)} is an entry point we do not "
                             f"know, so its arguments were read as {framework}'s.",
                             "name the framework the script runs with --framework (trl for a script that builds "
                             "TRL's GRPOTrainer, unsloth for Unsloth's), and its arguments are read as that one's.")
        raise InputError("config", f"nothing to {verb}{read_past}.",
                         "paste the arguments after -- (key=value for verl, --flag value for the others) or pass "
                         "--config FILE.")
    return flat, ignored


# the words that start a pasted command's entry point (launch_script.py reads the ones it knows the script of)
_LAUNCHER_WORDS = ("accelerate", "torchrun", "deepspeed", "python", "python3")


def _config_keys(path: str, field: str) -> dict[str, Any]:
    """The keys of the YAML config file ``path`` the option ``field`` names, whatever its name ends with (it was read
    as one pasted word where it did not end in .yaml: "nothing to check")."""

    from ..frameworks.overrides import is_file, load_config_file

    if not is_file(path):
        raise InputError(field, not_a_file(path), "pass the path of a YAML config file (key: value lines).")
    return load_config_file(path, field)


def not_a_file(path: str) -> str:
    """What a path that is no regular file is, in words: a directory, a device or pipe (/dev/null), or nothing."""
    from pathlib import Path

    if not str(path).strip():  # Path('') is the working directory: an empty word ("$SCRIPT" unset) is no file name
        return "the argument is empty (an unset shell variable?), not a file name."
    try:
        if Path(path).is_dir():
            return f"'{shown(path, 60)}' is a directory, not a file."
        if Path(path).exists():
            return f"'{shown(path, 60)}' is not a regular file (a device or a pipe)."
    except (OSError, ValueError):  # a name no file system takes: no file
        pass
    return f"file '{shown(path, 60)}' does not exist."


def scenario(scenario_file: Optional[str], flags: dict[str, Any], set_: Optional[List[str]],
             search: Optional[List[str]]) -> Scenario:
    """The scenario of enumerate and recommend: the YAML file's, the flags (scenario field names) over it, --set and
    --search added to its fixed and searched keys; with none of them the built-in default scenario."""
    from ..frameworks.overrides import parse_scalar
    from ..scenario import FIELD_NAMES, default_scenario, load_scenario, scenario_from_dict

    base = load_scenario(scenario_file) if scenario_file else None
    given = {k: v for k, v in flags.items() if v is not None}
    if base is None and not given and not set_ and not search:
        sc = default_scenario()
        # said first, as a script's reading is: the answer's numbers are the example's, not the user's hardware's
        note(f"no scenario given: the built-in example (verl's batch-size guide: {sc.algorithm} on {sc.gpus}x "
             f"{sc.gpu}, {sc.model}, prompt {sc.prompt_length}, response {sc.response_length}, n {sc.n}, "
             + ", ".join(f"{k}={v}" for k, v in sc.fixed.items()) + "); describe yours with --gpu, --gpus, --model, "
             "--algo, --n, --prompt-len, --response-len and --set KEY=VALUE, or start from your script with --from")
        return sc
    # the file's fields (not what recommend sets on a scenario: kept_totals)
    data = {k: v for k, v in base.to_dict().items() if k in FIELD_NAMES} if base else {}
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


def from_words(path: Optional[str], environment: Optional[List[str]]) -> Optional[List[str]]:
    """``recommend --from run.sh DEVICE=gpu``: the script's path and the environment words given after it (as ``check
    run.sh DEVICE=gpu`` takes them); None without --from, where such words are an input error."""
    if path is None:
        if environment:
            raise InputError("recommend", f"'{environment[0]}': recommend takes no arguments without --from (the "
                             "environment words after a script's path are read with --from's script).",
                             "describe the scenario with flags (--gpu, --gpus, --model, --set KEY=VALUE), or pass "
                             "--from run.sh with the NAME=value words after it.")
        return None
    return [path, *(environment or [])]


def from_config(words: str | List[str], framework: Optional[str], gpu: Optional[str], gpus: Optional[int],
                model: Optional[str]) -> tuple[str, dict[str, Any], Optional[int], Optional[str]]:
    """``recommend --from run.sh`` (or a YAML config with --framework; ``words``: its path, then the environment words
    given after it): the framework, flat config, GPUs and model."""
    from ..frameworks.overrides import is_file
    from ..launch_script import is_launch_script

    words = [words] if isinstance(words, str) else list(words)
    path, rest = words[0], words[1:]

    if not gpu:
        raise InputError("gpu", "a launch script does not say which GPU it runs on.",
                         "pass --gpu (e.g. a100-80gb, h100, rtx4090).")
    if not is_file(path):  # else the path would be read as a pasted argument and "nothing to recommend from" said
        raise InputError("--from", not_a_file(path),
                         "pass the path of your launch script (run.sh) or of a YAML config.")
    if is_launch_script(path):
        name, args, gpus, model = script(framework, [path, *rest], gpus, model)
        flat, _ = pasted(name, None, args, "recommend from")
    else:
        if rest:
            raise InputError("--from", f"'{rest[0]}' follows a YAML config: only a launch script reads the "
                             "environment words after its path.", "set the value in the YAML, or drop the words.")
        name = config_file(framework or "verl", framework is not None, path, None, field="--from")[0]
        flat, _ = pasted(name, path, None, "recommend from", field="--from")
    return name, flat, gpus, model


def calibrate_grid(grid, path: Optional[str]) -> None:
    """A profile's efficiencies on the grid points of its GPU type (each point records them)."""
    from ..calibration import resolve_profile

    profile = resolve_profile(path)
    if profile is None:
        return
    hits = 0
    for p in grid.points:
        if profile.applies_to(str(p.scenario.get("gpu"))):
            p.scenario["calibration"] = profile.efficiency.as_dict()
            hits += 1
    note(f"calibration {profile.path} ({profile.gpu or 'any GPU'}) applied to {hits} of {len(grid.points)} points")


def profile_grid(grid, name: Optional[str]) -> None:
    """``sweep --response-profile``: the length profile of every grid point that names none (each point records it)."""
    if name is None:
        return
    from ..costmodel.lengths import named

    named(name)
    for p in grid.points:
        if p.scenario.get("response_profile") is None:
            p.scenario["response_profile"] = name


def script_to_write(overrides: Optional[List[str]], write: Optional[str],
                    example: str = "rlbatch fix run.sh --write fixed.sh") -> Optional[str]:
    """The launch script ``--write`` rewrites (the one given in place of the arguments); an input error when the
    config was not a script, or the target is the script itself."""
    from pathlib import Path

    from ..launch_script import is_launch_script
    from ..safe_input import exists, output_file

    if write is None:
        return None
    if overrides and not overrides[1:] and "=" not in overrides[0] and not overrides[0].startswith("-") \
            and not exists(overrides[0]):
        return None  # a script path that names no file: the command says so itself
    if not overrides or not is_launch_script(overrides[0]) or script_environment(overrides)[1]:
        raise InputError("write", "writes a launch script back, and the config was not one.",
                         f"pass the script alone ({example}; NAME=value words of the environment it reads may "
                         "follow it), or drop --write.")
    target = output_file(write, "write", "a new file for the script (--write fixed.sh)")
    if target.resolve() == Path(overrides[0]).expanduser().resolve():
        raise InputError("write", f"{write} is the script itself.", "write to a new file: --write fixed.sh.")
    return overrides[0]


def script_environment(overrides: List[str]) -> tuple[dict[str, str], list[str]]:
    """The environment given after a launch script's path (``fix run.sh DEVICE=gpu``: NAME=value words of a NAME the
    script reads, as ``launch_script.script_and_rest`` reads them) and the other words after it."""
    from ..launch_script import split_environment
    from ..safe_input import MAX_SCRIPT_BYTES, read_text

    if not overrides[1:]:
        return {}, []
    text = read_text(overrides[0], "script", MAX_SCRIPT_BYTES, "the shell script you launch the run with")
    return split_environment(text, list(overrides[1:]))


def write_script(script: str, native: List[str], framework: str, out: str, drop: List[str] = (),
                 environment: Optional[dict] = None) -> "Rewrite":
    """``script`` with the changed keys ``native`` written in and the keys of ``drop`` taken out
    (``script_rewrite``, reading the script in ``environment``: what it was given after its path), saved to
    ``out``."""

    from ..frameworks import get_framework
    from ..safe_input import MAX_SCRIPT_BYTES, output_file, read_text
    from ..script_rewrite import rewrite_script

    from ..errors import InputError as _Refused
    from ..launch_script import in_layout, parse_launch_script

    fw = get_framework(framework)
    text = read_text(script, "script", MAX_SCRIPT_BYTES, "the shell script you launch the run with")
    try:  # a newer layout's script (SkyRL's unified package) gets the answer in its own names
        read = parse_launch_script(text, environment=dict(environment or {}))
        native = in_layout(read, list(native))
        drop = [in_layout(read, [f"{k}="])[0].partition("=")[0] for k in drop]
    except _Refused:
        pass
    done = rewrite_script(text, native, fw.syntax,
                          fw.script_entries(), fw.launcher_entries, fw.launcher_keys, drop, environment)
    target = output_file(out, "write", "a new file for the script (--write fixed.sh)")
    try:
        target.write_text(done.text, encoding="utf-8")
    except OSError as err:
        raise InputError("write", f"cannot write {out}: {err.strerror}.", "pass a writable path.") from None
    return done

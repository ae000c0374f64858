"""Read a whole launch script: which framework it starts, its arguments, its GPU count.

Users paste the shell script they launch with, not the arguments. This module does what the
shell would do to the parts that matter and nothing more:

- lines joined at backslash-newlines, ``#`` comments dropped, quotes removed (``shlex``);
- ``NAME=value`` lines (also ``export``/``readonly``/``local``/``declare``) recorded, bash arrays ``NAME=( ... )``
  (over several lines, as slime's scripts group their arguments) recorded as their words, and
  ``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``${NAME:=default}``, ``${NAME-default}`` and
  ``$((arithmetic))`` of known integers expanded where they are used (``${1:-default}``, a positional parameter,
  as its default: the script is read as run without arguments) (``${NAME[@]}`` and ``"${NAME[@]}"`` as the array's words, each element one word as bash gives it; ``NAME+=( ... )`` appends) (never inside single quotes; a single
  quote inside double quotes is an ordinary character, as in bash: ``"['$DATA/a']"`` expands ``$DATA``);
- ``if`` / ``elif`` / ``else`` / ``fi`` blocks: where the script's own variables settle the condition (``[ "$A" = x ]``,
  ``[[ $A == x ]]``, ``!=``), only the branch bash runs is read; any other block is read whole;
- the command that starts the framework found by its entry point, after any ``VAR=value``
  prefixes and launchers (``ray job submit ... --``, ``torchrun``, ``deepspeed``, ``python -m``,
  ``nohup``, ``accelerate launch``). Each framework names its entry points
  (``Framework.entry_modules`` / ``entry_commands``): ``verl.trainer.main_ppo`` (verl),
  ``swift rlhf`` and ``megatron rlhf`` (ms-swift), ``openrlhf.cli.train_ppo_ray`` (OpenRLHF);
- the GPU count the launcher gives: ``CUDA_VISIBLE_DEVICES``, ``--nproc_per_node``/``--nnodes``
  of torchrun and ``--num_gpus``/``--num_nodes`` of deepspeed; then the framework reads its own
  arguments and environment (``Framework.from_script``: verl's backend from its trainer config,
  ms-swift's ``NPROC_PER_NODE``/``NNODES`` passed on as its own parser reads them).

A value that depends on a variable the script does not set (the shell expands it at launch) is not guessed: the
argument is left out and a note names the variable and what the check does instead; a path the shell completes, of a
key no rule reads, and the training data's path are kept as written (no number is read from them; the data's name
chooses the length profile).
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from . import safe_input
from .errors import InputError, shown

# a NAME=value word (a shell assignment): the script's variables, and a command's environment words
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
# ${A}, ${A:-default} (the default may hold one level of ${B}: ${A:-"${HOME}/verl"}), $A; ${1:-vllm}: a positional
# parameter, never set in the script as read (no arguments), so its default
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?:(:?[-=])((?:[^{}]|\$\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ARITH = re.compile(r"\$\(\(((?:[^()]|\([^()]*\))*)\)\)")  # one level of inner parentheses: $(((a + b)))
_SAFE_ARITH = re.compile(r"^[0-9+\-*/%() ]+$")
_MAX_ARITH = 256  # characters of one $((expression)) with its variables in: a script's arithmetic is short
_DECLARE = ("export", "readonly", "local", "declare", "typeset")
_DEFAULTED = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-=])(.*)\}$", re.S)  # a whole ${A:-default} value
_ARRAY_OPEN = re.compile(
    r"^\s*(?:(?:export|declare|local|readonly|typeset)(?:\s+-\w+)*\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)$", re.S)
# ${NAME[@]}, and "${NAME[@]}" (quotes included: bash gives each element as one word, spaces and all, as verl 0.9's
# examples pass their DATA=( ... ) / ACTOR=( ... ) groups)
_ARRAY_USE = re.compile(r"\"\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}\"|\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}")


def _entry_words() -> dict:
    """Each framework's entry words (``entry_words.ENTRY_WORDS``), in the registry's order: a framework is imported once
    its words start a line, not before."""
    from .frameworks.entry_words import ENTRY_WORDS

    return ENTRY_WORDS


def entry_points() -> list[str]:
    """The commands we recognise, as a user would type them."""
    out = []
    for words in _entry_words().values():
        out += [f"python3 -m {m}" for m in words.modules] + [" ".join(c) for c in words.commands]
    return out


@dataclass
class LaunchScript:
    framework: str  # as --framework takes it
    args: list[str]  # the framework's own arguments (ms-swift: with its NPROC_PER_NODE/NNODES prefix)
    gpus: int | None = None  # from the launcher, when it says
    notes: list[str] = field(default_factory=list)
    model: str | None = None  # the model the script trains (a HF id or a path), as written
    command: list[str] = field(default_factory=list)  # the run's command line, its variables expanded
    # the environment the run starts with, as NAME=value words: the script's `export` lines before it, then the
    # command's own NAME=value words (ACCELERATE_LOG_LEVEL=info accelerate launch ...)
    environment: list[str] = field(default_factory=list)
    # the array definitions read (NAME=( ... ), NAME+=( ... )): (NAME, the physical line it starts on, counted from 0,
    # and whether the run surely takes it: False inside an if/case branch the script's own values do not settle)
    array_lines: list[tuple[str, int, bool]] = field(default_factory=list)
    # the reader of a newer layout's entry point (launch_script._LAYOUTS: module:function) the arguments were read
    # with, in the names of the release we follow; None: the framework's own
    layout: str | None = None
    # the launcher's node split (launcher_gpus) where ``gpus`` is its count; None where the framework's own words
    # (from_script) or a server line decide another
    launched: "Launched | None" = None


def is_launch_script(arg: str) -> bool:
    """Whether a pasted argument names a script file rather than being an argument itself."""
    if "=" in arg or arg.startswith("-") or len(arg) > 4096:
        return False
    try:
        p = Path(arg).expanduser()
        return p.is_file() and (p.suffix in (".sh", ".bash") or _head(p).startswith("#!"))
    except (OSError, ValueError):
        return False


def _head(p: Path) -> str:
    with p.open("rb") as f:
        return f.read(2).decode("latin-1")


def read_launch_script(path: str | Path) -> LaunchScript:
    return script_and_rest(path, [])[0]


def script_and_rest(path: str | Path, after: list[str]) -> tuple[LaunchScript, list[str]]:
    """The script, and the words given after its path that are not its environment: a ``NAME=value`` word whose
    NAME the script reads (``$NAME``, ``${NAME:-default}``) is the environment it runs in, as ``NAME=value bash
    run.sh`` (verl 0.9's ``DEVICE=gpu``, which the script otherwise finds by importing torch_npu); the others are
    arguments added after the script's own."""
    text = safe_input.read_text(path, "script", safe_input.MAX_SCRIPT_BYTES,
                                "the shell script you launch the run with")
    environment, rest = split_environment(text, after)
    return parse_launch_script(text, name=str(path), environment=environment), rest


def split_environment(text: str, after: list[str] | None) -> tuple[dict[str, str], list[str]]:
    """The words given after a script's path, cut into the environment it runs in (``NAME=value`` of a NAME the
    script reads) and the rest."""
    environment: dict[str, str] = {}
    rest: list[str] = []
    for word in after or []:
        m = ASSIGNMENT.match(word)
        if m and re.search(r"\$\{?" + m.group(1) + r"\b", text):
            environment[m.group(1)] = m.group(2)
        else:
            rest.append(word)
    return environment, rest


def read_pasted_command(tokens: list[str]) -> LaunchScript | None:
    """Arguments pasted with the command that starts the run (``check -- python3 -m verl.trainer.main_ppo k=v``,
    ``-- NPROC_PER_NODE=8 swift rlhf ...``, ``-- accelerate launch ... -m trl.scripts.grpo ...``), read as a
    one-line script: its launcher's words are not the framework's arguments. None when no entry point is pasted."""
    if _entry(list(tokens)) is None:
        return None
    return parse_launch_script(shlex.join(tokens), name="the pasted command")


def parse_launch_script(text: str, name: str = "script", environment: dict[str, str] | None = None) -> LaunchScript:
    env: dict[str, str] = dict(environment or {})  # the environment it is run in (read_launch_script), then its own
    exported: dict[str, str] = dict(environment or {})  # that environment and the `export NAME=value` lines
    found: list[tuple] = []  # (framework, args, prefix, launcher, unknown, command, exported so far)
    companions: list[tuple] = []  # (framework, the words after its command, the line's variables)
    if len(text) > safe_input.MAX_SCRIPT_BYTES:
        raise InputError("script", f"{shown(name, 60)} is longer than {safe_input.MAX_SCRIPT_BYTES:,} characters.",
                         "pass the shell script you launch the run with.")
    budget = safe_input.ExpansionBudget("script")
    missing_arrays: list[str] = []
    unfollowed: list[str] = []  # entry modules of a framework's layout we do not follow (_UNFOLLOWED)
    arrays: dict[str, tuple[list[str], list[str]]] = {}  # NAME=( ... ): its words, and the unset variables they hold
    branches = _Branches()
    array_lines: list[tuple[str, int, bool]] = []
    guessed: list[str] = []  # conditions not told of the if blocks a variable was set in
    for line, at in _case_lines(_logical_lines(text, numbered=True)):
        safe_input.check_script_line(line)
        if not branches.reads(_strip_comment(line).strip(), env):
            continue
        array = _ARRAY_OPEN.match(line)
        if array and line.rstrip().endswith(")"):  # NAME=( words ) / NAME+=( words ): expanded now, as bash does
            array_lines.append((array.group(1), at, branches.sure()))
            guessed.extend(branches.guessed())
            text, unknown = _expand(array.group(3).rstrip()[:-1], env)
            budget.spend(text)
            try:  # each element one word, its quotes removed: data.train_files="['$a', '$b']" stays one word
                words = shlex.split(_protect_commands(text))
            except ValueError:
                words = text.split()
            name = array.group(1)
            if array.group(2):
                words = arrays.get(name, ([], []))[0] + words
                unknown = arrays.get(name, ([], []))[1] + unknown
            arrays[name] = (words, unknown)
            env[name] = " ".join(words)
            continue
        used: list[str] = []  # variables an array's elements hold that the script does not set
        line = _ARRAY_USE.sub(lambda m: _array_use(m, arrays, missing_arrays, used), _strip_comment(line))
        expanded, unknown = _expand(line, env)
        unknown += used
        budget.spend(expanded)
        try:
            tokens = _command_words([t for t in shlex.split(_guard_quoted(_protect_commands(expanded)))
                                     if t not in ("$@", "$*", '"$@"')])
        except ValueError:
            continue  # an unbalanced quote: not a line we can read; a command line would be reported missing
        if not tokens:
            continue
        exports = tokens[0] == "export"
        if tokens[0] in _DECLARE:
            tokens = [t for t in tokens[1:] if not t.startswith("-")]
        prefix: dict[str, str] = {}
        i = 0
        while i < len(tokens) and ASSIGNMENT.match(tokens[i]):
            k, v = ASSIGNMENT.match(tokens[i]).groups()
            whole = _DEFAULTED.match(v)
            if whole and "$(" in v:  # ${A:-$(cmd 'quoted')}: left whole by _expand (the quotes cut it), read now
                name, op, default = whole.groups()
                value = env.get(name)
                v = value if value is not None and (value != "" or not op.startswith(":")) else default
            prefix[k] = v
            i += 1
        if i == len(tokens):  # only assignments: the script's variables
            if prefix:
                guessed.extend(branches.guessed())
            env.update(prefix)
            if exports:
                exported.update(prefix)
            continue
        hit = _entry(tokens[i:])
        if hit is not None:
            fw, launcher, args = hit
            found.append((fw, args, prefix, launcher, unknown, tokens, dict(exported)))
        else:
            side = _companion(tokens[i:])
            if side is not None:
                companions.append((side[0], side[1], {**env, **prefix}))
            unfollowed.extend(tokens[k] for k in range(i + 1, len(tokens))
                              if tokens[k - 1] == "-m" and _unfollowed(tokens[k], tokens))
    if not found:
        newer = next((m for m in unfollowed if m), None)
        if newer is not None:
            raise InputError("script", f"{shown(name, 60)} runs {newer}: {_UNFOLLOWED[_unfollowed(newer)][0]}",
                             _UNFOLLOWED[_unfollowed(newer)][1])
        raise InputError("script", f"{shown(name, 60)} starts none of the entry points we know.",
                         "the script should run one of: " + ", ".join(entry_points()) + ".")
    fw, args, prefix, launcher, unknown, command, exported_then = found[-1]
    # a quoted value over several lines (a system prompt) is one argument; its line breaks read as spaces, since a
    # pasted argument with a line break is split there (overrides.split_tokens) and no rule reads such a value
    args = [a.replace("\n", " ") for a in args]
    notes = []
    layout = next((_LAYOUTS[m] for m in (t.removesuffix(".py").replace("/", ".") for t in command) if m in _LAYOUTS),
                  None)
    if layout is not None:  # a newer layout's entry point: its arguments in the names of the release we follow
        import importlib

        module, _, function = layout.partition(":")
        args, said = getattr(importlib.import_module(module), function)(args)
        notes += said
    if len(found) > 1:
        notes.append(f"the script starts {len(found)} runs; the last one ({fw.name}) is read")
    models = frozenset(_key_word(k) for k in fw.model_keys)
    args, dropped = _drop_unknown(args, unknown, _read_keys(fw), models)
    computed = {k for k, v in env.items() if "$(" in v}
    for arg, names, key in dropped:
        notes.append(unset_variable_note(arg, names, key, computed, model=_key_word(key) in models))
    for name in dict.fromkeys(missing_arrays):
        notes.append(f"${{{name}[@]}} is an array the script does not set (sourced from another file?): its words are "
                     "left out")
    scope = {**env, **prefix}
    if fw.launcher_flags:  # accelerate launch's own flags (--num_processes, --config_file) decide the world
        first = next((k for k, t in enumerate(launcher) if t.startswith("--")), len(launcher))
        for entry in fw.launcher_entries:  # the launcher's own words (`accelerate launch`): they say the command
            words = entry.split()
            at = next((k for k in range(first) if launcher[k:k + len(words)] == words), None)
            if at is not None:
                first = at
                break
        args = launcher[first:] + args
    split = launcher_gpus(launcher, scope)
    gpus, source = split.gpus, split.source
    side_gpus = 0
    for side_fw, words, side_scope in companions:
        if side_fw.name != fw.name:
            continue
        extra, taken = fw.read_companion(words, side_scope)
        args = args + [w for a in extra for w in a.split(" ", 1)]
        notes.append(f"read the script's `{' '.join(fw.companion_entries[0])}` line: "
                     + (", ".join(extra) or "its default sizes")
                     + (f" on {taken} GPU(s) of its own" if taken else ""))
        side_gpus += taken or 0
    framework, args, launched = fw.from_script(args, scope, gpus, notes)
    if launched is None and gpus is not None and side_gpus:  # the trainer's devices and the server's: the job's
        launched, source = gpus + side_gpus, f"{source} and the server line's CUDA_VISIBLE_DEVICES"
    gpus = launched
    if gpus is not None:
        notes.append(f"GPUs from {source}: {gpus}")
    for variable in dict.fromkeys(branches.unsettled):
        notes.append(f"case {variable}: the script's value is not known here (the output of a command, or a variable "
                     "it does not set), so every branch was read, the last one's values kept; give the value after "
                     f"the script's path ({_case_variable(variable)}=...) to read only its branch")
    for condition in dict.fromkeys(guessed):
        notes.append(f"if {shown(condition, 80)}: the script's own values do not settle it (the output of a command, "
                     "or a variable it does not set), so each branch that may run was read, the last one's values "
                     "kept; give the variables it reads after the script's path (NAME=...) to read only the branch "
                     "bash takes")
    for k, v in (environment or {}).items():
        notes.append(f"read as run with {k}={v} (given after the script's path)")
    return LaunchScript(framework, args, gpus, notes, model_named(args, fw.model_keys), command,
                        [f"{k}={v}" for k, v in {**exported_then, **prefix}.items()], array_lines, layout,
                        split if gpus is not None and gpus == split.gpus else None)


def in_layout(script: LaunchScript, items: list[str]) -> list[str]:
    """An answer's items in the names of the layout the script was read from (``LaunchScript.layout``: its reader's
    module's ``from_<...>`` twin, the reader's name with ``to_`` as ``from_``), for ``--write``; as given where the
    framework's own names are the script's."""
    if script.layout is None:
        return list(items)
    import importlib

    module, _, function = script.layout.partition(":")
    return getattr(importlib.import_module(module), function.replace("to_", "from_", 1))(items)


_COMMAND_ENDS = ("|", "||", "&&", ";", "&", "|&")
_REDIRECT = re.compile(r"^[0-9]*(?:>>?|<|&>>?)(?:&[0-9-]+)?$")  # >, >>, 2>, &>, 2>&1, < alone (a target may follow)
_REDIRECT_TO = re.compile(r"^[0-9]*(?:>>?|<|&>>?)(?:&[0-9-]+|[^&].*)$")  # with its target: >log, 2>/dev/null, 2>&1


# the characters of operators and redirections, as they stand inside quotes (ordinary characters there, as in bash):
# each a character of Unicode's private use area until the line's words are cut, then itself again
_GUARDED = {c: chr(0xE000 + k) for k, c in enumerate("<>|;&")}
_UNGUARD = str.maketrans({v: k for k, v in _GUARDED.items()})


def _guard_quoted(text: str) -> str:
    """``text`` with ``< > | ; &`` inside quotes (``--input_template "<|user|>{}"``, ``--stop_strings "</answer>"``)
    out of ``_command_words``'s sight: only an unquoted one is an operator or a redirection; ``_command_words``
    gives them back."""
    spans = _quoted_spans(text)
    if not spans:
        return text
    chars = list(text)
    for a, b, _ in spans:
        for i in range(a, min(b + 1, len(chars))):
            chars[i] = _GUARDED.get(chars[i], chars[i])
    return "".join(chars)


def _command_words(tokens: list[str]) -> list[str]:
    """The words of the line's first command: up to a pipe or list operator (``| tee log``, ``&&``, ``;``, ``&``:
    another command, or the same one sent to the background), without its redirections (``2>&1``, ``> log.txt``),
    which bash takes out before the command sees its arguments. Words cut from a line ``_guard_quoted`` marked: a
    quoted ``<``, ``>``, ``|``, ``;`` or ``&`` is a character of its word, given back as itself."""
    return [tok.translate(_UNGUARD) for tok in _unquoted_command_words(tokens)]


def _unquoted_command_words(tokens: list[str]) -> list[str]:
    out, skip = [], False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in _COMMAND_ENDS:
            break
        if _REDIRECT.match(tok):
            skip = not re.search(r"&[0-9-]+$", tok)  # `> file`: the next word is its target
            continue
        if _REDIRECT_TO.match(tok):
            continue
        out.append(tok)
    return out


# Entry modules of a framework's newer layout read in the names of the release we follow: the module, and what reads
# its arguments (module:function, returning the arguments in our names and a note). SkyRL's unified `skyrl` package
# (PyPI skyrl 0.4.0; skyrl/train/entrypoints/main_base.py) moved the engine's keys under generator.inference_engine:
# frameworks/skyrl/unified.py maps them to skyrl-train 0.3.1's.
_LAYOUTS: dict[str, str] = {
    "skyrl.train.entrypoints.main_base": "rlbatch_solver.frameworks.skyrl.unified:to_skyrl_train",
    "examples.train.algorithms.dapo.main_dapo": "rlbatch_solver.frameworks.skyrl.unified:to_skyrl_train",
}
# Entry modules of a framework's newer layout that no release we follow has, by module prefix: what they are, and what
# to do. The unified skyrl package's other entry points (its example folders' own main_*.py, each a main_base subclass
# with config classes of its own) are not read.
_UNFOLLOWED: dict[str, tuple[str, str]] = {
    "skyrl.train.": (
        "an entry point of SkyRL's unified skyrl package other than skyrl.train.entrypoints.main_base, whose config "
        "we do not read; it is not checked.",
        "check the run as main_base's (python -m skyrl.train.entrypoints.main_base with the same keys), or with "
        "skyrl-train 0.3.1's names: --framework skyrl -- trainer.train_batch_size=... (docs/rules-skyrl.md)."),
}
_UNFOLLOWED["examples.train."] = _UNFOLLOWED["skyrl.train."]  # that package's example entry points (main_*.py)


def _unfollowed(module: str, words: list[str] | None = None) -> str | None:
    """The ``_UNFOLLOWED`` prefix of an entry module; ``examples.train.`` only on a command with SkyRL's generator
    keys (``words``), the package's examples being named by their folder alone."""
    prefix = next((p for p in _UNFOLLOWED if module.startswith(p)), None)
    if prefix == "examples.train." and words is not None and not any(w.startswith("generator.") for w in words):
        return None
    return prefix


def model_named(args: list[str], keys: tuple[str, ...]) -> str | None:
    """The trained model's id as the script names it (under one of the framework's ``model_keys``)."""
    for i, tok in enumerate(args):
        key, eq, value = tok.lstrip("+").partition("=")
        if key in keys:
            if eq:
                return value or None
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                return args[i + 1]
    return None


def _array_use(m: re.Match, arrays: dict[str, tuple[list[str], list[str]]], missing: list[str],
               unknown: list[str]) -> str:
    """``${NAME[@]}``: the array's words, each quoted as one word (already expanded: no variable in them is expanded
    twice), when the script set it, else nothing (and ``missing`` names it); ``unknown`` gets the variables the
    words hold that the script does not set."""
    name = m.group(1) or m.group(2)
    if name in arrays:
        words, unset = arrays[name]
        unknown.extend(unset)
        return shlex.join(words)
    missing.append(name)
    return ""


_IF_LINE = re.compile(r"^(if|elif)\s+(.+?)\s*(?:;\s*then)?$", re.S)


def _condition(text: str, env: dict[str, str]) -> bool | None:
    """A test the script's own variables settle: ``[ A = B ]``, ``[ A == B ]``, ``[[ A == B ]]`` and ``!=`` (bash's
    string comparisons, a pattern in ``[[ ]]`` excepted), ``[ -n A ]`` and ``[ -z A ]``; None for any other condition,
    or one that reads a variable the script does not set."""
    expanded, unknown = _expand(text, dict(env))
    if "$(" in expanded or "`" in expanded:  # a command's output: known only when the script runs
        return None
    try:
        words = shlex.split(expanded)
    except ValueError:
        return None
    if not unknown and len(words) == 4 and (words[0], words[3]) in (("[", "]"), ("[[", "]]")) \
            and words[1] in ("-n", "-z"):  # [ -n "$A" ] / [ -z "$A" ]: a value the script set, empty or not
        return (words[2] != "") == (words[1] == "-n")
    if unknown or len(words) != 5 or (words[0], words[4]) not in (("[", "]"), ("[[", "]]")):
        return None
    if words[2] not in ("=", "==", "!=") or (words[0] == "[[" and any(c in words[3] for c in "*?[")):
        return None
    return (words[1] == words[3]) != (words[2] == "!=")


@dataclass
class _Block:
    state: bool | None  # the branch being read runs (True), does not (False), or cannot be told (None: read it)
    done: bool = False  # an earlier branch of the block ran (or, after an unknown one, an elif settled true)
    unsure: bool = False  # an earlier condition could not be told: every later branch is read
    outer: bool = True  # the block itself is read (not inside a branch that does not run)
    # a case block's word, where the script's own variables settle it; an if block's condition, where they do not
    # (for the note that says its branches were guessed)
    word: str | None = None
    case: bool = False
    fall: bool | None = False  # a case arm ended ;& : the next arm's commands run as its did (True / None: maybe)


_CASE_LINE = re.compile(r"^case\s+(.+?)\s+in$", re.S)
_ARM_LINE = re.compile(r"^\(?\s*([^()]*?)\s*\)$")


def _case_word(text: str, env: dict[str, str]) -> str | None:
    """A ``case`` word's value where the script's own variables settle it (no command substitution, no variable
    the script does not set), else None."""
    expanded, unknown = _expand(text, dict(env))
    if unknown or "$(" in expanded or "`" in expanded:
        return None
    try:
        words = shlex.split(expanded)
    except ValueError:
        return None
    return words[0] if len(words) == 1 else None


def _case_variable(word: str) -> str:
    """The variable a case word reads (``${DEVICE}`` -> DEVICE), for the note that asks for it."""
    m = _VAR.search(word)
    return (m.group(1) or m.group(4)) if m else "NAME"


_ONE_LINE_CASE = re.compile(r"^(case\s+\S+\s+in)\s+(.+)$", re.S)  # case $M in a) X=1 ;; esac
_ESAC_AFTER = re.compile(r"^(.*;)\s*esac$", re.S)  # ... ;; esac: the block's end after its last arm
_ARM_ENDS = (";;&", ";;", ";&")  # bash's: the next arm's patterns are tested / the case ends / its body runs too


def _case_lines(lines: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The lines of ``case`` blocks cut where bash cuts them: an arm's patterns ``gpu | npu)`` a line of their own,
    the commands after them on the same line their own, an arm's end (``;;``, and ``;&`` / ``;;&``, which go on
    to the next arm) its own (``NGPUS=8 ;;``, ``gpu | npu) ;;``), and an ``esac`` after it its own (``*) NG=8 ;;
    esac``), a one-line ``case $M in a) X=1 ;; esac`` too; each with the physical line it came from."""
    out: list[tuple[str, int]] = []
    depth, arm_next = 0, False
    for line, at in lines:
        queue = [line]
        while queue:
            line = queue.pop(0)
            text = _strip_comment(line).strip()
            one_line = _ONE_LINE_CASE.match(text)
            if one_line and not _CASE_LINE.match(text):
                queue[:0] = [one_line.group(1), one_line.group(2)]
                continue
            if _CASE_LINE.match(text):
                depth, arm_next = depth + 1, True
                out.append((line, at))
                continue
            if depth and text == "esac":
                depth, arm_next = depth - 1, depth > 1
                out.append((line, at))
                continue
            esac = _ESAC_AFTER.match(text) if depth else None
            if esac:
                queue[:0] = [esac.group(1), "esac"]
                continue
            if depth and arm_next and not text.startswith("#") and text:
                close = _arm_end(text)
                if close is not None:
                    out.append((text[:close + 1], at))
                    text, arm_next = text[close + 1:].strip(), False
                    line = text
                    if not text:
                        continue
            stop = _arm_stop(text) if depth else None
            if stop:
                k, ends = stop
                body, rest = text[:k].strip(), text[k + len(ends):].strip()
                if body:
                    out.append((body, at))
                out.append((ends, at))
                arm_next = True
                if rest:  # the next arm on the same line (a one-line case)
                    queue.insert(0, rest)
                continue
            out.append((line, at))
    return out


def _arm_stop(text: str) -> tuple[int, str] | None:
    """(where, which) of the first arm end (``;;``, ``;&``, ``;;&``) of ``text`` outside quotes; None if none."""
    spans = _quoted_spans(text)
    for i in range(len(text)):
        if text[i] == ";" and not any(a <= i <= b for a, b, _ in spans):
            ends = next((e for e in _ARM_ENDS if text.startswith(e, i)), None)
            if ends:
                return i, ends
    return None


def _arm_end(text: str) -> int | None:
    """Where an arm's patterns end (its ``)`` outside quotes), for a line that starts a ``case`` arm; None else."""
    spans = _quoted_spans(text)
    for i, ch in enumerate(text):
        if ch == ")" and not any(a <= i <= b for a, b, _ in spans):
            head = text[:i + 1]
            return i if _ARM_LINE.match(head) and "=" not in head else None
    return None


class _Branches:
    """Which lines of ``if`` / ``elif`` / ``else`` / ``fi`` blocks run, as bash runs them where the script's own
    variables decide the condition (``_condition``); a block whose condition depends on anything else is read whole,
    every branch, as before. A one-line ``if ...; then ...; fi`` is read as written."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.unsettled: list[str] = []  # the words of case blocks read whole (their value not known)

    def _running(self) -> bool:
        return all(b.state is not False for b in self.blocks)

    def guessed(self) -> list[str]:
        """The conditions that could not be told of the if blocks around the line being read (its ``if``'s, in the
        block's ``word``): a value set there may not be the one the run gets."""
        return [b.word for b in self.blocks if not b.case and b.state is None and b.word]

    def sure(self) -> bool:
        """Whether the line being read surely runs: every block it sits in settled to this branch."""
        return all(b.state is True for b in self.blocks)

    def reads(self, line: str, env: dict[str, str]) -> bool:
        case = _CASE_LINE.match(line)
        if case:  # case WORD in: no arm read until one starts
            outer = self._running()
            word = _case_word(case.group(1), env) if outer else None
            if outer and word is None:
                self.unsettled.append(case.group(1).strip().strip("'\""))
            self.blocks.append(_Block(False, unsure=outer and word is None, outer=outer, word=word, case=True))
            return False
        if self.blocks and self.blocks[-1].case:
            block = self.blocks[-1]
            if line == "esac":
                self.blocks.pop()
                return False
            if line == ";;":
                block.state = False
                return False
            if line == ";&":  # the next arm's commands run too, its patterns untested, where this one's ran
                block.state, block.fall = False, block.state
                return False
            if line == ";;&":  # the next arms' patterns are tested still, whether this one ran or not
                block.state, block.done = False, False
                return False
            arm = _ARM_LINE.match(line)
            if arm and block.state is False and "=" not in line:  # an arm's patterns, between arms
                fall, block.fall = block.fall, False
                if not block.outer:
                    block.state = False
                elif fall is not False:  # after ;& : this arm's commands run as the last one's did
                    block.state = fall
                    block.done = block.done or fall is True
                elif block.unsure:
                    block.state = None
                elif block.done:
                    block.state = False
                else:
                    patterns = [p.strip().strip("'\"") for p in arm.group(1).split("|")]
                    block.state = any(fnmatch.fnmatchcase(block.word or "", p) for p in patterns)
                    block.done = block.state
                return False
        m = _IF_LINE.match(line)
        if m and not re.search(r"(^|[;\s])fi$", line) and "; then " not in line:
            if m.group(1) == "if":
                outer = self._running()
                state = _condition(m.group(2), env) if outer else False
                self.blocks.append(_Block(state, done=state is True, unsure=state is None, outer=outer,
                                          word=m.group(2) if outer and state is None else None))
            elif self.blocks:
                block = self.blocks[-1]
                if not block.outer or block.done:  # a branch before it runs, or may (then not any after it)
                    block.state = False
                elif block.unsure:  # an earlier condition could not be told: this branch runs unless its own is false,
                    # or an earlier one ran; one whose own is true ends the block: no later branch runs
                    own = _condition(m.group(2), env)
                    block.state = False if own is False else None
                    block.done = own is True
                else:
                    block.state = _condition(m.group(2), env)
                    block.done, block.unsure = block.state is True, block.state is None
            return False
        if line in ("else", "fi", "then") and self.blocks:  # a line of that word alone
            if line == "else":
                block = self.blocks[-1]
                block.state = False if not block.outer or block.done else None if block.unsure else True
            elif line == "fi":
                self.blocks.pop()
            return False
        return self._running()


def _logical_lines(text: str, numbered: bool = False) -> list:
    """Lines with backslash-newline continuations joined (a comment line inside a command is dropped), and a bash
    array's lines ``NAME=(`` ... ``)`` joined into one line ``NAME=( words )`` without their comments; ``numbered``:
    each as (line, the physical line it starts on, from 0)."""
    out, current, array, start, depth = [], [], None, 0, 0
    for raw, at in _join_quoted(text.replace("\r\n", "\n").split("\n"), numbered=True):
        stripped = raw.strip()
        if array is not None:
            if stripped and not stripped.startswith("#"):
                body = _strip_comment(stripped)
                close, depth = _paren_close(body, depth)
                if close is None:
                    array.append(body.strip().removesuffix("\\"))
                    continue
                if body[:close].strip():  # its last words on the closing line: a.b=2 )
                    array.append(body[:close].strip())
                out.append((" ".join(array) + " )", start))
                array = None
            continue
        opened = None if current else _ARRAY_OPEN.match(raw)
        if opened:
            close, depth = _paren_close(_strip_comment(raw)[opened.start(3):], 0)
            if close is None:  # closed on a later line (not at a ")" of an element's $( ... ) or quotes)
                array, start = [_strip_comment(raw).rstrip().removesuffix("\\")], at
                continue
        if current and stripped.startswith("#"):
            continue  # a commented-out argument in the middle of a continued command
        if not current:
            start = at
        if raw.rstrip().endswith("\\"):
            current.append(raw.rstrip()[:-1] + " ")
            continue
        out.append(("".join(current) + raw, start))
        current = []
    if current:
        out.append(("".join(current), start))
    if array is not None:  # an array never closed: its words as a line of their own (no command reads them)
        out.append((" ".join(array), start))
    return out if numbered else [line for line, _ in out]


def _paren_close(text: str, depth: int) -> tuple[int | None, int]:
    """Where in ``text`` the ``)`` that closes an array falls (None: not in it), ``depth`` parentheses of its
    elements (``$(pwd)``, ``$((1+2))``) being open where it starts; and the depth at its end. Quoted ones do not
    count."""
    spans = _quoted_spans(text)
    for i, ch in enumerate(text):
        if ch not in "()" or any(a <= i <= b for a, b, _ in spans):
            continue
        if ch == "(":
            depth += 1
        elif depth == 0:
            return i, 0
        else:
            depth -= 1
    return None, depth


_MAX_QUOTED_LINES = 64  # lines one quoted string may span (a system prompt); past it the quote is taken as stray


def _quote_after(line: str, quote: str | None) -> str | None:
    """The quote still open at the end of ``line`` (None: none) when it starts inside ``quote``: ``_quoted_spans``'s
    reading one line at a time (a single quote inside double quotes an ordinary character, a backslash inside double
    quotes escaping the next one), with ``_strip_comment``'s comments (a ``#`` that starts a word outside quotes ends
    the line)."""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if quote is not None:
            if ch == quote:
                quote = None
            elif quote == '"' and ch == "\\":
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        i += 1
    return quote


def _join_quoted(lines: list[str], numbered: bool = False) -> list:
    """The lines with a quoted string that runs over several of them joined into one line (its newlines kept inside
    the quotes), as bash reads ``PROMPT="line one\nline two"`` written over two lines; a quote still open after
    ``_MAX_QUOTED_LINES`` lines is left as it was (each line read alone, as before); ``numbered``: each as (line,
    its first physical line's index). The quote is carried from line to line (``_quote_after``): each line is read
    once for each open quote that reaches it, at most ``_MAX_QUOTED_LINES`` times."""
    out, i = [], 0
    while i < len(lines):
        quote = _quote_after(lines[i], None)
        if quote is not None:
            for j in range(i + 1, min(i + _MAX_QUOTED_LINES, len(lines))):
                quote = _quote_after(lines[j], quote)
                if quote is None:
                    out.append(("\n".join(lines[i:j + 1]), i))
                    i = j + 1
                    break
            else:
                out.append((lines[i], i))
                i += 1
            continue
        out.append((lines[i], i))
        i += 1
    return out if numbered else [line for line, _ in out]


def _quoted_spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, quote) of every quoted string of ``line``, quotes included (``end`` inclusive), as bash reads them:
    a single quote inside double quotes is an ordinary character, a backslash inside double quotes escapes the next
    one. An unclosed quote's span runs to the end of the line with ``end`` = len(line)."""
    spans, i, n = [], 0, len(line)
    while i < n:
        q = line[i]
        if q not in "'\"":
            i += 1
            continue
        j = i + 1
        while j < n and line[j] != q:
            j += 2 if q == '"' and line[j] == "\\" else 1
        spans.append((i, min(j, n), q))
        i = j + 1
    return spans


def _strip_comment(line: str) -> str:
    """``line`` without its comment: a ``#`` that starts a word outside quotes (``data#1000`` stays)."""
    spans, k = _quoted_spans(line), 0  # in order and apart: one pass over them
    for i, ch in enumerate(line):
        if ch != "#" or (i > 0 and not line[i - 1].isspace()):
            continue
        while k < len(spans) and spans[k][1] < i:
            k += 1
        if k == len(spans) or not spans[k][0] <= i:
            return line[:i]
    return line


def _expand(line: str, env: dict[str, str]) -> tuple[str, list[str]]:
    """``line`` with known variables expanded outside single quotes; the unknown names it uses."""
    unknown: list[str] = []
    produced = [len(line)]  # the characters the line grows to: a line of $A$A$A... is refused as it grows
    parts = _single_quoted_split(line)  # single-quoted pieces stay as written
    for k, part in enumerate(parts):
        if part.startswith("'"):
            continue

        def var(m: re.Match) -> str:
            text = _value(m)
            produced[0] += len(text)
            if produced[0] > safe_input.MAX_SCRIPT_LINE:
                raise safe_input.script_line_error()
            return text

        def _value(m: re.Match) -> str:
            name = m.group(1) or m.group(4)
            op, default = m.group(2), m.group(3)
            value = env.get(name)
            if op and (value is None or (op.startswith(":") and value == "")):
                default, more = _expand(default, env)  # ${A:-$B}: the default is expanded too
                unknown.extend(more)
                if op.endswith("="):
                    env[name] = default
                return default
            if value is None or _command_output(value):  # unset, or a command's output: known when it runs
                unknown.append(name)
                return m.group(0)
            return value  # one that holds a command's output among its text ($(pwd)/models/Qwen2.5-7B) as written

        part = _VAR.sub(var, part)
        part = _ARITH.sub(lambda m: _arith(m.group(1), m.group(0), env), part)
        parts[k] = part
    return "".join(parts), unknown


_WHOLE_COMMAND = re.compile(r"^\s*(?:\$\(.*\)|`[^`]*`)\s*$", re.S)


def _command_output(value: str) -> bool:
    """Whether a variable's value is the output of a command, whole (``$(nproc)``, ``$(( $(nproc) / 2 ))``,
    ```hostname```): known only when the script runs. A value with text around one (``$(pwd)/models/Qwen2.5-7B``)
    is kept as written: the model's folder names it, and a key read as a number is left out where used
    (``_drop_unknown``)."""
    return bool(_WHOLE_COMMAND.match(value))


def _protect_commands(text: str) -> str:
    """``text`` with each command substitution ``$( ... )`` outside quotes put in double quotes, so that it stays one
    word as bash keeps it (its output, whatever its spaces: ``NAME=run_$(date +%Y%m%d_%H%M)``); arithmetic ``$((``
    and one already quoted are left as they are."""
    out, i, n = [], 0, len(text)
    quoted = _quoted_spans(text)
    while i < n:
        if text.startswith("$(", i) and not text.startswith("$((", i) and not any(a < i <= b for a, b, _ in quoted):
            depth, j, quote = 0, i + 1, None
            while j < n:
                ch = text[j]
                if quote:
                    quote = None if ch == quote else quote
                elif ch in "'\"":
                    quote = ch
                elif ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j < n and '"' not in text[i:j + 1]:
                out.append('"' + text[i:j + 1] + '"')
                i = j + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _single_quoted_split(line: str) -> list[str]:
    """``line`` cut into pieces, each a single-quoted string (``'...'``, quotes included) or the text between:
    a single quote inside double quotes is an ordinary character (``"['$data']"`` expands ``$data``), as in bash.
    An unclosed single quote quotes nothing (the rest is expanded; shlex refuses the line later)."""
    parts, start = [], 0
    for a, b, q in _quoted_spans(line):
        if q == "'" and b < len(line):
            parts += [line[start:a], line[a:b + 1]]
            start = b + 1
    parts.append(line[start:])
    return [p for p in parts if p]


def _arith(expr: str, original: str, env: dict[str, str]) -> str:
    """``$((expr))`` of integers and known integer variables (bare or with ``$``), else as written."""
    expr = re.sub(r"\$?([A-Za-z_][A-Za-z0-9_]*)", lambda m: env.get(m.group(1), m.group(0)), expr)
    if len(expr) > _MAX_ARITH or not _SAFE_ARITH.match(expr) or "**" in expr:  # no powers: 9**9**9 would not finish
        return original
    try:
        value = eval(expr.replace("/", "//"), {"__builtins__": {}}, {})  # digits and + - * / % ( ) only
    except (ArithmeticError, SyntaxError, ValueError, RecursionError, MemoryError):
        return original
    if not isinstance(value, int) or abs(value) >= 2**63:  # bash's integers are 64-bit
        return original
    return str(value)


_LAUNCHERS = ("nohup", "exec", "time", "env", "stdbuf")


def _entry(tokens: list[str]):
    """(framework, launcher tokens, the framework's arguments) when ``tokens`` start a known entry point."""
    from .frameworks.entry_words import KEPT_MODULES
    from .frameworks.registry import get_framework

    frameworks = _entry_words().items()
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        base = tok.rsplit("/", 1)[-1]
        module = tok.removesuffix(".py").replace("/", ".")
        for name, words in frameworks:
            if (base, nxt) in words.commands and (not words.flags or any(
                    t.split("=", 1)[0] in words.flags for t in tokens[i + 2:])):
                fw = get_framework(name)
                # a framework that reads its launcher's words keeps the command too (TRL: `trl grpo` checks
                # GRPOConfig at world size 1 before the ranks do)
                return fw, tokens[:i], tokens[i:] if fw.launcher_flags else tokens[i + 2:]
            if any(module.endswith(m) for m in words.modules):
                fw = get_framework(name)
                # a framework that reads its launcher's words keeps the script's too: the command printed back
                # runs the user's own entry point (TRL: ``src/open_r1/grpo.py`` under accelerate launch); so does one
                # whose parse reads the module's word (entry_words.KEPT_MODULES: OpenRLHF's launcher without Ray)
                kept = fw.launcher_flags or any(module.endswith(m) for m in KEPT_MODULES if m in words.modules)
                if kept and not fw.launcher_flags:  # and the launcher's counts before it, as a command's own words
                    return fw, tokens[:i], launcher_words(tokens[:i]) + tokens[i:]
                return fw, tokens[:i], tokens[i:] if kept else tokens[i + 1:]
            if any(base == script and any(t.split("=", 1)[0] in flags for t in tokens[i + 1:])
                   for script, flags in words.scripts):
                # a bare script of the framework's (EntryWords.scripts: OpenRLHF's train_ppo.py under torchrun), its
                # word kept for the framework's parse, as its module's is, and the launcher's counts before it
                return get_framework(name), tokens[:i], launcher_words(tokens[:i]) + tokens[i:]
    return None


def _companion(tokens: list[str]):
    """(framework, the words after the command) when ``tokens`` start a command a framework runs beside its entry
    point (``Framework.companion_entries``: TRL's ``trl vllm-serve``), after launcher words such as ``nohup``."""
    from .frameworks.registry import get_framework

    for i, tok in enumerate(tokens[:4]):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        for name, words in _entry_words().items():
            if (tok.rsplit("/", 1)[-1], nxt) in words.companions:
                return get_framework(name), [t for t in tokens[i + 2:] if t != "&"]
    return None


def _data_word(key: str) -> bool:
    """Whether a key (as ``_key_word`` spells it) names the training data (``lengths.DATASET_KEYS``:
    ``data.train_files``, ``--dataset_name``): a path, from which no number is read, whose name chooses the length
    profile."""
    from .costmodel.lengths import DATASET_KEYS

    return key in {_key_word(k) for k in DATASET_KEYS}


def _drop_unknown(args: list[str], unknown: list[str], read: frozenset[str],
                  models: frozenset[str] = frozenset()) -> tuple[list[str], list[tuple]]:
    """Arguments whose value holds a ``$VAR`` the script does not set (the shell expands it when the run starts, from
    the environment it starts in): those of a key whose value a rule or the model lookup reads (``read``, as
    ``_key_word`` spells them), of no key (a word of its own) or whose whole value is unknown are left out (with
    their flag) and returned as (argument, variables, key or ""), for the caller to say; the others are kept as
    written: a path the shell completes, of a key no rule reads (``trainer.default_local_dir=$HOME/ckpt``,
    ``data.val_files=$HOME/data/test.parquet``), and the training data's, whose name chooses the length profile
    the step time is priced with. A value that holds a command's output (``$( ... )``) of a key a rule reads
    other than the model's (``models``: its folder's name names the model) is left out too, said with no variable.
    """
    out: list[str] = []
    dropped: list[tuple] = []
    for tok in args:
        names = list(dict.fromkeys(n for n in unknown if "$" + n in tok or "${" + n in tok))
        flag = out[-1] if out and out[-1].startswith("--") and "=" not in out[-1] and not tok.startswith("-") else None
        key = _key_word(tok.partition("=")[0] if "=" in tok and not tok.startswith("-") else (flag or ""))
        path = "/" in (tok.partition("=")[2] if flag is None else tok)  # a folder the shell fills in
        run = bool(re.search(r"\$\((?!\()", tok.partition("=")[2] if flag is None else tok)) \
            and key in read and key not in models  # a command, not $((arithmetic)) left for the parser
        if (run or names and (not key or key in read or "$" in key or not path)) and not _data_word(key):
            if flag is not None:
                out.pop()
                dropped.append((f"{flag} {tok}", names, flag))
            else:
                dropped.append((tok, names, tok.partition("=")[0] if key else ""))
            continue
        out.append(tok)
    return out, dropped


def unset_variable_note(arg: str, names: list[str], key: str, computed: set[str] | frozenset[str] = frozenset(),
                        model: bool = False) -> str:
    """What reading an argument that holds variables the script does not set did, in words (``key``: the key it
    sets, "" for a word of its own); ``computed``: variables the script sets from a command's output (``$(date ...)``),
    known only when it runs; no ``names``: the value holds a command's output itself; ``model``: ``key`` names the
    trained model, which has no default to check with."""
    used, it = ", ".join("$" + n for n in names), "it" if len(names) == 1 else "them"
    run = names and all(n in computed for n in names)
    if not names:
        return (f"{arg}: its value holds a command's output ($(...)), known only when it runs, so it cannot be read "
                f"here: checked with the framework's default for {key} instead (pass {key} after the script's path)")
    if run:
        said = f"{arg}: the script sets {used} from a command's output ($(...)), known only when it runs, so "
    else:
        said = (f"{arg}: the shell expands {used} when the run starts, from the environment it starts in; the script "
                f"does not set {it}, so ")
    if key:
        where = "give " + ", ".join(f"{n}=..." for n in names) if run else f"set {', '.join(names)} in the script"
        if model:  # no default model: memory is what goes unchecked
            return (said + "the model cannot be read here: memory is not checked (give "
                    + ", ".join(f"{n}=..." for n in names) + " after the script's path, or pass --model)")
        return (said + f"the value cannot be read here: checked with the framework's default for {key} instead "
                f"({where}, or pass {key} after the script's path)")
    return said + "the words it adds cannot be read here: checked without them"


def _key_word(key: str) -> str:
    """A key as ``_drop_unknown`` compares them: no leading ``+`` or ``--``, dashes as underscores."""
    return key.lstrip("+-").replace("-", "_")


def _read_keys(fw) -> frozenset[str]:
    """The keys of ``fw`` whose values a rule or the model lookup reads (a variable's key, an older release's name of
    one, the model's), as ``_key_word`` spells them."""
    keys = [spec.key for spec in fw.ruleset.variables.values()] + list(fw.model_keys) + list(fw.legacy_flags)
    return frozenset(_key_word(k) for k in keys)


_PER_NODE_FLAGS = ("--nproc_per_node", "--nproc-per-node", "--num_gpus", "--num-gpus")
_NODES_FLAGS = ("--nnodes", "--num_nodes", "--num-nodes")


@dataclass(frozen=True)
class Launched:
    """The ranks a launcher starts (``launcher_gpus``): ``per_node`` on each of ``nodes`` nodes (None: its words
    name a node count this reading could not read, ``--nnodes $NNODES`` with NNODES unset or an elastic
    ``--nnodes 1:4``; one node is counted), and where that was read."""
    per_node: int | None = None
    nodes: int | None = 1
    source: str = ""

    @property
    def gpus(self) -> int | None:
        return None if self.per_node is None else self.per_node * (self.nodes or 1)


def launcher_gpus(launcher: list[str], scope: Mapping[str, str]) -> Launched:
    """GPUs the launcher starts (and where that was read): torchrun's --nproc_per_node / --nnodes, deepspeed's
    --num_gpus / --num_nodes (torchrun run.py and deepspeed launcher/runner.py: one rank per GPU of each node), else
    CUDA_VISIBLE_DEVICES (one machine)."""
    per_node, nodes = None, 1
    for i, tok in enumerate(launcher):
        key, eq, value = tok.partition("=")
        if not eq and i + 1 < len(launcher):
            value = launcher[i + 1]
        if key in _PER_NODE_FLAGS and value.isdigit():
            per_node = int(value)
        elif key in _NODES_FLAGS:
            nodes = int(value) if value.isdigit() else None
    if per_node is not None:
        counted = f"{nodes} node(s)" if nodes else "1 node counted: its node count was not read"
        return Launched(per_node, nodes, f"the launcher ({per_node} per node x {counted})")
    devices = scope.get("CUDA_VISIBLE_DEVICES")
    if devices:
        return Launched(len([d for d in devices.split(",") if d.strip()]), 1, f"CUDA_VISIBLE_DEVICES={devices}")
    return Launched()


def launcher_words(launcher: list[str]) -> list[str]:
    """The words of ``launcher`` that ``launcher_gpus`` reads its counts from (as ``--flag=value``), for a framework
    whose parse reads its launcher's words before its module (OpenRLHF's launcher without Ray)."""
    out = []
    for i, tok in enumerate(launcher):
        key, eq, value = tok.partition("=")
        if not eq and i + 1 < len(launcher):
            value = launcher[i + 1]
        if key in _PER_NODE_FLAGS + _NODES_FLAGS and value.isdigit():
            out.append(f"{key}={value}")
    return out


def gpus_note(given: int, started: int, split: Launched | None, where: str, script: bool = False) -> str | None:
    """The one note for ``--gpus`` beside the GPUs a launch script's or a command line's launcher starts (a script,
    a pasted command, a command given as a list of words): the job starts the ranks its launcher says, whatever
    --gpus says. None where they agree; where the launcher's words name a node count not read (``split.nodes``
    None), any whole number of nodes of its per-node ranks agrees."""
    change = "the script" if script else "the command"
    said = f" ({split.source})" if split is not None and split.source else ""
    if split is not None and split.per_node and split.nodes is None:
        if given % split.per_node == 0:
            return None
        return (f"--gpus {given} is not a whole number of nodes of the {split.per_node} GPU(s) per node {where} "
                f"starts{said}: checked with --gpus {given}; pass a multiple of {split.per_node}, or change {change}, "
                "if that is what runs")
    if given == started:
        return None
    return (f"--gpus {given} is not the {started} GPU(s) {where} starts{said}: checked with --gpus {given}; pass "
            f"--gpus {started}, or change {change}, if that is what runs")

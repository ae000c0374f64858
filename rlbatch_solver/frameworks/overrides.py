"""Parse what users paste: Hydra overrides, ``--flag value`` lists, YAML files.

Everything returns a flat ``{dotted.key: value}`` dict with values typed the
way Hydra/argparse users write them (ints, floats, booleans, null, strings).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from .. import safe_input
from ..errors import MAX_SIZE, InputError, check_size, did_you_mean, shown

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def exported_pair(arg: str) -> tuple[str, str | None]:
    """One argument as the frameworks' exports write it -> (key, value text): ``key=value`` (Hydra overrides, an
    environment prefix such as ``NPROC_PER_NODE=8``), ``--flag value`` or ``--flag=value`` (the flag's name without
    its dashes); the value is None for a bare ``--flag``."""
    if arg.startswith("--"):
        key, _, value = arg[2:].partition(" ")
        key, eq, inline = key.partition("=")
        return key, inline if eq else (value or None)
    key, _, value = arg.partition("=")
    return key, value


def parse_scalar(text: str) -> Any:
    """'64' -> 64, '0.35' -> 0.35, 'True'/'false' -> bool, 'null' -> None, else the string."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    if _INT.match(t):
        try:
            return int(t)
        except ValueError:  # beyond Python's 4,300 digits: left as text, refused by the key's check
            return t
    if _FLOAT.match(t):
        return float(t)
    return t


_ARG_START = re.compile(r"^(--?[A-Za-z]|\+{0,2}~?[A-Za-z_][\w.\-]*=)")


def split_tokens(tokens: Iterable[str]) -> list[str]:
    """Split pasted shell text (backslash-newlines, several overrides per arg) at whitespace outside brackets and
    quotes: ``data.val_files=['a', 'b']``, one argument to the shell and to Hydra, stays one. A token the shell
    already made one argument (``--system "You are a helpful assistant."``) stays one too: it is split only when
    it holds a line break or a second argument (``key=value``, ``--flag``)."""
    out: list[str] = []
    for tok in tokens:
        text = tok.replace("\\\n", " ")
        pieces = [p for p in _top_level_words(text) if p != "\\"]
        if len(pieces) > 1 and "\n" not in text and not any(_ARG_START.match(p) for p in pieces[1:]):
            text = text.strip()
            if _ARG_START.match(pieces[0]) and pieces[0].startswith("-"):  # "--flag value", as we print a pair
                pieces = [pieces[0], text[len(pieces[0]):].strip()]
            else:
                pieces = [text]  # one argument's value with spaces in it
        out.extend(pieces)
    return out


def assignment_words(arg: str) -> list[str]:
    """The overrides one change writes (``Framework.assignment``), one word each: a switch spelled by several keys
    (verl Megatron's full recompute: recompute_granularity, recompute_method and recompute_num_layers) is three
    arguments, never one quoted word; an argument whose value holds spaces (``data.val_files=['a', 'b']``), a
    ``--flag value`` pair or a change said in words stays one."""
    if arg.startswith(("-", "(")):
        return [arg]
    pieces = split_tokens([arg])
    if len(pieces) > 1 and all(_ARG_START.match(p) and not p.startswith("-") for p in pieces):
        return pieces
    return [arg]


def _top_level_words(text: str) -> list[str]:
    """``text`` split at whitespace that is outside ``[]``/``{}``/``()`` and outside quotes."""
    words, current, depth, quote = [], [], 0, None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth = max(0, depth - 1)
        elif ch.isspace() and depth == 0:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        words.append("".join(current))
    if quote or depth:  # an unbalanced quote or bracket (data.path=it's): plain whitespace, as before
        words = re.split(r"\s+", text)
    return [w.strip() for w in words if w.strip()]


_KEY = re.compile(r"^[A-Za-z_][\w.\-]*$")
# an override of a defaults-list entry, which picks a config group's option: the group (a path of folders: actor,
# actor_rollout_ref/actor) and the package it is placed at after an @ (actor@actor_rollout_ref.actor=megatron_actor):
# Hydra's override grammar (hydra/grammar/OverrideParser.g4: key: packageOrGroup (AT package)?; packageOrGroup:
# package | ID (SLASH ID)+), matched against the entry by hydra/core/default_element.py GroupDefault.get_override_key
_GROUP_KEY = re.compile(r"^[A-Za-z_][\w\-]*(?:/[\w\-]+)*(?:@[A-Za-z_][\w.\-]*)?$")


def group_override(key: object) -> bool:
    """Whether an override's key picks a config group's option (``group@package``, ``a/b``) rather than a value."""
    text = str(key)
    return ("@" in text or "/" in text) and bool(_GROUP_KEY.match(text))


def parse_hydra_overrides(tokens: Iterable[str], groups: bool = False) -> tuple[dict[str, Any], list[str]]:
    """``key=value`` overrides (with optional ``+``/``++`` prefix) -> (dict, ignored tokens).

    Tokens without ``=`` (``python3``, ``-m``, ``verl.trainer.main_ppo``) are
    returned as ignored; a malformed override raises ``InputError``. ``groups``: a config group override
    (``group@package=option``, ``group/sub=option``) is taken too, for a trainer config composed from a defaults
    list (verl's); EasyR1 (OmegaConf.from_cli merged into its dataclasses) and SkyRL have none to pick.
    """
    values: dict[str, Any] = {}
    ignored: list[str] = []
    for tok in split_tokens(tokens):
        if "=" not in tok or tok.startswith("-"):
            ignored.append(tok)
            continue
        key, _, raw = tok.partition("=")
        prefix = key[:len(key) - len(key.lstrip("+"))]
        key = key.lstrip("+").strip()
        if key.startswith("~"):
            ignored.append(tok)
            continue
        if not key or not (_KEY.match(key) or (groups and _GROUP_KEY.match(key))):
            raise InputError(
                "override",
                f"'{tok}' is not a Hydra override of the form key=value.",
                "write overrides like data.train_batch_size=64, separated by spaces.",
            )
        values[AddedKey(key, prefix) if prefix else key] = parse_scalar(raw)
    return values, ignored


class AddedKey(str):
    """A key written ``+key`` / ``++key``: it adds a key the struct config may lack, so Hydra never refuses it
    (equal to the plain key everywhere else). ``prefix`` is the user's ("+" or "++"): a printed override keeps it
    (``written_key``), as Hydra reads the two differently ("+" refuses a key the config has, "++" sets it either way:
    hydra/core/override_parser/types.py OverrideType ADD / FORCE_ADD)."""

    prefix: str

    def __new__(cls, key: str, prefix: str = "+") -> AddedKey:
        made = super().__new__(cls, key)
        made.prefix = prefix
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return AddedKey, (str(self), self.prefix)


def written_key(key: object) -> str:
    """A config's key as its override is written: an ``AddedKey`` with the user's "+" / "++"."""
    return f"{key.prefix}{key}" if isinstance(key, AddedKey) else str(key)


yaml.SafeDumper.add_representer(AddedKey, lambda dumper, key: dumper.represent_str(str(key)))  # written as plain keys


# where the command's arguments end: a redirection or a pipe/list operator (``2>&1 | tee train.log``, ``> log``, ``&``)
_SHELL_OPERATOR = re.compile(r"^(\d*(>>?|<|>&|<&)\S*|&>>?\S*|\|\|?|&&?|;;?)$")


class ListFlag(str):
    """An exported ``--flag a b``: a flag of several values (argparse nargs='+'), its text as one string, with the
    flag and its items kept apart so that the shell gets one word per item (``--reward_funcs accuracy format``, never
    ``--reward_funcs "accuracy format"``, which the framework would read as one reward function's name)."""

    flag: str
    items: tuple[str, ...]

    def __new__(cls, flag: str, items: Iterable[Any]) -> ListFlag:
        words = tuple(str(item) for item in items)
        obj = super().__new__(cls, " ".join([flag, *words]))
        obj.flag, obj.items = flag, words
        return obj

    def __getnewargs__(self) -> tuple[str, tuple[str, ...]]:
        """What pickle and copy rebuild it from (the web page's worker processes send answers back pickled)."""
        return self.flag, self.items


def parse_flag_args(tokens: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """``--flag value`` / ``--flag=value`` / bare ``--switch`` -> (dict, ignored tokens)."""
    toks = split_tokens(tokens)
    values: dict[str, Any] = {}
    ignored: list[str] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        if not tok.startswith("--"):
            ignored.append(tok)
            i += 1
            continue
        name, eq, raw = tok[2:].partition("=")
        if not name:
            raise InputError("argument", f"'{tok}' has no flag name.", "write flags like --train.batch_size 64.")
        if eq:
            values[name] = parse_scalar(raw)
            i += 1
        elif i + 1 < len(toks) and not toks[i + 1].startswith("--"):
            # a value may be a list, an argparse nargs='+' flag (ms-swift's ``--reward_funcs accuracy format``,
            # swift/arguments/rlhf_args.py ``reward_funcs: List[str]``; TRL's ``--lora_target_modules q_proj v_proj``,
            # HfArgumentParser gives a List field nargs='+'): every item is kept, in order
            items = [parse_scalar(toks[i + 1])]
            i += 2
            while (i < len(toks) and not toks[i].startswith("--") and "=" not in toks[i]
                   and not _SHELL_OPERATOR.match(toks[i])):
                items.append(parse_scalar(toks[i]))
                i += 1
            values[name] = items if len(items) > 1 else items[0]
        else:
            values[name] = True
            i += 1
    return values, ignored


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}" if prefix else k  # an already flat key kept as it is (an AddedKey stays one)
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def is_file(path: Any) -> bool:
    """A file that exists here (a name no file system takes, too long or with a NUL byte, is not one)."""
    try:
        return Path(str(path)).is_file()
    except (OSError, ValueError):
        return False


def load_yaml_file(path: str | Path, field: str = "config", what: str = "a YAML config file (key: value lines)") -> Any:
    """A YAML file's content; ``field`` is what the one-paragraph error names when it cannot be read, ``what`` the
    file its fix asks for (the file's limits: ``safe_input``)."""
    return safe_input.load_yaml_file(path, field, what)


def load_config_file(path: str | Path, field: str = "config") -> dict[str, Any]:
    """A YAML config (nested like the framework's own, or flat dotted keys) -> flat dict; ``field``: the option
    that named the file, in the one-paragraph error when it is not one (``--config``, ``--from``)."""
    data = load_yaml_file(path, field)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        kind = ("a list" if isinstance(data, list) else "plain text (one YAML string)" if isinstance(data, str)
                else f"a single value ({type(data).__name__})")
        raise InputError(field, f"'{shown(str(path), 60)}' is not a YAML config: it reads as {kind}, not as "
                         "key: value pairs of config keys.",
                         "pass a YAML file of the framework's keys (data.train_batch_size: 256, or nested as the "
                         "framework's own yaml)" + ("; a launch script or arguments go without --config (rlbatch "
                                                    "check run.sh, or after --)." if field == "--config" else "."))
    return flatten(data)


# ----------------------------------------------------------------------------- typed values
def resolve_algorithm(name: str, aliases: Mapping[str, str], algorithms: Iterable[str], framework: str = "") -> str:
    """The algorithm name ``--algo`` gives, lower case with ``aliases`` resolved; an ``InputError``
    listing ``algorithms`` when it is none of them (``framework`` names whose list it is)."""
    algorithms = list(algorithms)
    key = name.strip().lower()
    key = aliases.get(key, key)
    if key not in algorithms:
        where = f" for {framework}" if framework else ""
        raise InputError(
            "algo", f"unknown algorithm '{name}'{where}.{did_you_mean(name, algorithms)}",
            f"use one of: {', '.join(algorithms)}.",
        )
    return key


def memory_share_permille(key: str, value: Any, fix: str) -> int:
    """A memory share in (0, 1] (``gpu_memory_utilization``) as an integer per mille."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise InputError(key, f"'{value}' is not a fraction in (0, 1].", fix)
    return int(round(value * 1000))


def whole_number(key: str, value: Any, spelled: str) -> int:
    """``value`` as an int (a whole float such as 4.0 too); else an ``InputError`` asking to write
    ``spelled`` (the key as the user writes it: ``--key`` or ``key``) as a whole number."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():  # too many digits to be read
            raise InputError(key, f"{shown(value)} is out of range (at most {MAX_SIZE:,}).",
                             f"write {spelled} as a whole number of at most {MAX_SIZE:,}.")
        elif value is True and spelled.startswith("--"):  # a bare --flag: the parser reads it as a switch
            raise InputError(key, "is given without a value.", f"write {spelled} N, with N a whole number.")
        else:
            hint = " (a shell variable that was not expanded?)" if isinstance(value, str) and "$" in value else ""
            raise InputError(key, f"'{shown(value)}' is not an integer{hint}.", f"write {spelled} as a whole number.")
    check_size(key, value, f"write {spelled} as a whole number of at most {MAX_SIZE:,}.")
    return value


# ----------------------------------------------------------------------------- flag values (argparse-style frameworks)
# The words a boolean flag takes (ms-swift's and TRL's parsers accept these spellings: transformers' HfArgumentParser
# string_to_bool, "yes/true/t/y/1" and "no/false/f/n/0")
TRUE_WORDS = frozenset({"true", "yes", "y", "t", "1"})
FALSE_WORDS = frozenset({"false", "no", "n", "f", "0"})


def flag_bool(key: str, value: Any) -> bool:
    """A boolean flag's value (``True``, or one of the words); else an ``InputError`` naming ``--key``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise InputError(key, f"'{value}' is not a boolean.", f"write --{key} true or --{key} false.")


def flag_int(key: str, value: Any) -> int:
    """A positive whole-number flag (``whole_number``, and at least 1)."""
    value = whole_number(key, value, f"--{key}")
    if value < 1:
        raise InputError(key, f"{value} must be at least 1.", f"set --{key} to a positive number.")
    return value


def flag_float(key: str, value: Any) -> float:
    """A number flag (an int or a float, not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(key, f"'{value}' is not a number.", f"write --{key} as a number, e.g. 0.04.")
    return float(value)


def hydra_bool(key: str, value: Any) -> bool:
    """A Hydra override's boolean (YAML's true/false, as ``parse_scalar`` reads them); else an ``InputError``."""
    if isinstance(value, bool):
        return value
    raise InputError(key, f"'{value}' is not a boolean.", f"write {key}=True or {key}=False.")

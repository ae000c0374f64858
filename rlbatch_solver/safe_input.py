"""Reading what the user hands us, with limits: every file, YAML and JSON text and launch script the commands read.

A file given on the command line may be anything: a device that never ends (``/dev/zero``), a pipe that never
writes, a directory, a binary, a YAML file that nests ten thousand lists or multiplies one anchor a billion times,
a script whose variables double at every line. Each of them is refused here, before it costs time or memory,
with the one-paragraph ``InputError`` (exit code 2) naming the option and saying what to pass instead:

- ``read_text``: only a regular file (checked with ``os.stat`` before it is opened, and again on the open file,
  which is opened without blocking), at most ``limit`` bytes (checked from its size and by reading at most
  ``limit`` + 1 bytes), UTF-8 without NUL bytes (``lenient``, for logs: stray bytes replaced, NUL bytes dropped);
- ``output_file``: a file to write is new or a regular file (a pipe would block the write);
- ``load_yaml``: at most ``MAX_YAML_CHARS``, nesting at most ``MAX_DEPTH`` levels, at most ``MAX_ALIASES``
  aliases, no alias of a node that holds itself, and at most ``MAX_YAML_VALUES`` values with every alias
  counted as the values it repeats (in keys too);
- ``load_json``: nesting at most ``MAX_DEPTH`` levels (its text comes from ``read_text``, within a size limit);
- ``check_script_line`` and ``ExpansionBudget``: a launch script's lines at most ``MAX_SCRIPT_LINE`` characters
  before and after its variables are expanded, and at most ``MAX_SCRIPT_EXPANDED`` characters in all.

docs/inputs.md lists the limits and why each is where it is.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError, shown

KiB = 1024
MiB = 1024 * KiB

# Config-like files (YAML configs, scenarios, sweep grids, model cards, HF config.json, GPU files, calibration
# profiles): the largest in use are tens of KiB; 1 MiB leaves room and parses in well under a second.
MAX_CONFIG_BYTES = 1 * MiB
# Launch scripts: a few KiB in practice.
MAX_SCRIPT_BYTES = 1 * MiB
# Run logs (calibrate) and sweep results files: a long run's step lines or a sweep of many thousand points.
MAX_LOG_BYTES = 32 * MiB
MAX_LOG_LINE = 64 * KiB  # one line of a log or results file: longer lines are skipped (a step line is a few KiB)
MAX_YAML_CHARS = MAX_CONFIG_BYTES
MAX_DEPTH = 64  # levels of nesting: framework configs nest fewer than 10
MAX_ALIASES = 100  # YAML aliases (*name) in one document: configs use a handful
MAX_YAML_VALUES = 100_000  # values in one document, every alias counted as all the values it repeats
MAX_SCRIPT_LINE = 64 * KiB  # one logical line of a launch script (continuations joined), before and after expansion
MAX_SCRIPT_EXPANDED = 1 * MiB  # all of a script's lines after expansion


def _where(path: Any) -> str:
    return shown(path, 60)


def exists(path: str | Path) -> bool:
    """Whether anything is at ``path`` (a name no file system takes, too long or with a NUL byte: nothing is)."""
    try:
        return Path(str(path)).expanduser().exists()
    except (OSError, ValueError):
        return False


def regular_file(path: str | Path, field: str, what: str) -> Path:
    """``path`` when it names a regular file here; else an ``InputError`` naming ``field`` (``what`` says which file
    to pass instead). Nothing is opened: a FIFO or a device is refused before any read could block or never end."""
    p = Path(str(path)).expanduser()
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(field, f"file {_where(path)!r} does not exist.", f"check the path; pass {what}.") from None
    except (OSError, ValueError) as err:  # a name too long, a NUL byte, no permission on a folder
        reason = getattr(err, "strerror", None) or "not a path"
        raise InputError(field, f"cannot read {_where(path)!r}: {reason}.", f"check the path; pass {what}.") from None
    _refuse_unless_regular(st, path, field, what)
    return p


def output_file(path: str | Path, field: str, what: str) -> Path:
    """``path`` as a file to write: new, or a regular file that is there (a pipe would block the write, a device
    swallow it); else an ``InputError`` naming ``field`` (a name too long or with a NUL byte too)."""
    p = Path(str(path)).expanduser()
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return p
    except (OSError, ValueError) as err:
        reason = getattr(err, "strerror", None) or "not a path"
        raise InputError(field, f"cannot write {_where(path)!r}: {reason}.", f"pass {what}.") from None
    _refuse_unless_regular(st, path, field, what)
    return p


def _refuse_unless_regular(st: os.stat_result, path: Any, field: str, what: str) -> None:
    """An ``InputError`` naming ``field`` unless ``st`` is a regular file's (a folder, a device, a pipe, a socket)."""
    if stat.S_ISDIR(st.st_mode):
        raise InputError(field, f"{_where(path)!r} is a directory, not a file.", f"pass {what}.")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(field, f"{_where(path)!r} is not a regular file (a device, a pipe or a socket).",
                         f"pass {what}.")


def _too_large(field: str, path: Any, limit: int, what: str) -> InputError:
    return InputError(field, f"{_where(path)!r} is larger than {limit:,} bytes, the most this option reads.",
                      f"pass {what}; cut the file to what it needs to hold.")


def read_bytes(path: str | Path, field: str, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (see ``read_text``)."""
    p = regular_file(path, field, what)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise InputError(field, f"cannot read {_where(path)!r}: {err.strerror}.", "check the file and its "
                         "permissions.") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())  # the file opened is the file checked (not swapped for a pipe since)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(field, f"{_where(path)!r} is not a regular file (a device, a pipe or a socket).",
                             f"pass {what}.")
        if st.st_size > limit:
            raise _too_large(field, path, limit, what)
        try:
            data = f.read(limit + 1)
        except OSError as err:
            raise InputError(field, f"cannot read {_where(path)!r}: {err.strerror}.", "check the file.") from None
    if len(data) > limit:  # a file that grew, or a size the file system does not report
        raise _too_large(field, path, limit, what)
    return data


def read_text(path: str | Path, field: str, limit: int = MAX_CONFIG_BYTES, what: str = "a YAML file",
              lenient: bool = False) -> str:
    """The text of the regular file ``path``: at most ``limit`` bytes of UTF-8 without NUL bytes, else an
    ``InputError`` naming ``field``. ``lenient`` (logs, results files): bytes that are not UTF-8 read as U+FFFD and
    NUL bytes are dropped (a log with a stray byte, or padded by a crash, is still a log)."""
    data = read_bytes(path, field, limit, what)
    if lenient:
        data = data.replace(b"\x00", b"")  # a log cut by a crash is often padded with NUL bytes
    elif b"\x00" in data:
        raise InputError(field, f"{_where(path)!r} is not a text file (it holds NUL bytes).", f"pass {what}.")
    try:
        return data.decode("utf-8", errors="replace" if lenient else "strict")
    except UnicodeDecodeError:
        raise InputError(field, f"{_where(path)!r} is not a text file (not UTF-8).", f"pass {what}.") from None


# ----------------------------------------------------------------------------- YAML
class _LimitExceeded(Exception):
    """Raised inside the loader; ``load_yaml`` turns it into the ``InputError`` naming the field."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


class _GuardedLoader(yaml.SafeLoader):
    """PyYAML's safe loader counting, while it composes the node tree: the nesting depth, the aliases, and the
    values with every alias counted as the values of the node it repeats (so ten aliases of ten aliases of ... is
    refused long before it is a billion values). An alias of a node still being composed (a node that holds itself)
    is refused: nothing downstream could walk it."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.aliases = 0
        self.values = 0
        self.weights: dict[int, int] = {}  # id(node) -> the values it holds, aliases expanded

    def _add_values(self, count: int) -> None:
        self.values += count
        if self.values > MAX_YAML_VALUES:
            raise _LimitExceeded(f"it holds more than {MAX_YAML_VALUES:,} values (aliases counted as what they "
                                 "repeat).", "write the values out; a config holds a few hundred.")

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            anchor = self.peek_event().anchor
            node = self.anchors.get(anchor)
            if node is not None:
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise _LimitExceeded(f"it uses more than {MAX_ALIASES} aliases (*name).",
                                         "write the values out instead of repeating anchors.")
                weight = self.weights.get(id(node))
                if weight is None:
                    raise _LimitExceeded(f"the alias *{anchor} repeats a node that holds it (a loop).",
                                         "write the values out instead of repeating anchors.")
                self._add_values(weight)
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _LimitExceeded(f"it nests deeper than {MAX_DEPTH} levels.",
                                 "flatten it: a config nests fewer than ten levels.")
        before = self.values
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        self._add_values(1)
        self.weights[id(node)] = self.values - before
        return node


def _yaml_problem(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return " ".join(str(err).split())


def load_yaml(text: str, field: str, where: str = "the value", *, strict: bool = True) -> Any:
    """``text`` parsed as one YAML document within the limits above; ``where`` says what held it (a file's path)
    in the one-paragraph error that names ``field``. ``strict=False``: a text that is no YAML document gives None
    (a paste that may be something else); the limits refuse it all the same."""
    if len(text) > MAX_YAML_CHARS:
        raise InputError(field, f"{_where(where)} is longer than {MAX_YAML_CHARS:,} characters.",
                         "cut it to what it needs to hold.")
    loader = _GuardedLoader(text)
    try:
        return loader.get_single_data()
    except _LimitExceeded as err:
        raise InputError(field, f"{_where(where)} is refused: {err.problem}", err.fix) from None
    except yaml.YAMLError as err:
        if not strict:
            return None
        raise InputError(field, f"{_where(where)} is not valid YAML ({shown(_yaml_problem(err), 200)}).",
                         "fix the YAML syntax (indentation, colons, quotes).") from None
    except (ValueError, OverflowError, TypeError) as err:  # an integer of more than 4,300 digits, a bad date
        if not strict:
            return None
        raise InputError(field, f"{_where(where)} could not be read: {shown(err, 80)}.",
                         "write every value as a plain number or word.") from None
    except RecursionError:  # the depth limit stops this first; kept so no nesting ends in a traceback
        raise InputError(field, f"{_where(where)} nests too deeply.", "flatten it.") from None
    finally:
        loader.dispose()


def load_package_yaml(text: str) -> Any:
    """A YAML file this package ships (the catalog's model cards and GPUs, the cost model's fitted tables): parsed by
    libyaml where PyYAML was built with it (the values ``yaml.SafeLoader`` gives, several times faster: every command
    reads about thirty of them), never a user's text (``load_yaml`` guards those)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_yaml_file(path: str | Path, field: str, what: str = "a YAML file") -> Any:
    """The YAML document of the file ``path`` (``read_text`` then ``load_yaml``)."""
    return load_yaml(read_text(path, field, MAX_CONFIG_BYTES, what), field, where=f"'{_where(path)}'")


def refuse_named_files(text: str, field: str, reader: str, fix: str, base: Path) -> None:
    """A server that is given texts opens no file of its own: a word of ``text`` (or a value after '=', or in
    quotes) that names a file here is refused before any reader opens it (an accelerate --config_file, a DeepSpeed
    config, a local dataset). A relative word is read from ``base``, the request's own folder the call runs in, so
    '../../etc/x' is caught as '/etc/x' is. ``reader`` says who reads only what is pasted."""
    for part in re.split(r"[\s'\"=,;]+", text):
        try:
            named = bool(part) and (base / Path(part).expanduser()).is_file()
        except (OSError, ValueError, RuntimeError):  # a name no file system takes; '~user' of no user
            named = False
        if named:
            raise InputError(field, f"'{shown(part, 60)}' names a file on the server; {reader} reads only what is "
                             "pasted.", fix)


# ----------------------------------------------------------------------------- JSON
def _depth(value: Any) -> int:
    """The nesting depth of parsed JSON, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, dict):
            stack += [(v, level + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, level + 1) for v in node]
    return deepest


def load_json(text: str, field: str, where: str = "the value") -> Any:
    """``text`` parsed as JSON, nesting at most ``MAX_DEPTH`` levels; else an ``InputError`` naming ``field``."""
    try:
        value = json.loads(text)
    except RecursionError:
        value = None
        deep = True
    except ValueError as err:  # not JSON, or an integer of more than 4,300 digits
        raise InputError(field, f"{_where(where)} is not valid JSON: {shown(err, 120)}.",
                         "fix the JSON syntax.") from None
    else:
        deep = _depth(value) > MAX_DEPTH
    if deep:
        raise InputError(field, f"{_where(where)} is refused: it nests deeper than {MAX_DEPTH} levels.",
                         "flatten it: a config nests fewer than ten levels.")
    return value


def parse_json_line(line: str) -> Any:
    """One line of a JSON-lines file, or None when it is not JSON within the limits (a torn or foreign line)."""
    try:
        return load_json(line, "line")
    except InputError:
        return None


# ----------------------------------------------------------------------------- launch scripts
def script_line_error(field: str = "script") -> InputError:
    """The error for a launch script's line beyond ``MAX_SCRIPT_LINE`` characters, as written or expanded."""
    return InputError(field, f"a line of the script is longer than {MAX_SCRIPT_LINE:,} characters (as written or "
                      "with its variables expanded).",
                      "pass the script you launch with; a variable that grows at every line is not one.")


def check_script_line(line: str, field: str = "script") -> None:
    """An ``InputError`` when one logical line of a launch script (as written or expanded) is beyond the limit."""
    if len(line) > MAX_SCRIPT_LINE:
        raise script_line_error(field)


class ExpansionBudget:
    """The characters a launch script's variable expansion may produce in all (``MAX_SCRIPT_EXPANDED``)."""

    def __init__(self, field: str = "script", limit: int = MAX_SCRIPT_EXPANDED) -> None:
        self.field, self.left, self.limit = field, limit, limit

    def spend(self, text: str) -> str:
        check_script_line(text, self.field)
        self.left -= len(text)
        if self.left < 0:
            raise InputError(self.field, f"the script's lines come to more than {self.limit:,} characters with its "
                             "variables expanded.",
                             "pass the script you launch with; variables that grow at every line are not one.")
        return text

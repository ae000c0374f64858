"""A launch script written back with a repair: only the changed keys change.

``fix run.sh --write fixed.sh`` (and ``recommend --from run.sh --write``) keep every line the user wrote (data
paths, ``rollout.name``, the keys we do not model, comments, variables) and change only what the answer changes:

- a key the script writes gets its new value where it is written (``data.train_batch_size=341`` ->
  ``...=352``; ``--per_device_train_batch_size 4`` -> ``... 2``); a value that was a shell variable (``$BS``) is
  replaced by the number, and the note says so;
- a key it does not write is added right after the entry point of the last command that starts a run (the command
  ``launch_script.parse_launch_script`` reads), so it reaches the framework whatever the line continuations are;
  a launcher's own flag (TRL: accelerate's ``--use_deepspeed``) goes after the launcher's words instead.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .frameworks.overrides import exported_pair
from .launch_script import ASSIGNMENT

# a value as the shell writes it: quoted, or up to the next blank or line continuation
_VALUE = r"""(?:'[^']*'|"[^"]*"|[^\s\\'"]+)+"""


@dataclass
class Rewrite:
    text: str
    replaced: list[str] = field(default_factory=list)  # keys whose value changed where the script wrote it
    added: list[str] = field(default_factory=list)  # keys the script did not write, added after the entry point
    dropped: list[str] = field(default_factory=list)  # keys taken out (the answer leaves them at the default)
    notes: list[str] = field(default_factory=list)


def _pattern(key: str, flag: bool, bare: bool = False) -> re.Pattern:
    """``key`` written with its value: ``key=value`` (a Hydra override, an environment prefix), or a ``flag``,
    whose value is the next word unless it starts another flag or names a script (``train_grpo.py``); a ``bare``
    flag (one that takes no value, ``--use_deepspeed``) takes none."""
    if not flag:
        return re.compile(r"(?<![\w.\-+])(\+{0,2}" + re.escape(key) + r"=)(" + _VALUE + r")")
    flag = r"(?<!\S)(--" + re.escape(key) + r")(?=[=\s]|$)"
    if bare:
        return re.compile(flag + r"(?:(=)(" + _VALUE + r"))?")
    return re.compile(flag + r"(?:(=)(" + _VALUE + r")|([ \t]+)(?!-)(?![^\s]*\.(?:py|sh)(?:\s|$))(" + _VALUE + r"))?")


def _replace_last(lines: list[str], span: range, key: str, value: str | None, flag: bool, notes: list[str]) -> bool:
    """Set ``key`` to ``value`` at its last occurrence in the run's command (``span``); False when it is not there."""
    pattern = _pattern(key, flag, bare=value is None)
    for i in reversed(span):
        if lines[i].lstrip().startswith("#"):
            continue
        matches = list(pattern.finditer(lines[i]))
        if not matches:
            continue
        m = matches[-1]
        if not flag:
            old, new = m.group(2), m.group(1) + value
        else:
            old = m.group(3) or (m.group(5) if m.re.groups >= 5 else None) or ""
            new = m.group(1) + ("" if value is None else f" {value}")
        if "$" in old:
            notes.append(f"{key} was {old}: the rewritten script writes the value itself")
        lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
        return True
    return False


def _drop_last(lines: list[str], span: range, key: str, flag: bool) -> bool:
    """Take ``key`` (and its value) out at its last occurrence in the run's command (``span``); a line left with
    only its continuation goes too (the command's last line: the line before it then ends the command)."""
    pattern = _pattern(key, flag)
    for i in reversed(span):
        matches = [] if lines[i].lstrip().startswith("#") else list(pattern.finditer(lines[i]))
        if not matches:
            continue
        m = matches[-1]
        rest = lines[i][:m.start()].rstrip(" \t") + lines[i][m.end():]
        if rest.strip() in ("", "\\"):
            last = not lines[i].rstrip().endswith("\\")
            del lines[i]
            if last and i > 0:
                lines[i - 1] = re.sub(r"\s*\\\s*$", "", lines[i - 1])
        else:
            lines[i] = rest if lines[i][:m.start()].strip() else lines[i][:m.start()] + lines[i][m.end():].lstrip(" \t")
        return True
    return False


def _command_start(lines: list[str], line: int) -> int:
    """The first physical line of the command that ``line`` is part of."""
    while line > 0 and lines[line - 1].rstrip().endswith("\\"):
        line -= 1
    return line


def _command_span(lines: list[str], start: int) -> range:
    """The physical lines of the command that starts on line ``start`` (its backslash continuations)."""
    end = start
    while end + 1 < len(lines) and lines[end].rstrip().endswith("\\"):
        end += 1
    return range(start, end + 1)


_ARRAY_USE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}")
_ARRAY_USE_QUOTED = re.compile(r"\"?\$\{[A-Za-z_][A-Za-z0-9_]*\[[@*]\]\}\"?")
_ARRAY_DEF = re.compile(r"^\s*(?:(?:export|declare|local|readonly|typeset)(?:\s+-\w+)*\s+)?([A-Za-z_][A-Za-z0-9_]*)\+?=\(")


def _array_end(lines: list[str], i: int, col: int) -> int:
    """The physical line of the ``)`` that closes the array opened at line ``i`` (its ``(`` just before column
    ``col``), as bash reads it: a ``)`` inside quotes, of a ``$( ... )`` or ``( ... )`` in an element
    (``model.path=$(pwd)/m``) or in a comment does not close it; the last line where none does."""
    depth, quote = 0, None
    for j in range(i, len(lines)):
        line = lines[j]
        k = col if j == i else 0
        while k < len(line):
            ch = line[k]
            if quote:
                if ch == "\\" and quote == '"':
                    k += 1
                elif ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "\\":
                k += 1
            elif ch == "#" and (k == 0 or line[k - 1].isspace()):
                break
            elif ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    return j
                depth -= 1
            k += 1
    return len(lines) - 1


def _array_rows(lines: list[str], names: Sequence[str], starts: set[int] | None = None) -> dict[str, list[int]]:
    """The physical lines of each ``NAME=( ... )`` / ``NAME+=( ... )`` of the arrays ``names``: those that start on
    a line of ``starts`` (the definitions the run surely reads), or all of them (None)."""
    rows: dict[str, list[int]] = {}
    i = 0
    while i < len(lines):
        m = _ARRAY_DEF.match(lines[i])
        if m and m.group(1) in names:
            j = _array_end(lines, i, m.end())
            if starts is None or i in starts:
                rows.setdefault(m.group(1), []).extend(range(i, j + 1))
            i = j
        i += 1
    return rows


def _used_arrays(lines: list[str], start: int) -> list[str]:
    """The arrays the command that starts on line ``start`` expands (``"${ACTOR[@]}"``), in order."""
    return list(dict.fromkeys(m.group(1) for i in _command_span(lines, start) for m in _ARRAY_USE.finditer(lines[i])))


def _places(lines: list[str], start: int, read: set[int]) -> list:
    """Where the run's arguments are written, the last word first as bash passes them: the command that starts on
    line ``start`` (``_command_span``), then the bash arrays it expands (``"${ACTOR[@]}"``: verl 0.9's examples write
    every key in DATA=( ... ), ACTOR=( ... ) ...), the last one it uses first, each with the ``NAME=( ... )`` and
    ``NAME+=( ... )`` lines the run surely reads (``read``: the lines they start on, as
    ``LaunchScript.array_lines`` records them; one in an if/case branch the run does not take, or that the
    script's own values do not settle, is not the run's). A key set in an array is changed there: one added after
    the entry point would come before the array's in the arguments, and the array's would win."""
    used = _used_arrays(lines, start)
    rows = _array_rows(lines, used, read)
    return [_command_span(lines, start)] + [rows[name] for name in reversed(used) if name in rows]


def _read_arrays(text: str, environment: Mapping[str, str] | None = None) -> set[int]:
    """The physical lines where the array definitions the run surely reads start (``parse_launch_script``, in the
    environment the script is given: ``DEVICE=gpu`` settles its ``case`` on it); none where the script is not read."""
    from .errors import InputError
    from .launch_script import parse_launch_script

    try:
        return {at for _, at, sure in parse_launch_script(text, environment=dict(environment or {})).array_lines
                if sure}
    except InputError:
        return set()


def _after_arrays(lines: list[str], start: int, items: Sequence[str]) -> bool:
    """``items`` written right after the last ``"${NAME[@]}"`` of the command that starts on line ``start``, where
    they come after every array's words (Hydra, argparse: the last value wins); False where it expands none."""
    for i in reversed(_command_span(lines, start)):
        uses = list(_ARRAY_USE_QUOTED.finditer(lines[i]))
        if uses:
            end = uses[-1].end()
            lines[i] = lines[i][:end] + " " + " ".join(items) + lines[i][end:]
            return True
    return False


def _entry_line(lines: list[str], entries: Sequence[str]) -> tuple[int, int] | None:
    """(line, column after the entry point) of the last line that starts a run."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].lstrip().startswith("#"):
            continue
        ends = [m.end() for e in entries for m in re.finditer(re.escape(e) + r"(?=\s|$)", lines[i])]
        if ends:
            return i, max(ends)
    return None


# an answer's item that takes a key out ("(drop --vllm_mode)", Framework.assignment of an unset value)
DROP_ITEM = re.compile(r"\(drop (?:--)?\+?([\w.\-]+)\)")


def rewrite_script(text: str, native: Sequence[str], syntax: str, entries: Sequence[str],
                   launcher_entries: Sequence[str] = (), launcher_keys: frozenset[str] = frozenset(),
                   drop: Sequence[str] = (), environment: Mapping[str, str] | None = None) -> Rewrite:
    """``text`` with the items of ``native`` (the framework's own spelling of the changed keys) written in, and the
    keys of ``drop`` taken out.

    ``syntax``: the framework's ("hydra" or "flags"), how the bare key names of ``drop`` are written; each item of
    ``native`` carries its own form (``--flag value``, or ``key=value`` for an override or an environment prefix).
    ``entries``: the words that end a run's entry point (``verl.trainer.main_ppo``, ``swift rlhf``, a script name);
    ``launcher_entries`` / ``launcher_keys``: where a launcher's own flags go (``accelerate launch``), and which.
    ``environment``: what the script is run with (``DEVICE=gpu`` given after its path), which settles its branches
    as it did when the script was read: an array line of the branch it takes is then the run's to edit."""
    lines = text.split("\n")
    out = Rewrite(text)
    entry = _entry_line(lines, [*entries, *launcher_entries])
    if entry is None:
        out.notes.append("no command of the script starts a run: nothing written")
        return out
    first = _command_start(lines, entry[0])
    used = _used_arrays(lines, first)
    read = _read_arrays(text, environment) if used else set()

    def dropped(key: str) -> bool:
        nonlocal read
        if any(_drop_last(lines, span, key, syntax == "flags") for span in _places(lines, first, read)):
            if used:  # a line may have gone: the array lines the run reads, counted again
                read = _read_arrays("\n".join(lines), environment)
            return True
        return False

    for key in drop:
        if dropped(key.lstrip("+-")):
            out.dropped.append(key.lstrip("+-"))
    pending: list[str] = []
    launcher_pending: list[str] = []
    tail: list[str] = []  # keys an array sets in a branch the run may not take: after the command's last array
    for item in native:  # each item in its own form: a flags framework's environment prefix is a key=value too
        gone = DROP_ITEM.fullmatch(item)
        if gone:  # "(drop --key)": the answer leaves it unset
            if dropped(gone.group(1)):
                out.dropped.append(gone.group(1))
            continue
        key, value = exported_pair(item)
        key = key.lstrip("+")
        flag = item.startswith("--")
        if any(_replace_last(lines, span, key, value, flag, out.notes) for span in _places(lines, first, read)):
            out.replaced.append(key)
            continue
        elsewhere = [name for name, rows in _array_rows(lines, used).items()
                     if any(_pattern(key, flag).search(lines[i]) for i in rows)]
        if elsewhere and key not in launcher_keys:
            tail.append(item)
            out.notes.append(
                f"{key} is set in {', '.join(n + '=( ... )' for n in elsewhere)} inside an if/case branch the run does "
                "not surely take: that line is left as it was, and the new value is written after the command's last "
                '"${' + elsewhere[-1] + '[@]}" instead, where the last value wins')
        else:
            (launcher_pending if key in launcher_keys else pending).append(item)
        out.added.append(key)
    if tail and not _after_arrays(lines, first, tail):
        pending += tail
    for items, where in ((pending, entries), (launcher_pending, launcher_entries or entries)):
        if not items:
            continue
        at = _entry_line(lines, where)
        if at is None:
            out.notes.append("no command of the script starts a run: " + " ".join(items) + " not written")
            continue
        i, col = at
        if lines[i][col:].strip() == "\\":  # the command continues on the next line: one added key a line
            indent = re.match(r"\s*", lines[i + 1]).group(0) if i + 1 < len(lines) else "    "
            lines[i + 1:i + 1] = [f"{indent or '    '}{item} \\" for item in items]
        elif not lines[i][col:].strip() and len(items) > 1:  # the command ends at its entry point (every argument
            # after it was taken out: renamed keys): one key a line, as the script wrote them, not one long line
            indent = re.match(r"\s*", lines[i]).group(0) or "    "
            lines[i] = lines[i].rstrip() + " \\"
            lines[i + 1:i + 1] = [f"{indent}{item} \\" for item in items[:-1]] + [f"{indent}{items[-1]}"]
        else:
            lines[i] = lines[i][:col] + " " + " ".join(items) + lines[i][col:]
    out.text = "\n".join(lines)
    return out


_SHELL_SPECIAL = re.compile(r"""[\s'"\\$`\[\]{}()*?;&|<>]""")


def shell_quoted(text: str) -> str:
    """``text`` as one shell word that the shell passes on unchanged: as it is where the shell would not split,
    expand or glob it; else in double quotes where they suffice (a ``$NAME`` the script left unset still expands
    as it did there), else in single quotes."""
    if not text or not _SHELL_SPECIAL.search(text):
        return text
    if not re.search(r'["\\`]', text):
        return f'"{text}"'
    return shlex.quote(text)


DEVICES = "CUDA_VISIBLE_DEVICES"


def with_environment(head: str, environment: Sequence[str]) -> tuple[str, list[str]]:
    """A printed command's start words (``NPROC_PER_NODE=8 swift rlhf``) with the user's own environment in front:
    ``environment``, the script's exported variables and its command's ``NAME=value`` words as it runs them
    (``LaunchScript.environment``), which the answer would otherwise drop (``ACCELERATE_LOG_LEVEL=info``,
    ``CUDA_VISIBLE_DEVICES=0,1``). A name the answer sets keeps the answer's value; a ``CUDA_VISIBLE_DEVICES`` that
    listed as many devices as a count the answer changes (``NPROC_PER_NODE=8`` -> ``4``) lists that many, its first;
    one the answer's larger count outgrows is left out, with a note.
    Returns the start words and a note for each value that differs from the user's."""
    words = head.split(" ")
    at = next((i for i, w in enumerate(words) if not ASSIGNMENT.match(w)), len(words))
    answer_env = dict(ASSIGNMENT.match(w).groups() for w in words[:at])
    user_env = dict(ASSIGNMENT.match(w).groups() for w in environment if ASSIGNMENT.match(w))
    changed = {k: v for k, v in answer_env.items() if k in user_env and user_env[k] != v}
    notes = [f"{name}={user_env[name]} in your script is {value} in the answer" for name, value in changed.items()]
    if DEVICES in user_env and DEVICES not in answer_env:
        devices, said = _devices_for(user_env, changed)
        if said:
            notes.append(said)
            if devices is None:
                user_env.pop(DEVICES)
            else:
                answer_env[DEVICES] = devices
    merged = {**{k: answer_env.get(k, v) for k, v in user_env.items()}, **answer_env}
    start = [f"{k}={v if k in answer_env else shell_quoted(v)}" for k, v in merged.items()]
    return " ".join([*start, *words[at:]]), notes


def _devices_for(user_env: dict[str, str], changed: dict[str, str]) -> tuple[str | None, str]:
    """The user's CUDA_VISIBLE_DEVICES where it listed as many devices as a count the answer changes (``changed``:
    name -> the answer's value): its first that many for a smaller count, None (left out) for a larger one, and the
    note that says so; ('', '') where no changed count was its length."""
    devices = user_env[DEVICES].split(",")
    for name, value in changed.items():
        if user_env[name] != str(len(devices)) or not value.isdigit() or int(value) <= 0:
            continue
        said = f"{DEVICES}={user_env[DEVICES]} listed {len(devices)} devices for {name}={user_env[name]}: "
        if int(value) < len(devices):
            kept = ",".join(devices[:int(value)])
            return kept, said + f"the answer's {name}={value} runs on {kept}"
        # more than it listed: which others are free is the user's to say
        return None, said + (f"the answer's {name}={value} needs {value}, so it is left out (every GPU of the node "
                             f"visible); list {value} of yours if the node has more")
    return "", ""

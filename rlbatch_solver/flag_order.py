"""A framework's flag written where rlbatch's own options go (``rlbatch check run.sh --quant_method bnb``): the
command rearranged, rlbatch's options before ``--`` and the framework's after it, for the error to print; for the
commands that take a framework's settings as ``--set KEY=VALUE`` (``rlbatch recommend ... --use_peft``), the command
with each such flag written as one."""

from __future__ import annotations

import shlex
from typing import Any, Sequence

try:  # typer 0.29 carries its own copy of click
    from typer._click.exceptions import BadParameter, NoSuchOption
except ImportError:  # pragma: no cover - typer releases that use click itself
    from click.exceptions import BadParameter, NoSuchOption

__all__ = ["BadParameter", "NoSuchOption", "as_set_pairs", "misplaced_flag_text", "rearranged"]


def own_options(command: Any) -> dict[str, bool]:
    """Each option name of the click ``command`` -> whether it takes a value."""
    return {name: not (p.is_flag or p.count) for p in command.params if p.param_type_name == "option"
            for name in (*p.opts, *p.secondary_opts)}


def rearranged(args: Sequence[str], flag: str, command: Any) -> list[str]:
    """``args`` (after the command's name) with everything from ``flag`` on after one ``--``, except the command's
    own options (and their values), which move before it."""
    own = own_options(command)
    at = next(i for i, a in enumerate(args) if a == flag or a.startswith(flag + "="))
    moved: list[str] = []
    rest: list[str] = []
    tail = list(args[at:])
    i = 0
    while i < len(tail):
        word = tail[i]
        name = word.split("=", 1)[0]
        if word == "--":
            pass  # one `--` is written before the framework's part
        elif name in own:
            moved.append(word)
            if own[name] and "=" not in word and i + 1 < len(tail):
                i += 1
                moved.append(tail[i])
        else:
            rest.append(word)
        i += 1
    return [*args[:at], *moved, "--", *rest]


def as_set_pairs(args: Sequence[str], command: Any) -> list[str]:
    """``args`` (after the command's name) with each flag the click ``command`` does not have written as
    ``--set KEY=VALUE``: its value the word after it (or after ``=``), ``true`` where none follows (a switch such as
    TRL's ``--use_peft``)."""
    own = own_options(command)
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        name = word.split("=", 1)[0]
        if name in own:
            out.append(word)
            if own[name] and "=" not in word and i + 1 < len(args):
                i += 1
                out.append(args[i])
        elif word.startswith("--") and len(word) > 2:
            key, eq, value = word[2:].partition("=")
            if not eq:
                value = "true"
                if i + 1 < len(args) and not args[i + 1].startswith("-"):
                    i += 1
                    value = args[i]
            out += ["--set", f"{key}={value}"]
        else:
            out.append(word)
        i += 1
    return out


# the options a framework's settings are given with, where a command takes them so (recommend, enumerate): click
# names them as near a framework's flag, which is no suggestion to follow as it is
SET_OPTIONS = ("--set", "--search")


def misplaced_flag_text(err: NoSuchOption, args: Sequence[str]) -> str | None:
    """The one-paragraph error for a flag no option of the command has and near none of its options, where the
    command reads a framework's own arguments after ``--`` or takes its settings as ``--set KEY=VALUE``; None
    otherwise (click's answer stands)."""
    ctx = err.ctx
    if ctx is None:
        return None
    params = {p.name for p in ctx.command.params}
    takes_set = "set_" in params
    if (not {"overrides", "set_"} & params
            or [p for p in err.possibilities or () if not (takes_set and p in SET_OPTIONS)]):
        return None
    words = list(args)
    if words and words[0] == ctx.info_name:
        words = words[1:]
    if not any(w == err.option_name or w.startswith(err.option_name + "=") for w in words):
        return None
    if takes_set:
        fixed = shlex.join(as_set_pairs(words, ctx.command))
        return (f"error: {err.option_name}: not an option of `{ctx.command_path}`; it takes a framework's settings "
                f"as --set KEY=VALUE (--search KEY=V1,V2 for the search to choose among values), a switch as "
                f"KEY=true. Fix: {ctx.command_path} {fixed}")
    fixed = shlex.join(rearranged(words, err.option_name, ctx.command))
    return (f"error: {err.option_name}: not an option of `{ctx.command_path}`; a framework's own flags go after "
            f"`--` (what follows it is the config or the launch script's arguments), rlbatch's options before it. "
            f"Fix: {ctx.command_path} {fixed}")

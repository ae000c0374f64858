"""A framework's flag written where rlbatch's own options go (``rlbatch check run.sh --quant_method bnb``): the
command rearranged, rlbatch's options before ``--`` and the framework's after it, for the error to print."""

from __future__ import annotations

import shlex
from typing import Any, Sequence

try:  # typer 0.29 carries its own copy of click
    from typer._click.exceptions import NoSuchOption
except ImportError:  # pragma: no cover - typer releases that use click itself
    from click.exceptions import NoSuchOption

__all__ = ["NoSuchOption", "misplaced_flag_text", "rearranged"]


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


def misplaced_flag_text(err: NoSuchOption, args: Sequence[str]) -> str | None:
    """The one-paragraph error for a flag no option of the command has, where the command reads a framework's own
    arguments after ``--`` and the flag is near none of its options; None otherwise (click's answer stands)."""
    ctx = err.ctx
    if ctx is None or err.possibilities or not any(p.name == "overrides" for p in ctx.command.params):
        return None
    words = list(args)
    if words and words[0] == ctx.info_name:
        words = words[1:]
    if not any(w == err.option_name or w.startswith(err.option_name + "=") for w in words):
        return None
    fixed = shlex.join(rearranged(words, err.option_name, ctx.command))
    return (f"error: {err.option_name}: not an option of `{ctx.command_path}`; a framework's own flags go after "
            f"`--` (what follows it is the config or the launch script's arguments), rlbatch's options before it. "
            f"Fix: {ctx.command_path} {fixed}")

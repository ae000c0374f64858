"""Pasted text as the command line would take it: a launch script or a YAML config written to a file in the
request's own folder (and read by the same code as ``rlbatch check run.sh``), or arguments split as the shell
would split them. Nothing pasted is executed; a pasted word that names a file on the server is refused."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

from ..errors import InputError
from ..safe_input import load_yaml, refuse_named_files


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text.replace("\\\r\n", " ").replace("\\\n", " "), comments=True)
    except ValueError as err:
        raise InputError("config", f"the pasted text could not be split into arguments ({err}).",
                         "close the quote that is left open, or paste the launch script as it is.") from None


def _is_script(text: str) -> bool:
    from ..launch_script import parse_launch_script

    try:
        parse_launch_script(text, name="the pasted script")
    except InputError:
        return False
    return True


def _yaml_mapping(text: str) -> bool:
    if "=" in text.split("\n", 1)[0] and ":" not in text.split("\n", 1)[0]:
        return False
    data = load_yaml(text, "config", "the pasted text", strict=False)  # a YAML bomb or nesting is refused here
    return isinstance(data, dict) and bool(data)


def materialize(text: str, folder: Path) -> tuple[Optional[list[str]], Optional[str]]:
    """``text`` as the command line's (arguments, --config path): a launch script as ``[folder/pasted.sh]``, a YAML
    config as ``folder/pasted.yaml``, anything else as the arguments it splits into; (None, None) when empty."""
    if not text.strip():
        return None, None
    refuse_named_files(text, "config", "the web page", "paste that file's content instead (a YAML config goes in the "
                       "box on its own).", folder)
    if _is_script(text):
        path = folder / "pasted.sh"
        path.write_text(text, encoding="utf-8")
        return [str(path)], None
    if _yaml_mapping(text):
        path = folder / "pasted.yaml"
        path.write_text(text, encoding="utf-8")
        return None, str(path)
    return _tokens(text), None

"""A request's inputs: the query string (or form body) read into ``Inputs``, and ``Inputs`` written back into a
URL, so that a page can be shared by its address."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Mapping, Optional
from urllib.parse import urlencode

from ..errors import InputError

ACTIONS = ("check", "recommend", "explain")
MAX_TEXT = 64 * 1024  # a pasted script or config, characters
MAX_LINE = 4096  # the error line to explain
MAX_WORD = 200  # a GPU, model, framework or algorithm name


@dataclass(frozen=True)
class Inputs:
    action: str = ""  # "" shows the empty form
    fw: str = ""
    gpu: str = ""
    gpus: Optional[int] = None
    model: str = ""
    algo: str = ""
    n: Optional[int] = None
    prompt_len: Optional[int] = None
    response_len: Optional[int] = None
    longest_response_len: Optional[int] = None  # the longest response the data reaches (time only: --longest-response-len)
    config: str = ""  # pasted: a launch script, a YAML config, or the arguments
    error: str = ""  # the error line for explain

    def query(self, **changes) -> str:
        """The query string of these inputs (with ``changes``), empty fields left out."""
        data = asdict(self) | changes
        return urlencode({k: v for k, v in data.items() if v not in ("", None)})


_NUMBERS = {"gpus", "n", "prompt_len", "response_len", "longest_response_len"}
_LABELS = {"gpus": "GPU count", "n": "responses per prompt (n)", "prompt_len": "prompt length",
           "response_len": "response length", "longest_response_len": "longest response your data reaches"}


def _number(name: str, text: str) -> Optional[int]:
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= 10**9 or len(text) > 12:
        raise InputError(name, f"{_LABELS[name]} '{text[:20]}' is not a positive whole number.",
                         f"write the {_LABELS[name]} as a number such as 4, or leave it empty.")
    return value


def _model(text: str) -> str:
    """A catalog name or Hugging Face id: a path would read a file on the server."""
    if text.startswith(("/", "~", ".")) or text.lower().endswith((".json", ".yaml", ".yml")):
        raise InputError("model", f"'{text[:60]}' is a file path; the web page reads no files on the server.",
                         "give a catalog name (rlbatch catalog models) or a Hugging Face id such as Qwen/Qwen2.5-7B.")
    return text


def read_inputs(query: Mapping[str, list[str]]) -> Inputs:
    """``Inputs`` from a parsed query string (``urllib.parse.parse_qs``); bad values are an ``InputError``."""
    values: dict = {}
    for f in fields(Inputs):
        text = (query.get(f.name) or [""])[-1]
        limit = MAX_TEXT if f.name == "config" else MAX_LINE if f.name == "error" else MAX_WORD
        if len(text) > limit:
            raise InputError(f.name, f"is {len(text):,} characters long; this page reads at most {limit:,}.",
                             "paste only the launch command (or the config), or run rlbatch on your own machine.")
        text = text.strip() if f.name != "config" else text.strip("\n")
        values[f.name] = _number(f.name, text) if f.name in _NUMBERS else text
    if values["action"] and values["action"] not in ACTIONS:
        raise InputError("action", f"'{values['action'][:20]}' is not one of {', '.join(ACTIONS)}.",
                         "use the page's buttons.")
    values["model"] = _model(values["model"])
    return Inputs(**values)

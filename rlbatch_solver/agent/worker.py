"""Each tool call in a process of its own, in a fresh folder, stopped at its deadline: a slow or runaway request
never holds the server, another call, or the server's stdout (the protocol's stream)."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from typing import Any, Optional

# what a call's process imports before it is forked (the forkserver imports it once)
PRELOAD = ["rlbatch_solver.agent.tools", "rlbatch_solver.commands.entry", "rlbatch_solver.api",
           "rlbatch_solver.render"]


@dataclass
class Outcome:
    """A call's answer (``data``, its ``--json`` dict) or its one-paragraph error; ``texts``: the command line's
    ``note:`` lines and any other text beside the answer."""

    data: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    texts: list[str] = field(default_factory=list)


def _context():
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def call(name: str, arguments: dict[str, Any], deadline_s: float, limit_field: str = "time_limit") -> Outcome:
    """Tool ``name`` on ``arguments`` in a child process; stopped after ``deadline_s`` seconds (an error naming
    ``limit_field``)."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(name, arguments, send), daemon=True)
    proc.start()
    send.close()
    try:
        if not receive.poll(deadline_s):
            fix = ("fix more keys or search fewer values, or give a smaller time_limit (the solvers then answer "
                   "within it, saying whether their answer is proven)." if limit_field == "time_limit" else
                   "paste less: the launch script or the arguments that set the run's sizes.")
            return Outcome(error=f"error: {limit_field}: the call ran past {deadline_s:.0f} s and was stopped. "
                           f"Fix: {fix}")
        return receive.recv()
    except EOFError:  # the process died without an answer (killed, out of memory)
        return Outcome(error=f"error: {name}: the call's process stopped without an answer (exit code "
                       f"{proc.exitcode}). Fix: give a smaller problem; if it persists, report it with the input.")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        receive.close()


def _child(name: str, arguments: dict[str, Any], send) -> None:
    """The child: stdout points at stderr; the call runs in a fresh folder with stderr captured (its notes)."""
    from ..errors import InputError
    from .tools import run_tool

    os.dup2(2, 1)
    sys.stdout = sys.stderr
    captured = io.StringIO()
    home = os.getcwd()
    try:
        with tempfile.TemporaryDirectory(prefix="rlbatch-call-") as here:
            os.chdir(here)
            try:
                with contextlib.redirect_stderr(captured):
                    answer = run_tool(name, arguments)
            finally:
                os.chdir(home)
        out = Outcome(data=answer.data, texts=_notes(captured) + answer.texts)
    except InputError as err:
        out = Outcome(error=f"error: {err}", texts=_notes(captured))
    except Exception as err:  # a bug: its traceback to the server's log (stderr), one line to the client
        traceback.print_exc()
        out = Outcome(error=f"error: {name}: failed inside the solver ({type(err).__name__}). Fix: report it with "
                      "the input; the server's log has the traceback.", texts=_notes(captured))
    send.send(out)
    send.close()


def _notes(captured: io.StringIO) -> list[str]:
    text = captured.getvalue().strip()
    return [text] if text else []

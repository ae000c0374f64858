"""Each solve in a process of its own, with a time and a memory cap: a slow or greedy request is killed, and
never holds up another.

Processes fork from a server process that has imported the solver once (``forkserver``), so a request starts in
milliseconds and the HTTP server's threads are never forked.
"""

from __future__ import annotations

import multiprocessing
import threading
from dataclasses import dataclass
from typing import Any, Callable

# what the fork server imports once, before any request forks from it (ortools: half a second a request)
PRELOAD = ["rlbatch_solver.web.jobs", "ortools.sat.python.cp_model"]


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0  # wall-clock seconds a request may take
    memory_mib: int = 4096  # address space of its worker process
    workers: int = 4  # solves at once; a request beyond them waits up to timeout_s, then is told the server is busy


def _context():
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _child(conn, fn: Callable[[Any], dict], arg: Any, memory_bytes: int) -> None:
    """The worker: cap its memory, run ``fn(arg)``, send back its answer (or what went wrong, as an answer)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):  # no such limit on this system: the time cap still holds
        pass
    from ..errors import InputError

    try:
        out = fn(arg)
    except InputError as err:
        out = {"status": 400, "error": str(err)}
    except MemoryError:
        out = {"status": 503, "error": "this request needed more memory than the server gives one request "
               f"({memory_bytes // 2**20:,} MiB). Fix: ask for a smaller search (fewer GPUs, a smaller model), "
               "or run rlbatch on your own machine."}
    except Exception as err:  # noqa: BLE001 - any failure is the page's answer, never a hung request
        out = {"status": 500, "error": f"internal error: {type(err).__name__}: {err}"}
    try:
        conn.send(out)
    except Exception as err:  # noqa: BLE001 - an answer that cannot be sent is still said
        conn.send({"status": 500, "error": f"internal error: the answer could not be sent back: {err}"})
    conn.close()


class Workers:
    """Runs ``fn(arg)`` in a fresh worker process per call, under ``limits``."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self._ctx = _context()
        self._slots = threading.BoundedSemaphore(limits.workers)

    def warm(self) -> None:
        """Start the fork server now (it imports the solver), so that the first request does not wait for it."""
        self.run(len, ())

    def run(self, fn: Callable[[Any], dict], arg: Any) -> dict:
        """``fn(arg)``'s answer; ``{"status": 503, "error": ...}`` when it ran past the time cap, died, or
        no worker was free within the time cap."""
        limits = self.limits
        if not self._slots.acquire(timeout=limits.timeout_s):
            return {"status": 503, "error": f"server busy: {limits.workers} requests are being solved. "
                    "Fix: try again in a minute."}
        try:
            return self._run(fn, arg)
        finally:
            self._slots.release()

    def _run(self, fn: Callable[[Any], dict], arg: Any) -> dict:
        limits = self.limits
        ours, theirs = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=_child, args=(theirs, fn, arg, limits.memory_mib * 2**20), daemon=True)
        proc.start()
        theirs.close()
        try:
            if ours.poll(limits.timeout_s):
                try:
                    return ours.recv()
                except EOFError:
                    pass
                except Exception as err:  # sent, but it does not rebuild here: an error page, not an empty reply
                    return {"status": 500, "error": f"the answer could not be read back from the solve "
                            f"({type(err).__name__}: {str(err)[:200]}). Fix: run rlbatch on your own machine with "
                            "the same input."}
                proc.join(5)
                return {"status": 503, "error": f"the solve stopped without an answer (exit code {proc.exitcode}), "
                        f"most likely past the memory this server gives one request ({limits.memory_mib:,} MiB). "
                        "Fix: ask for a smaller search, or run rlbatch on your own machine."}
            return {"status": 503, "error": f"the solve took longer than the {limits.timeout_s:g} s this server "
                    "gives one request and was stopped. Fix: ask for a smaller search (fewer GPUs, a shorter "
                    "--time-limit), or run rlbatch on your own machine."}
        finally:
            if proc.is_alive():
                proc.kill()
            proc.join(5)
            ours.close()

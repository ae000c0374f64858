"""``rlbatch serve``'s server on a free localhost port, in a thread of the test process, for the web tests."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from typing import Iterator, Optional

from rlbatch_solver.web.server import Settings, make_server


@contextmanager
def running(settings: Optional[Settings] = None) -> Iterator[str]:
    """The server's base URL (http://127.0.0.1:PORT) while it serves."""
    server = make_server(port=0, settings=settings, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def fetch(url: str, data: Optional[bytes] = None, timeout: float = 60) -> tuple[int, str]:
    """(status, body) of a GET (or a POST of ``data``), error statuses included."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8")

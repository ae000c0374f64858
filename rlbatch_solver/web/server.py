"""The HTTP server of ``rlbatch serve``: GET / (the form; its inputs in the query string), GET or POST /sweep,
GET /healthz. Standard library only: a thread per connection, each solve in a worker process of its own
(worker.py) with a time and a memory cap; request bodies and query strings capped; localhost unless told."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from ..errors import InputError
from .form import Inputs, read_inputs
from .worker import Limits, Workers

MAX_BODY = 1024 * 1024  # bytes of a POST body (a sweep's results file) or of a query string
# the page's own resources only: inline style and script, pictures as data: URLs, forms sent to this server
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'self' https://huggingface.co https://*.hf.space")


@dataclass
class Settings:
    limits: Limits = field(default_factory=Limits)
    max_body: int = MAX_BODY


class Handler(BaseHTTPRequestHandler):
    server_version = "rlbatch"
    protocol_version = "HTTP/1.1"

    # ------------------------------------------------------------------------------------------ plumbing
    def _send(self, status: int, html: str, content_type: str = "text/html; charset=utf-8") -> None:
        data = html.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _too_big(self, what: str) -> None:
        from .page import document

        self.close_connection = True
        limit = self.server.settings.max_body
        self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, document(
            f'<p class="error" id="error">error: {what}: more than the {limit:,} bytes this server reads. Fix: '
            "paste less (the launch command alone, or fewer result lines), or run rlbatch on your own machine.</p>"))

    def _body(self) -> Optional[str]:
        """The text of a POST body; None when it was refused (too big, of no length, or of a negative one)."""
        header = self.headers.get("Content-Length", "")
        try:
            length = int(header)
        except ValueError:
            self.close_connection = True
            self._send(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length", "text/plain; charset=utf-8")
            return None
        if length < 0:
            from .page import document

            self.close_connection = True
            self._send(HTTPStatus.BAD_REQUEST, document(
                f'<p class="error" id="error">error: the Content-Length header is {escape(header.strip())}: a body\'s '
                "length is a count of bytes, 0 or more. Fix: send the body's byte count (curl and browsers set it "
                "themselves when the header is left out of the command).</p>"))
            return None
        if length > self.server.settings.max_body:
            self._too_big("the request body")
            return None
        return self.rfile.read(length).decode("utf-8", "replace")

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        if not self.server.quiet:
            super().log_message(format, *args)

    # ------------------------------------------------------------------------------------------ routes
    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if len(url.query) > self.server.settings.max_body:
            return self._too_big("the address")
        query = parse_qs(url.query)
        if url.path == "/":
            return self._main(query)
        if url.path == "/sweep":
            return self._sweep(query)
        if url.path == "/healthz":
            return self._send(HTTPStatus.OK, "ok\n", "text/plain; charset=utf-8")
        from .page import document

        self._send(HTTPStatus.NOT_FOUND, document('<p class="error" id="error">error: no such page. Fix: start '
                                                  'from <a href="/">the form</a>.</p>'))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if url.path not in ("/", "/sweep"):
            return self._send(HTTPStatus.NOT_FOUND, "no such page", "text/plain; charset=utf-8")
        body = self._body()
        if body is None:
            return
        if url.path == "/":
            return self._main(parse_qs(body))
        if _is_results_file(body):  # the results file itself as the body (curl --data-binary @results.jsonl)
            return self._sweep({"results": [body]})
        query = parse_qs(body)
        if body.strip() and "results" not in query:
            from .page import sweep_page

            return self._send(HTTPStatus.BAD_REQUEST, sweep_page(result={"error": (
                f"the body sent to /sweep has no 'results' field (it has {_field_names(query)}). Fix: send the "
                "results file of `rlbatch sweep --out` as the form field 'results' (curl --data-urlencode "
                "results@results.jsonl), or as the whole body (curl --data-binary @results.jsonl).")}))
        return self._sweep(query)

    def _main(self, query: dict) -> None:
        from .jobs import Job, run
        from .page import page

        try:
            inputs = read_inputs(query)
        except InputError as err:
            return self._send(HTTPStatus.BAD_REQUEST, page(Inputs(action="check"), {"error": str(err)}))
        if not inputs.action:
            return self._send(HTTPStatus.OK, page(inputs))
        limits = self.server.settings.limits
        result = self.server.workers.run(run, Job(inputs, time_limit_s=_solve_time(limits)))
        self._send(result.get("status", 200), page(inputs, result))

    def _sweep(self, query: dict) -> None:
        from .jobs import SweepJob, run_sweep
        from .page import sweep_page

        results = (query.get("results") or [""])[-1]
        if not results.strip():
            return self._send(HTTPStatus.OK, sweep_page())
        result = self.server.workers.run(run_sweep, SweepJob(results))
        self._send(result.get("status", 200), sweep_page(results, result))


def _is_results_file(body: str) -> bool:
    """Whether a POST body is a sweep's results file (JSON lines) rather than a form: a form's body starts with
    a field's name, a results file with an object's brace."""
    return body.lstrip("\ufeff \t\r\n").startswith("{")


def _field_names(query: dict) -> str:
    names = sorted(query)
    if not names:
        return "no field"
    shown = ", ".join(repr(name[:40]) for name in names[:5])
    return f"the field{'s' if len(names) > 1 else ''} {shown}{' and more' if len(names) > 5 else ''}"


def _solve_time(limits: Limits) -> float:
    """The solver's time limit in a request: the command line's 10 s, inside the request's cap with room to spare
    for reading the input and writing the page."""
    return max(0.5, min(10.0, limits.timeout_s * 0.6))


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], settings: Settings, quiet: bool = False) -> None:
        if ":" in address[0]:  # an IPv6 address (::1, ::)
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.settings = settings
        self.workers = Workers(settings.limits)
        self.quiet = quiet


def make_server(host: str = "127.0.0.1", port: int = 8000, settings: Optional[Settings] = None,
                quiet: bool = False) -> Server:
    """The server, bound (localhost unless told otherwise) but not yet serving; ``serve_forever()`` serves."""
    return Server((host, port), settings or Settings(), quiet)


def serve(host: str = "127.0.0.1", port: int = 8000, settings: Optional[Settings] = None) -> None:
    """``rlbatch serve``: serve until interrupted."""
    server = make_server(host, port, settings)
    server.workers.warm()
    shown = f"[{host}]" if ":" in host else host
    print(f"rlbatch: serving on http://{shown}:{server.server_address[1]}/ (Ctrl+C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

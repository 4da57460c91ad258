"""An HTTP/1.1 server on loopback whose answers a test writes as a Python function.

The function gets each request (method, path, headers; ``GET``, ``HEAD`` or ``PUT``, whose
body it reads from ``rfile``) and the handler to answer through (``send_response``,
``send_header``, ``end_headers``, ``wfile``), so a test can redirect,
refuse ``HEAD``, answer chunked, ignore ``Range``, change an object between requests or send
a body without end. Every request is recorded. Given an ``ssl.SSLContext``, it answers over
TLS.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["Request", "ScriptedServer", "serve_bytes"]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names


Answer = Callable[[Request, BaseHTTPRequestHandler], None]


class ScriptedServer:
    """Answers every request with ``answer``; use as a context manager."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                request = Request(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}
                )
                with server._lock:
                    server.requests.append(request)
                try:
                    answer(request, self)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = do_HEAD = do_PUT = _any

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.endpoint = f"{'http' if tls is None else 'https'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str = "/obj.bin") -> str:
        return f"{self.endpoint}{path}"

    def count(self, method: str = "GET") -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.method == method)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_bytes(
    handler: BaseHTTPRequestHandler,
    request: Request,
    data: bytes,
    *,
    etag: str | None = None,
    honor_range: bool = True,
) -> None:
    """Answers ``request`` with ``data`` as a static file server does: ``HEAD``, ranges
    (``206`` with ``Content-Range``) and ``If-Match`` (``412`` when ``etag`` differs)."""
    wanted = request.headers.get("if-match")
    if wanted is not None and etag is not None and wanted != etag:
        error = b"<Error><Code>PreconditionFailed</Code><Message>If-Match</Message></Error>"
        handler.send_response(412)
        handler.send_header("Content-Length", str(len(error)))
        handler.end_headers()
        handler.wfile.write(error)
        return
    asked = request.headers.get("range", "")
    status, body, first = 200, data, 0
    if honor_range and asked.startswith("bytes="):
        start_text, _, end_text = asked[len("bytes=") :].partition("-")
        first, last = int(start_text), min(int(end_text), len(data) - 1)
        status, body = 206, data[first : last + 1]
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    if status == 206:
        handler.send_header("Content-Range", f"bytes {first}-{first + len(body) - 1}/{len(data)}")
    if etag is not None:
        handler.send_header("ETag", etag)
    handler.end_headers()
    if request.method != "HEAD":
        handler.wfile.write(body)

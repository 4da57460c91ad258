"""A fault-injecting HTTP proxy for tests: sits between a client and an S3 server on loopback.

Faults are drawn from a seeded RNG and bounded per request key, so a client that retries
always gets through in the end.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("drop", "503", "slow", "truncate", "short", "stall")


@dataclass
class FaultConfig:
    """Which faults to inject, how often and how many times per (method, path)."""

    probability: float = 0.0
    kinds: tuple[str, ...] = ("drop", "503", "slow", "truncate", "short")
    methods: tuple[str, ...] = ("GET",)
    max_per_key: int = 2
    max_total: int = 1_000
    seed: int = 0
    slow_s: float = 0.3
    stall_s: float = 30.0
    path_filter: str = ""


@dataclass
class ProxyLog:
    """Requests seen, in arrival order, with the fault applied (or '')."""

    entries: list[tuple[float, str, str, int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, method: str, path: str, status: int, fault: str) -> None:
        with self.lock:
            self.entries.append((time.monotonic(), method, path, status, fault))


class FaultProxy:
    """Forward HTTP/1.1 requests to `upstream` ("host:port"), injecting faults."""

    def __init__(self, upstream: tuple[str, int], config: FaultConfig | None = None) -> None:
        self.upstream = upstream
        self.config = config or FaultConfig()
        self.log = ProxyLog()
        self.stop_event = threading.Event()
        self._rng = random.Random(self.config.seed)
        self._counts: dict[tuple[str, str], int] = {}
        self._total = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self._server.shutdown()
        self._server.server_close()

    def faults_injected(self) -> int:
        with self._lock:
            return self._total

    def draw(self, method: str, path: str) -> str:
        """The fault for this request, or '' for none."""
        cfg = self.config
        if method not in cfg.methods or cfg.path_filter not in path:
            return ""
        with self._lock:
            key = (method, path)
            if self._counts.get(key, 0) >= cfg.max_per_key or self._total >= cfg.max_total:
                return ""
            if self._rng.random() >= cfg.probability:
                return ""
            self._counts[key] = self._counts.get(key, 0) + 1
            self._total += 1
            return self._rng.choice(cfg.kinds)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                        if size == 0:
                            return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _forward(self) -> None:
                body = self._body()
                fault = proxy.draw(self.command, self.path)
                if fault == "drop":
                    proxy.log.add(self.command, self.path, 0, fault)
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fault == "503":
                    proxy.log.add(self.command, self.path, 503, fault)
                    self._respond(503, [("Content-Type", "application/xml")], _SLOW_DOWN)
                    return
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"
                }
                headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    out_headers = [
                        (k, v)
                        for k, v in resp.getheaders()
                        if k.lower() not in ("transfer-encoding", "connection", "content-length")
                    ]
                    upstream_length = resp.getheader("Content-Length")
                finally:
                    conn.close()
                if self.command == "HEAD":
                    # Logged before the answer, as a GET is: a test that reads the log once
                    # its client returned sees every request.
                    proxy.log.add(self.command, self.path, resp.status, "")
                    self._respond(resp.status, out_headers, b"", int(upstream_length or 0))
                    return
                proxy.log.add(self.command, self.path, resp.status, fault)
                if fault == "slow":
                    proxy.stop_event.wait(proxy.config.slow_s)
                if fault in ("truncate", "stall") and len(data) > 1:
                    # Promise the full body, send half, then hang up (or hang).
                    self._respond(resp.status, out_headers, data[: len(data) // 2], len(data))
                    if fault == "stall":
                        proxy.stop_event.wait(proxy.config.stall_s)
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fault == "short" and len(data) > 1 and resp.status == 200:
                    data = data[: len(data) // 2]  # a consistent but short response
                self._respond(resp.status, out_headers, data)

            def _respond(
                self,
                status: int,
                headers: list[tuple[str, str]],
                data: bytes,
                length: int | None = None,
            ) -> None:
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                self.wfile.flush()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        return Handler


_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)

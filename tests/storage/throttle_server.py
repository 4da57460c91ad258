"""A keep-alive HTTP/1.1 server for throttling, hedging and accounting tests.

It serves one object at every path (GET, ranged GET and HEAD) and logs every request it
reads: when it arrived, on which connection, how many requests were in flight then, and
what was answered. A test gives a ``decide(request)`` function that picks the answer:

* ``Answer("ok")``: the object (or the range asked for);
* ``Answer("status", status, retry_after)``: an error status, with ``Retry-After`` when given;
* ``Answer("stall")``: the head and half the body, then silence until the server stops;
* ``Answer("hang")``: no answer at all, the connection held open.

``delay_s`` holds every answer that long (so that requests overlap and concurrency shows);
an ``Answer``'s own ``delay_s`` overrides it for that answer.
``tls=(chain, key)`` serves HTTPS with that certificate and key (PEM files).
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Answer", "Request", "ThrottleServer"]


@dataclass(frozen=True)
class Request:
    arrived: float  # time.time()
    connection: int
    index_on_connection: int  # 0 for a connection's first request
    method: str
    range: tuple[int, int] | None  # (start, end inclusive)
    # Requests arrived and not yet answered when it arrived, itself included. A request
    # stops counting once its answer is decided and logged, before it is sent: a client
    # that has the answer is never counted as still in flight, however late this thread
    # runs on a loaded machine.
    in_flight: int


@dataclass(frozen=True)
class Answer:
    kind: str
    status: int = 200
    retry_after: str | None = None
    delay_s: float | None = None  # None: the server's delay_s


@dataclass
class Logged:
    request: Request
    status: int = 0
    sent: int = 0
    answered: float = 0.0
    done: bool = False  # no longer counted in flight


class ThrottleServer:
    def __init__(
        self,
        data: bytes,
        decide: Callable[[Request], Answer] = lambda request: Answer("ok"),
        delay_s: float = 0.0,
        tls: tuple[str, str] | None = None,
    ) -> None:
        self.data, self.decide, self.delay_s = data, decide, delay_s
        self._tls: ssl.SSLContext | None = None
        if tls is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(*tls)
        self.log: list[Logged] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._connections = 0
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self, name: str = "obj.bin") -> str:
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/{name}"

    def requests(self) -> list[Logged]:
        with self._lock:
            return list(self.log)

    def _accept(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._connections += 1
                number = self._connections
            thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        if self._tls is not None:
            try:
                conn.settimeout(5)
                conn = self._tls.wrap_socket(conn, server_side=True)
            except OSError:
                conn.close()
                return
        with conn:
            conn.settimeout(0.2)
            pending, index = b"", 0
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                pending += chunk
                while b"\r\n\r\n" in pending:
                    head, pending = pending.split(b"\r\n\r\n", 1)
                    if not self._one(conn, number, index, head.decode("latin-1")):
                        return
                    index += 1

    def _one(self, conn: socket.socket, number: int, index: int, head: str) -> bool:
        found = re.search(r"(?im)^range: bytes=(\d+)-(\d+)", head)
        span = (int(found[1]), int(found[2])) if found else None
        with self._lock:
            self._in_flight += 1
            request = Request(
                time.time(), number, index, head.split(" ", 1)[0], span, self._in_flight
            )
            entry = Logged(request)
            self.log.append(entry)
        try:
            return self._answer(conn, request, entry)
        finally:
            self._answered(entry)  # a stall or hang, never logged as answered

    def _answer(self, conn: socket.socket, request: Request, entry: Logged) -> bool:
        answer = self.decide(request)
        delay = self.delay_s if answer.delay_s is None else answer.delay_s
        if delay:
            time.sleep(delay)
        if answer.kind == "hang":
            self._stop.wait()
            return False
        if answer.kind == "status":
            body = b"throttled" if answer.status in (429, 503) else b"error"
            lines = [f"HTTP/1.1 {answer.status} X", f"Content-Length: {len(body)}"]
            if answer.retry_after is not None:
                lines.append(f"Retry-After: {answer.retry_after}")
            return self._send(conn, lines, body, request, entry, answer.status)
        start, end = request.range or (0, len(self.data) - 1)
        body = self.data[start : end + 1]
        status = 206 if request.range else 200
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
        if request.range:
            lines.append(f"Content-Range: bytes {start}-{end}/{len(self.data)}")
        if request.method == "HEAD":
            return self._send(conn, lines, b"", request, entry, status)
        if answer.kind == "stall":
            conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body[: len(body) // 2])
            self._stop.wait()
            return False
        return self._send(conn, lines, body, request, entry, status)

    def _send(
        self,
        conn: socket.socket,
        lines: list[str],
        body: bytes,
        request: Request,
        entry: Logged,
        status: int,
    ) -> bool:
        # Logged before it is sent: a client that has the answer finds it in the log.
        with self._lock:
            entry.status, entry.sent, entry.answered = status, len(body), time.time()
        self._answered(entry)
        try:
            conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        except OSError:
            return False
        return True

    def _answered(self, entry: Logged) -> None:
        """The request no longer counts as in flight (once, whichever path ends it)."""
        with self._lock:
            if not entry.done:
                entry.done = True
                self._in_flight -= 1

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(5)

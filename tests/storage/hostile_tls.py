"""A TLS server that answers every GET with a scripted fault, for the HTTPS bad-input tests.

Modes: ``"drop"`` (half the body, then the TCP connection closes with no ``close_notify``),
``"short"`` (half the body, then a clean ``close_notify``), ``"oversized"`` (the announced
length, then more bytes), ``"stall"`` (half the body, then nothing). Ranged GETs are
answered ``206`` for the range asked, whole GETs ``200``; the head always announces the
right length. Modes that spoil the answer's head, for ``HEAD`` and GET alike: ``"head-cut"``
(half a head, then the connection closes), ``"garbage"`` (no HTTP status line), ``"silent"``
(nothing at all). ``accepted`` counts the TCP connections accepted.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["HostileTlsServer"]

_RANGE = re.compile(rb"range: bytes=(\d+)-(\d+)", re.IGNORECASE)


class HostileTlsServer:
    def __init__(self, data: bytes, mode: str, chain: Path, key: Path) -> None:
        self.data, self.mode = data, mode
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(chain, key)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._open: list[socket.socket] = []
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, name: str = "obj.bin") -> str:
        return f"https://127.0.0.1:{self.port}/{name}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            conn = self._context.wrap_socket(raw, server_side=True)
        except OSError:
            raw.close()
            return
        self._open.append(conn)
        try:
            self._answer(conn)
        except OSError:
            pass  # the client hung up first: expected once it has seen the fault

    def _answer(self, conn: ssl.SSLSocket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            got = conn.recv(4096)
            if not got:
                conn.close()
                return
            request += got
        if self._spoiled_head(conn):
            return
        found = _RANGE.search(request)
        if found:
            start, end = int(found[1]), int(found[2])
            head = (
                f"HTTP/1.1 206 Partial Content\r\nContent-Length: {end - start + 1}\r\n"
                f"Content-Range: bytes {start}-{end}/{len(self.data)}\r\n\r\n"
            )
        else:
            start, end = 0, len(self.data) - 1
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.data)}\r\n\r\n"
        body = self.data[start : end + 1]
        conn.sendall(head.encode())
        if self.mode == "oversized":
            conn.sendall(body + b"X" * 100_000)
            time.sleep(1)
            conn.close()
            return
        conn.sendall(body[: len(body) // 2])
        if self.mode == "drop":
            conn.shutdown(socket.SHUT_RDWR)  # the TCP connection ends; no close_notify
            conn.close()
        elif self.mode == "short":
            conn.unwrap().close()  # close_notify, then the end of the connection
        else:  # stall: hold the connection open, silent
            self._stop.wait(30)

    def _spoiled_head(self, conn: ssl.SSLSocket) -> bool:
        """Answers in a head-spoiling mode; False in the others."""
        if self.mode == "head-cut":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Len")
            conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        elif self.mode == "garbage":
            conn.sendall(b"SURPRISE 200 OK\r\nContent-Length: 10\r\n\r\n")
            self._stop.wait(30)
        elif self.mode == "silent":
            self._stop.wait(30)
        else:
            return False
        return True

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for conn in self._open:
            try:
                conn.close()
            except OSError:
                pass

    def __enter__(self) -> HostileTlsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


StartServer = Callable[[str], HostileTlsServer]


@contextmanager
def hostile_servers(data: bytes, chain: Path, key: Path) -> Iterator[StartServer]:
    """Starts hostile servers of ``data`` on demand (``start(mode)``), with no pooled
    connection of another test's server kept before or after; closes them all at the end."""
    from streamx.storage import http_pool

    http_pool._close_all()
    servers: list[HostileTlsServer] = []

    def start(mode: str) -> HostileTlsServer:
        servers.append(HostileTlsServer(data, mode, chain, key))
        return servers[-1]

    try:
        yield start
    finally:
        http_pool._close_all()
        for server in servers:
            server.close()

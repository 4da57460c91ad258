"""A small HTTP server that misbehaves on purpose, for download tests.

Modes (every response is to a GET of any path, keep-alive):
- ``stall``: headers and half the body, then silence (until the test ends);
- ``overannounce``: a ``Content-Length`` (and ``Content-Range``) larger than asked for;
- ``oversend``: the right headers, then more body bytes than announced;
- ``ignore-range``: a plain ``200`` with the whole object to a ranged GET.
"""

from __future__ import annotations

import re
import socket
import threading

__all__ = ["HostileServer"]


class HostileServer:
    def __init__(self, data: bytes, mode: str) -> None:
        self.data, self.mode = data, mode
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self, name: str = "obj.bin") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def _accept(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            pending = b""
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
                    text = head.decode("latin-1")
                    self.requests.append(text.split("\r\n", 1)[0])
                    if not self._answer(conn, text):
                        return

    def _answer(self, conn: socket.socket, head: str) -> bool:
        found = re.search(r"(?im)^range: bytes=(\d+)-(\d+)", head)
        start, end = (int(found[1]), int(found[2]) + 1) if found else (0, len(self.data))
        body = self.data[start:end]
        method = head.split(" ", 1)[0]
        status = "206 Partial Content" if found and self.mode != "ignore-range" else "200 OK"
        if self.mode == "ignore-range":
            body, start, end = self.data, 0, len(self.data)
        announced = len(body) * 2 if self.mode == "overannounce" else len(body)
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {announced}"]
        if status.startswith("206"):
            last = start + announced - 1
            lines.append(f"Content-Range: bytes {start}-{last}/{len(self.data)}")
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        if method == "HEAD":
            return True
        if self.mode == "stall":
            conn.sendall(body[: len(body) // 2])
            self._stop.wait()
            return False
        if self.mode == "overannounce":
            body += b"\0" * len(body)
        if self.mode == "oversend":
            body += b"EXTRA" * 100_000
        try:
            conn.sendall(body)
        except OSError:
            return False
        return self.mode != "oversend"

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(5)

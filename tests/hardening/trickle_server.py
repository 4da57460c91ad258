"""A server that answers every GET with a body that never ends on time: ``trickle`` sends the
right ``Content-Length`` then one byte every 50 ms; ``endless`` sends no length and bytes
until the client hangs up."""

from __future__ import annotations

import socket
import threading
import time

__all__ = ["TrickleServer"]


class TrickleServer:
    def __init__(self, size: int, mode: str) -> None:
        self.size, self.mode = size, mode
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            self.requests.append(line)
            if line.startswith("HEAD"):
                conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {self.size}\r\n\r\n".encode())
                return
            try:
                if self.mode == "trickle":
                    conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {self.size}\r\n\r\n".encode())
                    for _ in range(self.size):
                        if self._stop.wait(0.05):
                            return
                        conn.sendall(b"x")
                else:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                    block = b"y" * 65536
                    while not self._stop.is_set():
                        conn.sendall(block)
            except OSError:
                return

    def gets(self) -> int:
        return sum(1 for r in self.requests if r.startswith("GET"))

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        time.sleep(0.1)

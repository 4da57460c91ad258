"""A TCP proxy on a free loopback port that holds every other new connection back for a
while before it reaches the server: the set-up jitter of new connections on a loaded
machine (a store's TLS handshake 20-130 ms late), made the same on every run."""

from __future__ import annotations

import selectors
import socket
import threading
import time


class DelayingProxy:
    """Forwards connections to ``127.0.0.1:upstream``; connection number ``k`` (from 0)
    waits ``delay_s`` before it is connected upstream when ``k`` is even."""

    def __init__(self, upstream: int, delay_s: float) -> None:
        self._upstream, self._delay_s = upstream, delay_s
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._accepted = 0
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            delay = self._delay_s if self._accepted % 2 == 0 else 0.0
            self._accepted += 1
            threading.Thread(target=self._forward, args=(client, delay), daemon=True).start()

    def _forward(self, client: socket.socket, delay: float) -> None:
        time.sleep(delay)
        with client, socket.create_connection(("127.0.0.1", self._upstream)) as server:
            selector = selectors.DefaultSelector()
            selector.register(client, selectors.EVENT_READ, server)
            selector.register(server, selectors.EVENT_READ, client)
            while not self._closed.is_set():
                for key, _ in selector.select(timeout=0.5):
                    source, sink = key.fileobj, key.data
                    assert isinstance(source, socket.socket)
                    try:
                        data = source.recv(1 << 16)
                    except OSError:
                        data = b""
                    if not data:
                        return
                    sink.sendall(data)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()

    def __enter__(self) -> DelayingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

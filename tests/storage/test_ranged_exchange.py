"""Ranged GETs exchanged by Rust on plain HTTP (``_core.ranged_get``): a kept-alive
connection the server closed meanwhile is asked again at once, and an answer other than
the range asked for is declined and asked again through ``http.client``, which reports it."""

from __future__ import annotations

import os
import random
import re
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from streamx.storage.object_sources import source_for

pytestmark = pytest.mark.remote

DATA = random.Random(7).randbytes(100_000)


class ScriptedServer:
    """Answers every GET on its connections with ``answer(range)``; after each answer,
    waits ``linger`` seconds and hangs up when ``hang_up`` is set."""

    def __init__(self, status: int, hang_up: bool, linger: float = 0.0) -> None:
        self.status, self.hang_up, self.linger = status, hang_up, linger
        self.requests: list[tuple[int, str]] = []  # (connection number, request line)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._connections += 1
            threading.Thread(
                target=self._serve, args=(conn, self._connections), daemon=True
            ).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            pending = b""
            while True:
                while b"\r\n\r\n" not in pending:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    pending += chunk
                head, pending = pending.split(b"\r\n\r\n", 1)
                text = head.decode()
                self.requests.append((number, text.split("\r\n")[0]))
                conn.sendall(self._answer(text))
                if self.hang_up:
                    time.sleep(self.linger)
                    return

    def _answer(self, head: str) -> bytes:
        if self.status != 206:
            body = b"<Error><Code>Nope</Code></Error>"
            return (
                f"HTTP/1.1 {self.status} X\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
            )
        found = re.search(r"(?im)^range: bytes=(\d+)-(\d+)$", head)
        assert found is not None, head
        first, last = int(found[1]), int(found[2])
        body = DATA[first : last + 1]
        return (
            f"HTTP/1.1 206 Partial Content\r\nContent-Length: {len(body)}\r\n"
            f"Content-Range: bytes {first}-{last}/{len(DATA)}\r\n\r\n"
        ).encode() + body


@pytest.fixture
def memfile() -> Iterator[int]:
    fd = os.memfd_create("ranged")
    os.ftruncate(fd, len(DATA))
    yield fd
    os.close(fd)


def test_a_pooled_connection_closed_by_the_server_is_asked_again(memfile: int) -> None:
    """The server answers one GET per connection, then hangs up after a moment, as servers
    do with idle keep-alive connections: the next GET finds its pooled connection dead and
    asks again on a fresh one, without spending an attempt or failing."""
    server = ScriptedServer(206, hang_up=True, linger=0.2)
    try:
        source = source_for(f"http://127.0.0.1:{server.port}/obj")
        source.fetch_range(memfile, 0, 40_000, len(DATA), time.monotonic() + 10)
        time.sleep(0.5)  # the connection is back in the pool, and the server has hung up
        source.fetch_range(memfile, 40_000, 60_000, len(DATA), time.monotonic() + 10)
    finally:
        server.close()
    assert os.pread(memfile, len(DATA), 0) == DATA
    # The dead connection got the second request's bytes but gave no answer.
    assert [number for number, _ in server.requests] == [1, 2]


@pytest.mark.parametrize(
    ("status", "error", "match"),
    [
        (404, FileNotFoundError, "obj"),
        (403, PermissionError, "HTTP 403"),
        (503, OSError, "503"),
    ],
)
def test_an_error_answer_is_reported_and_asked_again_only_for_its_body(
    memfile: int, status: int, error: type[Exception], match: str
) -> None:
    server = ScriptedServer(status, hang_up=False)
    try:
        source = source_for(f"http://127.0.0.1:{server.port}/obj")
        with pytest.raises(error, match=match):
            source.fetch_range(memfile, 0, 1000, len(DATA), time.monotonic() + 10)
    finally:
        server.close()
    # Rust declined the answer, read its short page and kept its connection. A 404 or a 503
    # says all in its status, and is never asked for twice (a throttled GET sent again makes
    # it worse); a 403's message needs its body, which http.client asks for again, on the
    # same connection.
    asks = 2 if status == 403 else 1
    assert [line for _, line in server.requests] == ["GET /obj HTTP/1.1"] * asks
    assert [number for number, _ in server.requests] == [1] * asks
    assert os.pread(memfile, 1000, 0) == bytes(1000)

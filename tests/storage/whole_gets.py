"""What the tests of how Rust takes a throttled answer share, over plain HTTP
(``test_rust_plain_answers.py``) and over TLS (``test_rust_tls_answers.py``): two small files
to serve, one ranged GET of a whole file, with no retries, the scenario of a throttled
answer whose page is read so its connection carries the next GET, and that of a throttled
answer whose page stalls."""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from nginx_server import Nginx
from scripted_http import Request, ScriptedServer

from streamx.exceptions import HttpResponseError
from streamx.storage import throttle
from streamx.storage.http_get import get_into
from streamx.storage.http_source import plain_target

SIZE = 100_000


def write_files(root: Path) -> None:
    """``f0`` and ``f1``, ``SIZE`` bytes each, in a new ``root``."""
    root.mkdir()
    for number in range(2):
        (root / f"f{number}").write_bytes(bytes([number]) * SIZE)


def get_whole(url: str, dest: Path, seconds: float = 10) -> None:
    """One ranged GET of the whole file, no retries (a 503 raises)."""
    target = plain_target(url)
    assert target is not None
    fd = os.open(dest, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        get_into(target, fd, 0, SIZE, timeout=seconds, deadline=time.monotonic() + seconds)
    finally:
        os.close(fd)


def a_throttled_answer_keeps_its_connection(
    tmp_path: Path, tls: tuple[Path, Path] | None = None
) -> None:
    """``f0`` (206), then ``f1`` within the store's second (503), then ``f1`` once its
    ``Retry-After`` is waited out (206), over plain HTTP or, given ``tls`` (chain, key), over
    TLS. The 503's page is read, so its ``Retry-After`` is kept, the host's GETs stay on Rust,
    and one connection carries all three. The caller checks how the bodies were moved."""
    write_files(tmp_path / "root")
    with Nginx(tmp_path / "root", tls=tls, limit_req="1r/s") as nginx:
        get_whole(f"{nginx.endpoint}/f0", tmp_path / "f0")
        with pytest.raises(HttpResponseError) as refused:  # within the store's second
            get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        assert refused.value.status == 503
        assert throttle.retry_after_of(refused.value) == 1.0  # nginx's Retry-After: 1
        # The host's GETs stay on Rust: its answers' headers are read there now.
        assert not throttle.headers_wanted("127.0.0.1", nginx.port)
        time.sleep(1.1)  # the Retry-After waited out
        get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        log = nginx.log_when(lambda entries: len(entries) >= 3)
    assert (tmp_path / "f1").read_bytes() == bytes([1]) * SIZE
    assert [entry.status for entry in log] == [206, 503, 206]
    # One connection carried all three: the 503's page was read, so it went back.
    assert {entry.connection for entry in log} == {log[0].connection}


# The GET's deadline in the stalled page's scenario, and how long its page stalls at most
# (a bound for the test, should the page be waited for to the end).
_DEADLINE_S = 60.0
_STALL_S = 40.0


def short_page_then_file(
    clients: list[int], stall: threading.Event | None = None
) -> Callable[[Request, BaseHTTPRequestHandler], None]:
    """A scripted server's answers: first a ``503`` with ``Retry-After: 1`` whose page ends
    40 bytes short of its length (held open until ``stall`` is set, at most ``_STALL_S``,
    when given), then the whole file; each request's client port is appended to
    ``clients`` (its connection)."""

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        clients.append(handler.client_address[1])
        if len(clients) == 1:
            handler.send_response(503)
            handler.send_header("Retry-After", "1")
            handler.send_header("Content-Length", "50")
            handler.end_headers()
            handler.wfile.write(b"x" * 10)
            if stall is not None:
                stall.wait(_STALL_S)
            handler.close_connection = True
            return
        handler.send_response(206)
        handler.send_header("Content-Range", f"bytes 0-{SIZE - 1}/{SIZE}")
        handler.send_header("Content-Length", str(SIZE))
        handler.end_headers()
        handler.wfile.write(bytes([1]) * SIZE)

    return answer


def a_stalled_page_is_given_up(
    tmp_path: Path, tls: ssl.SSLContext | None = None, by_http_client: bool = False
) -> None:
    """A ``503`` with ``Retry-After`` whose page stops 40 bytes short and stalls: the GET
    reports the status with the ``Retry-After`` well before its deadline, and the next GET,
    on another connection, gets the file (over plain HTTP or, given ``tls``, over TLS; read
    by Rust, or ``by_http_client`` where the host's answers' headers are wanted)."""
    clients: list[int] = []  # each request's client port: its connection
    release = threading.Event()
    answer = short_page_then_file(clients, release)

    with ScriptedServer(answer, tls=tls) as server:
        if by_http_client:
            throttle.want_headers("127.0.0.1", server.port)
        began = time.monotonic()
        try:
            with pytest.raises(HttpResponseError) as refused:
                get_whole(server.url("/f1"), tmp_path / "f1", seconds=_DEADLINE_S)
            held = time.monotonic() - began
            # A correctness bound, not a timing: the page is given up in seconds.
            assert held < _DEADLINE_S / 2, f"the stalled page held the GET {held:.1f} s"
            assert refused.value.status == 503
            assert throttle.retry_after_of(refused.value) == 1.0  # kept from the head
            # Rust kept the head's fields: the host's next answers stay there.
            assert by_http_client or not throttle.headers_wanted("127.0.0.1", server.port)
            get_whole(server.url("/f1"), tmp_path / "f1")
        finally:
            release.set()
    assert (tmp_path / "f1").read_bytes() == bytes([1]) * SIZE
    assert len(clients) == 2 and clients[0] != clients[1]

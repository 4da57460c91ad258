"""How Rust's plain-HTTP ranged GETs take a throttled answer (issue 26), as its TLS sessions
do (``test_rust_tls_answers.py``).

A ranged GET that the store throttles (nginx's ``limit_req`` 503) reads the answer's short
page: the connection carries the next request, the ``Retry-After`` is kept on the error,
and the host's GETs stay on Rust (before, the page was left unread, the connection closed,
and the host's GETs went through ``http.client`` for 30 s to read the next
``Retry-After``). A page too long to read whole is left unread: no ``Retry-After``, and
the next request comes on another connection. A page cut short, or one that stalls (given up
after two seconds, not at the GET's deadline), keeps its head's ``Retry-After``, and the next
request comes on another connection.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx
from scripted_http import ScriptedServer
from whole_gets import (
    SIZE,
    a_stalled_page_is_given_up,
    a_throttled_answer_keeps_its_connection,
    get_whole,
    short_page_then_file,
    write_files,
)

from streamx import _core
from streamx.exceptions import HttpResponseError
from streamx.storage import http_pool, http_rust, throttle

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

# A 503 page over the 64 KiB Rust reads whole (nginx serves it for limit_req's refusals).
LONG_PAGE = 100_000

_Outcome = tuple[str, int, int | None, bool, int]
_Page = tuple[list[tuple[str, str]], bytes, bool]


class _RustGets:
    """Records the outcome of each ``_core.ranged_get`` (the real one, called)."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []

    def ranged_get(
        self,
        sock: int,
        file: int,
        request: bytes,
        offset: int,
        length: int,
        expected: int | None,
        seconds: float,
    ) -> tuple[_Outcome, _Page | None]:
        got = _core.ranged_get(sock, file, request, offset, length, expected, seconds)
        self.outcomes.append(got[0][0])
        return got


@pytest.fixture
def rust_gets(monkeypatch: pytest.MonkeyPatch) -> Iterator[_RustGets]:
    http_pool._close_all()
    throttle.forget_hosts()
    gets = _RustGets()
    monkeypatch.setattr(http_rust, "_core", gets)
    yield gets
    http_pool._close_all()
    throttle.forget_hosts()


def test_a_throttled_answer_read_by_rust_keeps_its_connection_and_retry_after(
    tmp_path: Path, rust_gets: _RustGets
) -> None:
    a_throttled_answer_keeps_its_connection(tmp_path)
    assert rust_gets.outcomes == ["complete", "declined", "complete"]


def test_a_throttled_answer_with_a_long_page_is_left_unread(
    tmp_path: Path, rust_gets: _RustGets
) -> None:
    write_files(tmp_path / "root")
    (tmp_path / "root" / "busy.html").write_bytes(b"b" * LONG_PAGE)
    # limit_req's refusal served from a page over the bound Rust reads whole.
    page = "error_page 503 /busy.html;"
    with Nginx(tmp_path / "root", limit_req="1r/s", locations=page) as nginx:
        get_whole(f"{nginx.endpoint}/f0", tmp_path / "f0")
        with pytest.raises(HttpResponseError) as refused:
            get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        assert refused.value.status == 503
        assert throttle.retry_after_of(refused.value) is None  # its headers were not kept
        # So the host's next answers are read through http.client, for their Retry-After.
        assert throttle.headers_wanted("127.0.0.1", nginx.port)
        time.sleep(1.1)
        get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        log = nginx.log_when(lambda entries: len(entries) >= 3)
    assert rust_gets.outcomes == ["complete", "declined"]  # the third by http.client
    assert [entry.status for entry in log] == [206, 503, 206]
    # The refused request's connection was closed: the next came on another.
    assert log[1].connection == log[0].connection
    assert log[2].connection != log[1].connection


def test_a_page_cut_short_keeps_its_retry_after_and_its_connection_is_closed(
    tmp_path: Path, rust_gets: _RustGets
) -> None:
    clients: list[int] = []  # each request's client port: its connection
    answer = short_page_then_file(clients)  # a 503 whose page ends 40 bytes short

    with ScriptedServer(answer) as server:
        url = server.url("/f1")
        with pytest.raises(HttpResponseError) as refused:
            get_whole(url, tmp_path / "f1")
        assert refused.value.status == 503
        assert throttle.retry_after_of(refused.value) == 1.0  # from the head, page or not
        assert not throttle.headers_wanted("127.0.0.1", server.port)
        get_whole(url, tmp_path / "f1")
    assert rust_gets.outcomes == ["declined", "complete"]
    assert (tmp_path / "f1").read_bytes() == bytes([1]) * SIZE
    assert len(clients) == 2 and clients[0] != clients[1]


def test_a_stalled_page_is_given_up_long_before_the_deadline(
    tmp_path: Path, rust_gets: _RustGets
) -> None:
    a_stalled_page_is_given_up(tmp_path)
    assert rust_gets.outcomes == ["declined", "complete"]

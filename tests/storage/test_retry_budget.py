"""A file's retry budget and deadline hold per file, not per part; a kept-alive connection
that never answers is retired and the request asked again on a fresh one.

Counts are taken from the server's request log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from throttle_server import Answer, Request, ThrottleServer

from streamx.exceptions import HttpResponseError
from streamx.storage import http_pool, throttle
from streamx.storage.download import DownloadTimeoutError, download_file
from streamx.storage.slots import LocalSlots

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    throttle.forget_hosts()
    http_pool._close_all()
    yield
    http_pool._close_all()


def test_failing_parts_spend_one_budget_for_the_file(tmp_path: Path) -> None:
    """8 parts, download_retry=2, 2 connections: at most 2 attempts x 2 parts in flight,
    not 2 requests (or, asked twice, 4) for each of the 8 parts."""
    server = ThrottleServer(os.urandom(8 * MIB), lambda request: Answer("status", 500))
    try:
        with pytest.raises(HttpResponseError, match="500"):
            download_file(
                server.url(),
                str(tmp_path / "f"),
                expected_size=8 * MIB,
                retry=2,
                slots=LocalSlots(2),
            )
        gets = [e for e in server.requests() if e.request.method == "GET"]
    finally:
        server.close()
    assert 2 <= len(gets) <= 4
    assert not (tmp_path / "f").exists()


def test_stalled_parts_spend_one_deadline_for_the_file(tmp_path: Path) -> None:
    """Every part stalls: the file gets retry x timeout in all, so one connection makes at
    most a request per timeout (not 2 per part: 8 for 4 parts)."""
    server = ThrottleServer(os.urandom(4 * MIB), lambda request: Answer("stall"))
    try:
        with pytest.raises(DownloadTimeoutError):
            download_file(
                server.url(),
                str(tmp_path / "f"),
                expected_size=4 * MIB,
                retry=2,
                timeout=0.5,
                slots=LocalSlots(1),
            )
        gets = [e for e in server.requests() if e.request.method == "GET"]
    finally:
        server.close()
    assert 1 <= len(gets) <= 2
    assert {e.request.range for e in gets} == {(0, MIB - 1)}


def _hang_on_old_connections(old: set[int]) -> ThrottleServer:
    """Answers each connection's first request; later requests on the connections in
    ``old`` (once the test fills it) get no answer at all."""

    def decide(request: Request) -> Answer:
        if request.connection in old and request.index_on_connection >= 1:
            return Answer("hang")
        return Answer("ok")

    return ThrottleServer(os.urandom(4 * MIB), decide)


@pytest.mark.parametrize("ranged", [False, True])
def test_a_pooled_connection_that_never_answers_is_retired(tmp_path: Path, ranged: bool) -> None:
    old: set[int] = set()
    server = _hang_on_old_connections(old)
    size = 4 * MIB if ranged else 100_000
    data = server.data[:size]
    server.data = data
    try:
        slots = LocalSlots(2)
        download_file(server.url("a"), str(tmp_path / "a"), expected_size=size, slots=slots)
        old.update(e.request.connection for e in server.requests())
        download_file(
            server.url("b"),
            str(tmp_path / "b"),
            expected_size=size,
            retry=2,
            timeout=1.0,
            slots=slots,
        )
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "b").read_bytes() == data
    second = [
        e.request for e in logged if e.request.connection in old and e.request.index_on_connection
    ]
    assert second  # the kept-alive connection was tried, and never answered
    answered = [e for e in logged if e.status in (200, 206) and e.request.connection not in old]
    assert answered  # the file came over fresh connections
    assert sum(1 for e in logged if e.request.connection in old and e.status == 0) <= 2

"""Urgent-first start slots (streamx.storage.request_pace): under a pace, a request a reader
waits for starts before the requests fetched ahead that queued before it, as a real nginx
logs them. And a node's pace file is made only once the host throttles: a calm host's
request starts take no file lock."""

from __future__ import annotations

import http.client
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from nginx_server import LogEntry, Nginx, find_nginx

from streamx.storage import request_pace
from streamx.storage.pace_file import pace_path
from streamx.storage.request_pace import FIRST_PACE, RequestPace

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")

AHEAD, URGENT = 8, 2


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Nginx]:
    (tmp_path / "root").mkdir()
    for name in ("ahead", "urgent"):
        (tmp_path / "root" / name).write_bytes(b"x" * 1000)
    with Nginx(tmp_path / "root") as nginx:
        yield nginx


@pytest.fixture(autouse=True)
def held_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pace stays at FIRST_PACE: no raises, no quiet doubling."""
    monkeypatch.setattr(request_pace, "RAISE_FACTOR", 1.0)
    monkeypatch.setattr(request_pace, "RAISE_STEP", 0.0)
    monkeypatch.setattr(request_pace, "QUIET_S", 1e6)


def _get(url: str) -> None:
    parsed = urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=30)
    try:
        connection.request("GET", parsed.path)
        connection.getresponse().read()
    finally:
        connection.close()


def _paced_gets(server: Nginx, pace: RequestPace, urgent_first: bool) -> list[LogEntry]:
    """``AHEAD`` look-ahead GETs queued on the pace, then ``URGENT`` GETs a reader waits
    for (marked urgent when ``urgent_first``), as nginx logged them, by start."""
    logged = len(server.log())

    def get(name: str, urgent: bool) -> None:
        pace.take(urgent)
        _get(f"{server.endpoint}/{name}")

    ahead = [threading.Thread(target=get, args=("ahead", False)) for _ in range(AHEAD)]
    for thread in ahead:
        thread.start()
    # The look-ahead's queue is running: its first request reached the server.
    server.log_when(lambda e: len(e) > logged)
    urgent = [threading.Thread(target=get, args=("urgent", urgent_first)) for _ in range(URGENT)]
    for thread in urgent:
        thread.start()
    for thread in ahead + urgent:
        thread.join()
    entries = server.log_when(lambda e: len(e) >= logged + AHEAD + URGENT)[logged:]
    return sorted(entries, key=lambda e: e.start)


def _ahead_after_urgent(entries: list[LogEntry]) -> int:
    """Look-ahead requests started after the last urgent one."""
    last = max(i for i, e in enumerate(entries) if e.uri == "/urgent")
    return sum(e.uri == "/ahead" for e in entries[last + 1 :])


@pytest.mark.parametrize("shared", [False, True])
def test_urgent_requests_start_before_the_queued_look_ahead(
    server: Nginx, tmp_path: Path, shared: bool
) -> None:
    directory = str(tmp_path / "connections") if shared else None
    if directory is not None:
        os.makedirs(directory)
    pace = RequestPace("store.example", directory)
    pace.throttled(pace.take())
    assert pace.rate == FIRST_PACE
    first = _paced_gets(server, pace, urgent_first=True)
    assert len(first) == AHEAD + URGENT
    # Taken in turn (every request urgent, as before): the look-ahead queued first goes
    # first, and the reader's requests wait for all of it.
    in_turn = _paced_gets(server, pace, urgent_first=False)
    assert _ahead_after_urgent(in_turn) == 0
    # Urgent first: the reader's requests take the next slots; most of the look-ahead
    # queued before them starts after them.
    assert _ahead_after_urgent(first) >= AHEAD // 2


def test_the_node_file_is_made_by_the_first_throttled_answer(tmp_path: Path) -> None:
    directory = str(tmp_path)
    path = pace_path(directory, "store.example")
    pace = RequestPace("store.example", directory)
    for _ in range(60):
        pace.take()
    assert pace.rate is None
    assert not os.path.lexists(path)  # calm: no file, no lock
    other = RequestPace("store.example", directory)  # another process of the node
    assert other.rate is None
    assert pace.throttled(time.monotonic())
    assert os.path.isfile(path)
    # This process's calm starts went into the node's pace: half the rate seen.
    assert pace.rate == 30.0
    assert other.rate == 30.0  # the node's clock from here on


def test_a_listener_hears_of_the_first_pace_once(tmp_path: Path) -> None:
    request_pace.forget_paces()
    heard: list[int] = []
    try:
        pace = request_pace.pace_for("store.example")
        request_pace.when_paced(lambda: heard.append(1))
        pace.take()
        assert heard == []
        pace.throttled(pace.take())
        assert heard == [1]
        pace.take()
        request_pace.when_paced(lambda: heard.append(2))  # paced already: at once
        assert heard == [1, 2]
    finally:
        request_pace.forget_paces()

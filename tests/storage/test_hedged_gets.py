"""Hedged GETs: a part that stalls while its peers arrive is asked again, the first answer
wins, and the file is intact. Counts come from the server's request log."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from throttle_server import Answer, Request, ThrottleServer

from streamx.runtime import metrics
from streamx.storage import hedge, throttle
from streamx.storage.download import download_file
from streamx.storage.slots import LocalSlots

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _own_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Counts go to a metrics directory of this test's own (another test may have left
    this process counting into its directory)."""
    monkeypatch.setenv("STREAMX_METRICS_DIR", str(tmp_path / "own-metrics"))
    (tmp_path / "own-metrics").mkdir()
    metrics.begin_epoch(0)
    yield
    metrics._forget_table()  # the next user counts where the (restored) environment says


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    throttle.forget_hosts()


def _stall_once(starts: set[int]) -> tuple[ThrottleServer, bytes]:
    data = os.urandom(16 * MIB)
    lock = threading.Lock()
    stalled: set[int] = set()

    def decide(request: Request) -> Answer:
        start = request.range[0] if request.range else -1
        with lock:
            if start in starts and start not in stalled:
                stalled.add(start)
                return Answer("stall")
        return Answer("ok")

    return ThrottleServer(data, decide), data


def _fetch(
    server: ThrottleServer,
    path: Path,
    size: int,
    *,
    timeout: int,
    retry: int = 2,
    connections: int = 4,
) -> None:
    """``server``'s file of ``size`` bytes into ``path``, in parts over ``connections``."""
    download_file(
        server.url(),
        str(path),
        expected_size=size,
        timeout=timeout,
        retry=retry,
        slots=LocalSlots(connections),
    )


def test_a_stalled_part_is_hedged_and_the_file_is_intact(tmp_path: Path) -> None:
    server, data = _stall_once({5 * MIB})
    before = metrics.snapshot()["hedged_parts"]
    try:
        _fetch(server, tmp_path / "f", len(data), timeout=60)
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    asks = [e for e in logged if e.request.range == (5 * MIB, 6 * MIB - 1)]
    assert len(asks) == 2  # the stalled one and its hedge
    assert len(logged) == 17  # 16 parts and one hedge: traffic grew by one part
    assert metrics.snapshot()["hedged_parts"] - before == 1
    assert sorted(os.listdir(tmp_path)) == ["f", "own-metrics"]  # no scratch file left


def test_hedging_off_waits_for_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    server, data = _stall_once({3 * MIB})
    try:
        _fetch(server, tmp_path / "f", len(data), timeout=2)
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    assert len(logged) == 17  # the stalled part was asked again only after its timeout


def test_hedges_are_bounded(tmp_path: Path) -> None:
    """Every part from the fourth on stalls once: at most two hedges run at once, and a
    process hedges at most one part in ten (plus one); the rest wait for their timeout."""
    server, data = _stall_once({n * MIB for n in range(4, 16)})
    try:
        _fetch(server, tmp_path / "f", len(data), timeout=3, retry=2, connections=16)
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    # 16 parts, 12 stalled ones asked again after their timeout or by a hedge: never
    # more than one extra request per stalled part, and never twice the traffic.
    assert len(logged) <= 16 + 12


def _lost_original(part: int) -> tuple[ThrottleServer, bytes]:
    """The first GET of ``part`` is held until its hedge asks, then fails (500); the hedge
    is answered a moment later: the hedge wins while its original is no longer fetching."""
    data = os.urandom(16 * MIB)
    lock = threading.Lock()
    asked: list[int] = []
    hedge_asked, original_failed = threading.Event(), threading.Event()

    def decide(request: Request) -> Answer:
        if request.range is None or request.range[0] != part:
            return Answer("ok")
        with lock:
            asked.append(part)
            nth = len(asked)
        if nth == 1:
            hedge_asked.wait(30)
            original_failed.set()
            return Answer("status", 500)
        if nth == 2:
            hedge_asked.set()
            original_failed.wait(30)
            time.sleep(0.3)  # the client has taken the 500 in by then
        return Answer("ok")

    return ThrottleServer(data, decide), data


def test_a_hedge_that_wins_after_its_original_failed_writes_nothing_after_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hedge's thread copies its bytes into place while the original's thread, which
    found them taken, has ended: the download returns only once that copy is done (before,
    it returned with the part's bytes missing and the copy went on into a closed fd)."""
    real_copy = hedge.copy_range
    returned = threading.Event()
    copies: list[tuple[bool, bool]] = []  # (on the hedge's thread, after the download returned)
    copied = threading.Event()

    def held_copy(src: int, dst: int, start: int, length: int) -> None:
        on_hedge = "hedge" in threading.current_thread().name
        try:
            if on_hedge:
                returned.wait(2)  # gives a download that does not wait for it time to return
            copies.append((on_hedge, returned.is_set()))
            real_copy(src, dst, start, length)
        finally:
            copied.set()

    monkeypatch.setattr(hedge, "copy_range", held_copy)
    for round_ in range(5):
        server, data = _lost_original(5 * MIB)
        returned.clear()
        copied.clear()
        copies.clear()
        target = tmp_path / f"f{round_}"
        try:
            _fetch(server, target, len(data), timeout=60, retry=1)
            returned.set()
            assert copied.wait(10)
        finally:
            server.close()
        assert copies and not any(late for _, late in copies)
        assert target.read_bytes() == data
        if copies[0][0]:
            break  # the hedge's own thread copied: the case this test is for
    else:
        pytest.fail("the hedge's thread never copied its bytes in 5 rounds")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # no scratch left


def test_a_hedge_that_cannot_open_its_scratch_file_holds_nothing_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hedge's scratch file cannot be created (here: its directory is gone): the hedge
    gives up and the stalled part comes after its timeout (before, the download waited for
    the dead hedge forever)."""
    monkeypatch.setattr(hedge, "scratch_path", lambda tmp, start: str(tmp_path / "gone" / "h.tmp"))
    server, data = _stall_once({5 * MIB})
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            _fetch(server, tmp_path / "f", len(data), timeout=3)
        except BaseException as err:
            errors.append(err)

    thread = threading.Thread(target=fetch, daemon=True)
    try:
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "the download still waits for its hedge"
    finally:
        server.close()
    assert errors == []
    assert (tmp_path / "f").read_bytes() == data

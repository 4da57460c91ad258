"""Hedged GETs: a part that stalls while its peers arrive is asked again, the first answer
wins, and the file is intact. Counts come from the server's request log."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from throttle_server import Answer, Request, ThrottleServer

from streamx.runtime import metrics
from streamx.storage import throttle
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


def test_a_stalled_part_is_hedged_and_the_file_is_intact(tmp_path: Path) -> None:
    server, data = _stall_once({5 * MIB})
    before = metrics.snapshot()["hedged_parts"]
    try:
        download_file(
            server.url(),
            str(tmp_path / "f"),
            expected_size=len(data),
            timeout=60,
            slots=LocalSlots(4),
        )
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
        download_file(
            server.url(),
            str(tmp_path / "f"),
            expected_size=len(data),
            timeout=2,
            slots=LocalSlots(4),
        )
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
        download_file(
            server.url(),
            str(tmp_path / "f"),
            expected_size=len(data),
            timeout=3,
            retry=2,
            slots=LocalSlots(16),
        )
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    # 16 parts, 12 stalled ones asked again after their timeout or by a hedge: never
    # more than one extra request per stalled part, and never twice the traffic.
    assert len(logged) <= 16 + 12

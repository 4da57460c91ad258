"""Throttling (503 SlowDown, 429) as the stores document it, against a server started here.

Every assertion is on the server's own request log: how many requests it saw, the gaps it
saw between them, and how many were in flight at once. None is on our code's timings.
"""

from __future__ import annotations

import contextlib
import email.utils
import itertools
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx
from throttle_server import Answer, Request, ThrottleServer

from streamx.runtime import metrics
from streamx.storage import http_pool, request_pace, throttle
from streamx.storage.download import download_file
from streamx.storage.slots import ConnectionSlots, LocalSlots
from streamx.storage.throttle import ThrottledError, parse_retry_after

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
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    # A pace lifts only after 30 quiet seconds (test_request_pace.py); these tests watch it
    # probe back up and lift without waiting that long.
    monkeypatch.setattr(request_pace, "LIFT_QUIET_S", 0.0)
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    throttle.forget_hosts()  # each test starts from an unthrottled host
    yield
    throttle.forget_hosts()


@pytest.fixture(autouse=True)
def _throttle_log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The throttle's warnings reach caplog whatever earlier tests in this process did to
    logging (a library's logging config can disable loggers that already exist, or raise
    their level)."""
    monkeypatch.setattr(throttle.logger, "disabled", False)
    caplog.set_level(logging.WARNING, logger=throttle.logger.name)


def _data(size: int) -> bytes:
    return os.urandom(size)


def _gets(server: ThrottleServer) -> list[Request]:
    return [entry.request for entry in server.requests() if entry.request.method == "GET"]


def test_retry_after_in_seconds_is_waited_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = _data(100_000)
    count = iter(range(1_000))

    def decide(request: Request) -> Answer:
        return Answer("status", 503, "1") if next(count) < 2 else Answer("ok")

    server = ThrottleServer(data, decide)
    try:
        before = metrics.snapshot()["throttled"]
        download_file(server.url(), str(tmp_path / "f"), expected_size=len(data))
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    assert [entry.status for entry in logged] == [503, 503, 200]
    for throttled, following in itertools.pairwise(logged):
        # The server's own clock: the next request came at least Retry-After later.
        assert following.request.arrived - throttled.answered >= 1.0
    assert metrics.snapshot()["throttled"] - before == 2
    # One log line for the host, not one per throttled answer.
    lines = [r for r in caplog.records if r.name == "streamx.storage.throttle"]
    assert len(lines) == 1
    assert f"127.0.0.1:{server.port} is throttling (HTTP 503)" in lines[0].getMessage()


def test_retry_after_as_an_http_date_is_waited_out(tmp_path: Path) -> None:
    data = _data(50_000)
    count = iter(range(1_000))

    def decide(request: Request) -> Answer:
        if next(count):
            return Answer("ok")
        return Answer("status", 429, email.utils.formatdate(time.time() + 3, usegmt=True))

    server = ThrottleServer(data, decide)
    try:
        download_file(server.url(), str(tmp_path / "f"), expected_size=len(data))
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    assert [entry.status for entry in logged] == [429, 200]
    # The date has whole seconds: 3 s ahead, as written, is at least 2 s ahead.
    assert logged[1].request.arrived - logged[0].answered >= 2.0


def test_parse_retry_after() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert parse_retry_after("99999") == 120.0  # an hour-long ask is capped


def test_throttling_forever_fails_naming_url_status_and_tries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_THROTTLE_RETRIES", "3")
    server = ThrottleServer(_data(10_000), lambda request: Answer("status", 503, "0"))
    try:
        with pytest.raises(ThrottledError) as caught:
            download_file(server.url("slow.bin"), str(tmp_path / "f"), expected_size=10_000)
        gets = _gets(server)
    finally:
        server.close()
    message = str(caught.value)
    assert server.url("slow.bin") in message
    assert "503" in message
    assert "3 tries" in message
    assert caught.value.tries == 3
    assert len(gets) == 3
    assert not (tmp_path / "f").exists()


def test_a_throttled_range_is_asked_once_per_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranged parts go through Rust's GET; a 429 it declines is not asked again at once."""
    monkeypatch.setenv("STREAMX_THROTTLE_RETRIES", "4")
    server = ThrottleServer(_data(4 * MIB), lambda request: Answer("status", 429))
    try:
        with pytest.raises(ThrottledError, match="4 tries"):
            download_file(
                server.url(), str(tmp_path / "f"), expected_size=4 * MIB, slots=LocalSlots(1)
            )
        gets = _gets(server)
    finally:
        server.close()
    assert len(gets) == 4
    assert {request.range for request in gets} == {(0, MIB - 1)}


def test_retry_after_is_honoured_on_ranged_parts_after_the_first_answer(tmp_path: Path) -> None:
    """Rust reads ranged GETs and keeps no headers: its first 503 is waited out with the
    backoff, and the host's later answers are read whole, so Retry-After counts again."""
    data = _data(2 * MIB)
    count = iter(range(1_000))

    def decide(request: Request) -> Answer:
        return Answer("status", 503, "1") if next(count) < 2 else Answer("ok")

    server = ThrottleServer(data, decide)
    try:
        download_file(
            server.url(), str(tmp_path / "f"), expected_size=len(data), slots=LocalSlots(1)
        )
        logged = server.requests()
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    assert [entry.status for entry in logged] == [503, 503, 206, 206]
    assert [entry.request.range for entry in logged[:3]] == [(0, MIB - 1)] * 3
    assert logged[2].request.arrived - logged[1].answered >= 1.0


def test_request_rate_and_concurrency_fall_on_throttling_and_recover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A throttled host first gets its request starts spaced out (its pace) and the rest of
    the file in fewer, larger GETs; its concurrency falls once throttling goes on through
    several cuts. Both come back once the throttling stops.

    Nothing here hangs on how fast a loaded machine runs: four of a file's parts are
    answered once all four arrived (the concurrency the settings allow is shown, not raced
    for), a 503 is answered at once, and the spacing is the one the pace gave the
    requests' starts, on the clock the server's decisions are taken on."""
    data = _data(32 * MIB)
    lock = threading.Lock()
    seen = [0]
    phase = {"file": 0}  # requests of the file being fetched so far
    together = {"f": threading.Barrier(4), "after": threading.Barrier(4)}
    refused_at: list[float] = []  # time.monotonic() of each 503 decided
    current = ["f"]

    def decide(request: Request) -> Answer:
        with lock:
            seen[0] += 1
            number = seen[0]
            phase["file"] += 1
            # A file's first GET is answered alone (it tells whether ranges are
            # honoured); the parts after it come at once, and four of them are held
            # until all four arrived.
            held = 2 <= phase["file"] <= 5 and current[0] in together
        if held:
            with contextlib.suppress(threading.BrokenBarrierError):  # asserted below
                together[current[0]].wait(timeout=30)
        if 9 <= number <= 24:
            with lock:
                refused_at.append(time.monotonic())
            return Answer("status", 503, delay_s=0.0)
        return Answer("ok")

    starts: list[float] = []  # every start slot the pace gave, in time.monotonic()
    take = request_pace.RequestPace.take

    def recorded(pace: request_pace.RequestPace, urgent: bool = True) -> float:
        start = take(pace, urgent)
        with lock:
            starts.append(start)
        return start

    monkeypatch.setattr(request_pace.RequestPace, "take", recorded)

    def fetch(name: str, path: Path) -> None:
        with lock:
            current[0], phase["file"] = name, 0
        download_file(server.url(name), str(path), expected_size=len(data), slots=LocalSlots(8))

    server = ThrottleServer(data, decide, delay_s=0.05)
    try:
        fetch("f", tmp_path / "f")
        logged = server.requests()
        with lock:
            paced = sorted(starts)
        (limit,) = throttle._LIMITS.values()
        # Later files, as throttling has stopped: the pace probes back up and lifts.
        for step in itertools.count():
            assert step < 100, "the pace never lifted"
            if limit.calm:
                break
            fetch("probe", tmp_path / "p")
        before = len(server.requests())
        fetch("after", tmp_path / "a")
        after = server.requests()[before:]
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == (tmp_path / "a").read_bytes() == data
    statuses = [entry.status for entry in logged]
    assert statuses.count(503) == 16
    ranges = sorted(e.request.range for e in logged if e.status == 206 and e.request.range)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data) - 1  # every byte, once
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    assert len(ranges) < 32  # the parts left when throttling began came in larger GETs
    throttled = [entry for entry in logged if entry.status == 503]
    # Before: the connections the settings allow.
    assert max(entry.request.in_flight for entry in logged[:8]) >= 4
    # After a dozen throttled answers, one or two requests at once, their starts spaced.
    twelfth, last = throttled[11].answered, throttled[-1].answered
    during = [e.request for e in logged if twelfth <= e.request.arrived <= last]
    assert during
    assert max(request.in_flight for request in during) <= 2
    # Paced at 10 a second (the first pace: 8 starts seen before the cut, halved, is less):
    # every two starts the pace gave from the 12th refusal to the last are 1/12 s apart or
    # more. A late thread may send its request late, but never starts it before its slot.
    window = [start for start in paced if refused_at[11] <= start <= refused_at[-1]]
    assert len(window) >= 2
    assert all(b - a >= 1 / 12 for a, b in itertools.pairwise(window))
    # Throttling stopped: the pace lifted, the parts and the concurrency came back.
    assert len(after) == 32
    assert max(entry.request.in_flight for entry in after) >= 4


def test_the_node_wide_slots_follow_a_throttled_host(tmp_path: Path) -> None:
    data = _data(8 * MIB)
    count = iter(range(1_000))
    node = ConnectionSlots(str(tmp_path / "slots"), 8)  # what any process of the node reads

    def decide(request: Request) -> Answer:
        # Throttling that goes on through several cuts of the pace (one a second at most):
        # 503s from the 7th request on until the node's published limit fell, however long
        # a loaded machine takes to get there (the retries allow well over 10 s).
        if next(count) >= 6 and node.limit() == 8:
            return Answer("status", 503)
        return Answer("ok")

    slots = ConnectionSlots(str(tmp_path / "slots"), 8)
    server = ThrottleServer(data, decide, delay_s=0.02)
    try:
        assert slots.limit() == 8
        download_file(server.url(), str(tmp_path / "f"), expected_size=len(data), slots=slots)
        statuses = [entry.status for entry in server.requests()]
    finally:
        server.close()
    assert (tmp_path / "f").read_bytes() == data
    assert 503 in statuses and statuses[-1] == 206  # throttled, then served
    published = (tmp_path / "slots" / "limit").read_text().split()
    # Lowered by the throttled process, not yet back: 8 parts, 6 answered before the
    # throttling began, so at most 2 answers (+1 each) after the limit was halved.
    assert 1 <= int(published[0]) < 8
    other = ConnectionSlots(str(tmp_path / "slots"), 8)  # another process's view
    assert other.limit() == int(published[0])


def test_nginx_limit_req_503s_are_waited_out_and_no_part_fails(tmp_path: Path) -> None:
    """nginx's limit_req refuses what comes faster than 5 requests/s with 503 and
    Retry-After: 1; the file arrives whole, every byte answered exactly once with 206 (the
    parts left when the throttling began in fewer, larger GETs).

    The parts after the first GET are sent at once: at 5 a second, nginx refuses any that
    come within 200 ms of the one before, which a loaded machine does not spread them
    past (at 20 a second, 50 ms, it could: then nothing would be refused)."""
    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    data = _data(24 * MIB)
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "blob").write_bytes(data)
    before = metrics.snapshot()["throttled"]
    with Nginx(tmp_path / "root", limit_req="5r/s") as server:
        download_file(
            f"{server.endpoint}/blob",
            str(tmp_path / "f"),
            expected_size=len(data),
            slots=LocalSlots(8),
        )
        throttled = metrics.snapshot()["throttled"] - before
        log = server.log_when(
            lambda entries: sum(e.sent for e in entries if e.status == 206) >= len(data)
        )
    assert (tmp_path / "f").read_bytes() == data
    answered = sorted(
        (int(a), int(b))
        for e in log
        if e.status == 206
        for a, b in [e.range.removeprefix("bytes=").split("-")]
    )
    assert answered[0][0] == 0 and answered[-1][1] == len(data) - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(answered))  # each byte once
    assert len(answered) < 24  # the throttled host got fewer, larger GETs
    refused = sum(1 for e in log if e.status == 503)
    assert refused > 0  # nginx did throttle
    assert refused == throttled  # and each refusal was counted once, asked for once
    assert len(log) == len(answered) + refused


def test_a_range_read_waits_out_throttling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Range reads (a sample read while its shard downloads) sit outside a download's
    budget: they wait out throttled answers through throttle.waiting_out."""
    from streamx.storage.object_sources import source_for

    monkeypatch.setenv("STREAMX_THROTTLE_RETRIES", "5")
    data = _data(300_000)
    count = iter(range(1_000))

    def decide(request: Request) -> Answer:
        return Answer("status", 429, "0") if next(count) < 3 else Answer("ok")

    server = ThrottleServer(data, decide)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        source = source_for(server.url())

        def get() -> None:
            source.fetch_range(fd, 1000, 5000, len(data), time.monotonic() + 10)

        throttle.waiting_out(get, server.url())
        statuses = [entry.status for entry in server.requests()]
        assert os.pread(fd, 5000, 1000) == data[1000:6000]
    finally:
        os.close(fd)
        server.close()
    assert statuses == [429, 429, 429, 206]


@pytest.mark.parametrize("size", [100_000, 3 * MIB])
def test_throttling_forever_over_https_fails_naming_url_status_and_tries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """Over TLS with a certificate made here (Rust's TLS GET for a whole object and for
    parts): the same error after the same number of requests as over plain HTTP."""
    from https_certs import trust_test_ca

    certs = trust_test_ca(tmp_path, monkeypatch, ("AWS_CA_BUNDLE",))
    monkeypatch.setenv("STREAMX_THROTTLE_RETRIES", "3")
    http_pool._close_all()
    server = ThrottleServer(
        _data(size),
        lambda request: Answer("status", 503, "0"),
        tls=(str(certs.chain), str(certs.key)),
    )
    try:
        with pytest.raises(ThrottledError) as caught:
            download_file(
                server.url("hot.bin"), str(tmp_path / "f"), expected_size=size, slots=LocalSlots(1)
            )
        gets = _gets(server)
    finally:
        server.close()
        http_pool._close_all()
    assert server.url("hot.bin").startswith("https://")
    assert server.url("hot.bin") in str(caught.value)
    assert "503" in str(caught.value) and "3 tries" in str(caught.value)
    assert len(gets) == 3
    assert not (tmp_path / "f").exists()


def test_a_throttling_host_gets_fewer_larger_parts(tmp_path: Path) -> None:
    """While a host is paced, a file is split into the parts its pace allows
    (``AdaptiveLimit.requests_for_files``; one GET at 1 request a second): a throttling
    store counts requests, not bytes. Once the pace has probed back up and lifted, the parts are the
    configured size again."""
    data = _data(8 * MIB)
    server = ThrottleServer(data)
    counts: list[list[Request]] = []
    wanted: list[int | None] = []
    try:
        for name in "abc":
            before = len(_gets(server))
            if name in "bc":  # throttled rounds, as answers of 503 would make them
                (limit,) = throttle._LIMITS.values()
                limit.throttled(time.monotonic(), 503)
                while name == "c" and (limit.pace.rate or 0) > 1:
                    limit.throttled(time.monotonic(), 503)
                wanted.append(limit.requests_for_files(len(data)))
            download_file(server.url(name), str(tmp_path / name), expected_size=len(data))
            counts.append(_gets(server)[before:])
        # Answers to paced requests raise the pace until it lifts.
        for step in itertools.count():
            assert step < 200, "the pace never lifted"
            if limit.calm:
                break
            download_file(server.url("probe"), str(tmp_path / "probe"), expected_size=len(data))
        before = len(_gets(server))
        download_file(server.url("d"), str(tmp_path / "d"), expected_size=len(data))
        d = _gets(server)[before:]
    finally:
        server.close()
    for name in "abcd":
        assert (tmp_path / name).read_bytes() == data
    a, b, c = counts
    assert len(a) == len(d) == 8  # 1 MiB parts
    wanted_b, wanted_c = wanted
    assert wanted_b is not None and len(b) == wanted_b < 8
    assert wanted_c == 1
    if len(b) > 1:
        ranges = sorted(r.range for r in b if r.range is not None)
        assert len(ranges) == len(b) and ranges[0][0] == 0 and ranges[-1][1] == 8 * MIB - 1
    assert len(c) == 1 and c[0].range is None  # one whole GET

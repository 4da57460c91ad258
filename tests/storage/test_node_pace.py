"""The node-wide request pace (streamx.storage.pace_file): the processes of a node take
their start slots from one clock per host, kept in a file beside the connection slots.

Real processes (spawned) ask a real nginx whose ``limit_req`` refuses any request that
comes within its interval of the last one admitted, keyed by client address, as a store
throttles one node. The pace is held at 10 requests a second in every process."""

from __future__ import annotations

import fcntl
import itertools
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from nginx_server import LogEntry, Nginx, find_nginx
from node_pace_client import ask_paced

from streamx.storage import request_pace
from streamx.storage.pace_file import PaceFile, pace_path
from streamx.storage.request_pace import FIRST_PACE, RequestPace

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")

PER_PROCESS = 16
# The server admits one request per 1/15 s: two processes at FIRST_PACE (10/s) each collide
# unless they take turns (10/s for the node, 0.1 s apart).
SERVER_RATE = "15r/s"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Nginx]:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "object").write_bytes(b"x" * 1000)
    with Nginx(tmp_path / "root", limit_req=SERVER_RATE) as nginx:
        yield nginx


def _two_processes(server: Nginx, directories: tuple[str, str]) -> list[LogEntry]:
    """Both clients' requests, as nginx logged them (its pace-setting first cuts aside)."""
    spawn = multiprocessing.get_context("spawn")
    url = f"{server.endpoint}/object"
    logged = len(server.log())
    with ProcessPoolExecutor(2, mp_context=spawn) as pool:
        # Both processes are started (imports done) before the agreed start.
        list(pool.map(time.sleep, [0.2, 0.2]))
        start_at = time.time() + 1.0
        runs = [pool.submit(ask_paced, url, d, PER_PROCESS, start_at) for d in directories]
        statuses = [run.result(timeout=120) for run in runs]
    assert all(len(s) == PER_PROCESS for s in statuses)
    return server.log_when(lambda e: len(e) >= logged + 2 * PER_PROCESS)[logged:]


def _refused(entries: list[LogEntry]) -> int:
    return sum(e.status == 503 for e in entries)


def _too_close(entries: list[LogEntry]) -> int:
    """Requests that reached the server within half the pace's interval of the one before."""
    starts = sorted(e.start for e in entries)
    return sum(b - a < 0.5 / FIRST_PACE for a, b in itertools.pairwise(starts))


def test_two_processes_take_turns_from_one_clock(server: Nginx, tmp_path: Path) -> None:
    shared = str(tmp_path / "node" / "connections")
    os.makedirs(shared)
    together = _two_processes(server, (shared, shared))
    apart = [str(tmp_path / "a"), str(tmp_path / "b")]
    for directory in apart:
        os.makedirs(directory)
    alone = _two_processes(server, (apart[0], apart[1]))
    assert len(together) >= 2 * PER_PROCESS and len(alone) >= 2 * PER_PROCESS
    # Each on its own clock, the two processes start within the server's interval of each
    # other about every other request, and the server refuses one of the two.
    assert _refused(alone) >= PER_PROCESS // 2
    assert _too_close(alone) >= PER_PROCESS // 2
    # On one clock they take turns: spaced by the pace, hardly ever refused.
    assert _refused(together) * 4 <= _refused(alone)
    assert _too_close(together) * 4 <= _too_close(alone)


def _hold_the_lock_then_wait(path: str, ready: str) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    Path(ready).touch()
    time.sleep(600)


def _pace_and_take(directory: str) -> float:
    request_pace.share_paces(directory)
    pace = request_pace.pace_for("store.example")
    pace.throttled(pace.take())
    return pace.take()


def test_a_killed_holder_does_not_block_the_others(tmp_path: Path) -> None:
    """A process killed (SIGKILL) while it holds the pace file's lock: the kernel drops
    the lock with the process, and the next process paces from the file at once."""
    directory = str(tmp_path / "connections")
    os.makedirs(directory)
    path = pace_path(directory, "store.example")
    ready = str(tmp_path / "ready")
    spawn = multiprocessing.get_context("spawn")
    holder = spawn.Process(target=_hold_the_lock_then_wait, args=(path, ready))
    holder.start()
    try:
        while not os.path.exists(ready):
            assert holder.is_alive()
            time.sleep(0.01)
        # Really held: nobody else gets it now.
        with open(path, "rb") as file, pytest.raises(BlockingIOError):
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        assert holder.pid is not None
        os.kill(holder.pid, signal.SIGKILL)
        holder.join()
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        started = pool.submit(_pace_and_take, directory).result(timeout=60)
    assert started > 0
    pace = RequestPace("store.example", directory)
    assert pace.rate == FIRST_PACE  # the other process's cut is the node's


def test_a_torn_or_foreign_record_reads_as_unpaced(tmp_path: Path) -> None:
    """What a process killed mid-write, or anything else, left in the file never sticks
    the clock: an unreadable record is a fresh, unpaced state, rewritten on first use."""
    directory = str(tmp_path)
    path = pace_path(directory, "store.example")
    for garbage in (b"SXP1" + b"\xff" * 40, b"\x00" * 3, os.urandom(3000)):
        Path(path).write_bytes(garbage)
        pace = RequestPace("store.example", directory)
        assert pace.rate is None
        pace.throttled(pace.take())
        assert pace.rate == FIRST_PACE
    # A clock stepped back (a reservation far in the future) is not waited for.
    with PaceFile(path).held() as state:
        assert state is not None
        state.next = time.monotonic() + 3600.0
    assert RequestPace("store.example", directory).rate is None


def test_a_planted_symlink_is_not_followed(tmp_path: Path) -> None:
    """Another local user's link in the slots' directory neither feeds the pace nor
    redirects its writes: the process paces alone."""
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    directory = tmp_path / "connections"
    directory.mkdir()
    os.symlink(target, pace_path(str(directory), "store.example"))
    pace = RequestPace("store.example", str(directory))
    pace.throttled(pace.take())
    assert pace.rate == FIRST_PACE
    assert target.read_bytes() == b""


def test_the_connection_slots_share_the_pace(tmp_path: Path) -> None:
    from streamx.storage.slots import ConnectionSlots

    directory = str(tmp_path / "connections")
    try:
        ConnectionSlots(directory, 4)
        assert request_pace.pace_for("store.example").directory == directory
    finally:
        request_pace.forget_paces()
    assert request_pace.pace_for("store.example").directory is None


def test_a_pace_learned_before_the_slots_carries_on(tmp_path: Path) -> None:
    """A host that throttled this process before its cache's slots were made (its
    dataset's index, say) stays paced once the node's pace takes over."""
    request_pace.forget_paces()
    try:
        pace = request_pace.pace_for("store.example")
        pace.throttled(pace.take())
        request_pace.share_paces(str(tmp_path))
        shared = request_pace.pace_for("store.example")
        assert shared.directory == str(tmp_path)
        assert shared.rate == FIRST_PACE
        assert RequestPace("store.example", str(tmp_path)).rate == FIRST_PACE  # in the file
    finally:
        request_pace.forget_paces()

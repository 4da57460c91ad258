"""A download fetched in parts removes the record of its landed parts only once its file is
renamed into place (issue 26), so a reader following the record finds the record or the
file at every moment.

The order is read from the kernel: inotify reports the cache directory's creations,
renames and removals in the order they happened, and replaying them shows the record and
the file never both absent once the record appeared. Before, the record went first, and a
reader polling between the two found neither and read the bytes again by range GETs.

A process killed (``SIGKILL``) where it would remove the record leaves the complete file
beside a stale record: a reader takes the file at once, and the next run removes the
record with the other leftovers of dead downloads and reads the shard from the file.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from bounded import BOUND_S
from nginx_server import Nginx
from served_mds import write_served

from streamx import StreamingDataset
from streamx.cache.landed_reads import LandedBytes
from streamx.storage import download, http_pool
from streamx.storage.download import download_file
from streamx.storage.object_pin import ObjectPin

pytestmark = pytest.mark.remote

MIB = 1 << 20
SAMPLES = 80
SAMPLE_BYTES = 50_000
SHARD = "shard.00000.mds"

# inotify(7): the events replayed, and the header of each.
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One shard of 4 MB: four parts of 1 MiB.
    return write_served(tmp_path_factory.mktemp("renamed"), "ds", SAMPLES, SAMPLE_BYTES, 8 * MIB)


@pytest.fixture
def nginx(served: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nginx]:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})
    http_pool._close_all()
    with Nginx(served) as server:
        yield server
    http_pool._close_all()


class _Inotify:
    """The creations, renames and removals in one directory, as the kernel reports them."""

    def __init__(self, directory: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        mask = _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
        if self.fd < 0 or libc.inotify_add_watch(self.fd, bytes(directory), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {directory}")

    def events(self) -> list[tuple[int, str]]:
        """The events so far: (mask, name), in order."""
        data = b""
        while True:
            try:
                data += os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
        out = []
        at = 0
        while at < len(data):
            _, mask, _, length = _EVENT.unpack_from(data, at)
            name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
            out.append((mask, name.decode()))
            at += _EVENT.size + length
        return out

    def close(self) -> None:
        os.close(self.fd)


def _record_or_file_at_every_moment(events: list[tuple[int, str]], final: str) -> bool:
    """Replays ``events``; asserts that once a record appeared, a record or the file
    ``final`` is there after every event. Returns whether a record appeared."""
    present: set[str] = set()
    seen = False
    for mask, name in events:
        if mask & (_IN_CREATE | _IN_MOVED_TO):
            present.add(name)
        if mask & (_IN_DELETE | _IN_MOVED_FROM):
            present.discard(name)
        records = [n for n in present if n.endswith(".parts")]
        seen = seen or bool(records)
        if seen:
            assert records or final in present, f"neither record nor file after {name}"
    return seen


def test_the_record_goes_only_once_the_file_is_in_place(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    data = (served / "bucket" / "ds" / SHARD).read_bytes()
    watch = _Inotify(cache)
    try:
        download_file(
            f"{nginx.endpoint}/bucket/ds/{SHARD}", str(cache / SHARD), expected_size=len(data)
        )
        events = watch.events()
    finally:
        watch.close()
    assert (cache / SHARD).read_bytes() == data
    assert _record_or_file_at_every_moment(events, SHARD)  # it came in parts
    assert sorted(os.listdir(cache)) == [SHARD]  # the record went, after the file came
    renamed = events.index((_IN_MOVED_TO, SHARD))
    removed = [i for i, (mask, name) in enumerate(events) if mask & _IN_DELETE]
    assert [events[i][1].endswith(".parts") for i in removed] == [True]
    assert renamed < removed[0]


# Downloads a file in parts; the process dies (SIGKILL) where the download would remove the
# record of its landed parts. (No dataset here: a child importing torch takes seconds.)
_KILLED_WHERE_THE_RECORD_GOES = """
import os, signal, sys
from streamx.storage.download import download_file
from streamx.storage.landed_parts import LandedRecord

LandedRecord.close = lambda record: os.kill(os.getpid(), signal.SIGKILL)
download_file(sys.argv[1], sys.argv[2], expected_size=int(sys.argv[3]))
"""


def _shard_gets(server: Nginx) -> int:
    return sum(1 for e in server.log() if e.uri.endswith(SHARD))


def test_a_kill_between_rename_and_record_leaves_a_state_the_next_run_takes(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    remote, cache = f"{nginx.endpoint}/bucket/ds", tmp_path / "cache"
    data = (served / "bucket" / "ds" / SHARD).read_bytes()
    url, local = f"{remote}/{SHARD}", str(cache / SHARD)
    child = [sys.executable, "-c", _KILLED_WHERE_THE_RECORD_GOES, url, local, str(len(data))]
    env = {**os.environ, "STREAMX_DOWNLOAD_PART_SIZE": str(MIB)}
    assert subprocess.run(child, env=env, timeout=BOUND_S).returncode == -signal.SIGKILL
    # The complete file, beside the record its download did not live to remove.
    assert (cache / SHARD).read_bytes() == data
    assert [p.name.endswith(".parts") for p in cache.glob(f".{SHARD}.*")] == [True]

    # A reader following the record takes the file at once.
    into = os.memfd_create("reader")
    try:
        starts = np.array([2 * MIB], np.int64)
        copied, whole = LandedBytes(str(cache / SHARD), len(data), ObjectPin(url)).wait(
            into, starts, starts + 10
        )
    finally:
        os.close(into)
    assert not copied.any() and whole

    # The next run removes the record and reads the shard from the file.
    gets = _shard_gets(nginx)
    dataset = StreamingDataset(remote=remote, local=str(cache), batch_size=1)
    assert not list(cache.glob(f".{SHARD}.*"))
    for i in (0, SAMPLES - 1):
        assert dataset[i]["x"] == bytes([i % 251]) * SAMPLE_BYTES
    assert _shard_gets(nginx) == gets

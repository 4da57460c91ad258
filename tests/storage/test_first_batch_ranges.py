"""A process's first batch of a shard read by range in a few GETs, its later samples from the
shard's download, counted in nginx's log.

Shard 0 (16 MiB, samples of 100 KB; the loader's chunk is 10 samples) is read with a batch
of 32: each process's first fetch of it is the offset table and the 4 chunks the batch
spans (40 samples, 4 MB) spread over about four GETs of 1 MB (one process: one run of
bytes, 4 GETs; each of two workers: its batch and 8 samples of its next one, 4 + 1 GETs),
and no later sample of it is read by range (it comes from the parts its download lands, or
the file). Which processes read by range depends on when they
start (one that starts once the shard is in place reads none): the count is per table.
Before, a process read its first 4 MiB chunk by chunk, in GETs of 256 KiB: 16 of them, and
the table.

A reader waiting for a download's parts reads the file once it is renamed into place (the
download removes its record after the rename), rather than GETting the bytes by range.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from nginx_server import LogEntry, Nginx
from served_mds import write_served

from streamx import StreamingDataLoader, StreamingDataset
from streamx.cache.landed_reads import LandedBytes
from streamx.storage.landed_parts import LandedRecord
from streamx.storage.object_pin import ObjectPin

pytestmark = pytest.mark.remote

SAMPLES = 400
SAMPLE_BYTES = 100_000
BATCH = 32
FIRST = 40  # the samples of the chunks (10 samples each) a batch of 32 spans
SHARD = "shard.00000.mds"
MIB = 1 << 20


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_served(
        tmp_path_factory.mktemp("firstbatch"), "ds", SAMPLES, SAMPLE_BYTES, 16 * MIB
    )


@pytest.fixture
def nginx(served: Path) -> Iterator[Nginx]:
    with Nginx(served) as server:
        yield server


def _offsets(served: Path) -> list[int]:
    head = (served / "bucket" / "ds" / SHARD).read_bytes()[: 4 * (SAMPLES + 2)]
    count = int.from_bytes(head[:4], "little")
    table = np.frombuffer(head, "<u4", count=count + 1, offset=4)
    return [int(offset) for offset in table]


def _small_ranges(server: Nginx) -> list[LogEntry]:
    """The range GETs of shard 0 under 1 MiB (its download's parts are 2 MiB and more)."""
    return sorted(
        (e for e in server.log() if e.uri.endswith(SHARD) and e.range not in ("", "-")),
        key=lambda e: e.start,
    )


def _span(entry: LogEntry) -> tuple[int, int]:
    first, last = entry.range.removeprefix("bytes=").split("-")
    return int(first), int(last) + 1


def _pieces_of(entries: list[LogEntry]) -> list[tuple[int, int]]:
    return sorted(_span(e) for e in entries if e.sent < MIB and not e.range.startswith("bytes=0-"))


def _read(server: Nginx, cache: Path, workers: int) -> int:
    ds = StreamingDataset(remote=f"{server.endpoint}/bucket/ds", local=str(cache), batch_size=BATCH)
    if not workers:
        return sum(1 for _ in ds)
    loader = StreamingDataLoader(ds, batch_size=BATCH, num_workers=workers, collate_fn=list)
    return sum(len(batch) for batch in loader)


def _settled(server: Nginx) -> list[LogEntry]:
    """The log once it stops growing (nginx writes a line as its request ends)."""
    seen = -1
    while len(server.log()) != seen:
        seen = len(server.log())
        time.sleep(0.3)
    return _small_ranges(server)


def test_one_process_reads_its_first_batch_in_four_gets(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    assert _read(nginx, tmp_path / "cache", workers=0) == SAMPLES
    entries = _settled(nginx)
    offsets = _offsets(served)
    tables = [e for e in entries if e.sent < MIB and e.range.startswith("bytes=0-")]
    assert len(tables) == 1
    pieces = _pieces_of(entries)
    assert len(pieces) == 4  # and no later range GET of the shard
    assert pieces[0][0] == offsets[0] and pieces[-1][1] == offsets[FIRST]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))  # contiguous


def test_two_workers_each_read_their_first_batch_in_four_gets(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    assert _read(nginx, tmp_path / "cache", workers=2) == SAMPLES
    entries = _settled(nginx)
    offsets = _offsets(served)
    tables = [e for e in entries if e.sent < MIB and e.range.startswith("bytes=0-")]
    # Each worker reads its table and its first batch by range in at most 1 + 5 GETs (not one
    # GET per chunk). Fewer where the download's parts landed first: a worker may copy the
    # table, or some of its chunks, from them (how many depends on the machine's load), and
    # one that starts once the download is done reads none.
    assert 1 <= len(tables) <= 2
    pieces = _pieces_of(entries)
    assert 1 <= len(pieces) <= 5 * 2
    # Worker 0 reads batches 0, 2, ... (its first 40 samples: 0-31, 64-71), worker 1 the
    # others (32-63, 96-103).
    assert all(offsets[0] <= start < end <= offsets[3 * BATCH + 8] for start, end in pieces)


def test_a_reader_whose_file_is_renamed_before_its_record_goes_reads_the_file(
    tmp_path: Path,
) -> None:
    size, part = 8 * MIB, 2 * MIB
    local = tmp_path / SHARD
    tmp = tmp_path / f".{SHARD}.{os.getpid()}.0123abcd.tmp"
    with open(tmp, "wb") as f:
        f.truncate(size)
    record = LandedRecord(str(tmp), size, {s: s + part for s in range(0, size, part)})
    record.done(0, None)
    into = os.memfd_create("reader")
    os.ftruncate(into, size)
    starts = np.array([3 * part], np.int64)  # a part not landed

    def owner() -> None:
        time.sleep(0.05)
        os.replace(tmp, local)  # the attempt is over: the rename, then the record goes
        time.sleep(0.05)
        record.close()

    thread = threading.Thread(target=owner)
    thread.start()
    try:
        copied, whole = LandedBytes(str(local), size, ObjectPin(str(local))).wait(
            into, starts, starts + 1000
        )
    finally:
        thread.join()
        os.close(into)
    assert not copied.any() and whole  # the rest is read from the file, not by range GETs

    # A record that goes with no file after it (a failed attempt): the reader GETs.
    gone = tmp_path / "gone.mds"
    tmp = tmp_path / f".gone.mds.{os.getpid()}.0123abcd.tmp"
    tmp.write_bytes(b"")
    os.truncate(tmp, size)
    record = LandedRecord(str(tmp), size, {s: s + part for s in range(0, size, part)})
    into = os.memfd_create("reader")
    os.ftruncate(into, size)
    threading.Timer(0.05, record.close).start()
    try:
        copied, whole = LandedBytes(str(gone), size, ObjectPin(str(gone))).wait(
            into, starts, starts + 1000
        )
    finally:
        os.close(into)
    assert not copied.any() and not whole

"""The record of a download's landed parts, and the copies readers take from it.

A reader copies a range only while the record lists it and is of the same epoch after the
copy: a writer process here restarts its attempt over and over (a new epoch, the file
truncated and filled with garbage, then the right bytes written and published part by
part), and no copy the reader takes is ever anything but the right bytes. A record that is
torn, a symlink, of loose mode, or describes another file reads as nothing landed.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from streamx.cache.landed_reads import LandedBytes
from streamx.storage.landed_parts import LandedRecord, read_record, record_path

PART = 64 << 10
PARTS = 8
SIZE = PART * PARTS


def _right(start: int, length: int) -> bytes:
    return bytes((i * 7 + 3) % 251 for i in range(start, start + length))


def _temp(tmp_path: Path) -> Path:
    """A download's temporary file (named as one: ``.<name>.<pid>.<tag>.tmp``)."""
    tmp = tmp_path / f".shard.mds.{os.getpid()}.0123abcd.tmp"
    tmp.write_bytes(b"")
    return tmp


def _ends() -> dict[int, int]:
    return {start: start + PART for start in range(0, SIZE, PART)}


def _ranges(*parts: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    starts = np.array([p * PART + 100 for p in parts], np.int64)
    return starts, starts + 1000


def test_a_record_lists_the_parts_done_and_goes_with_its_attempt(tmp_path: Path) -> None:
    tmp = _temp(tmp_path)
    with open(tmp, "r+b") as f:
        f.truncate(SIZE)
        f.seek(2 * PART)
        f.write(_right(2 * PART, PART))
    record = LandedRecord(str(tmp), SIZE, _ends())
    landed = read_record(record_path(str(tmp)))
    assert landed is not None and landed.spans == ()
    record.done(2 * PART)
    landed = read_record(record_path(str(tmp)))
    assert landed is not None and landed.spans == ((2 * PART, 3 * PART),)
    assert oct(os.stat(record_path(str(tmp))).st_mode & 0o777) == "0o600"

    reader = LandedBytes(str(tmp_path / "shard.mds"), SIZE)
    into = os.memfd_create("t")
    os.ftruncate(into, SIZE)
    copied = reader.copy(into, *_ranges(0, 2, 3))
    assert copied.tolist() == [False, True, False]  # only part 2 has landed
    assert os.pread(into, 1000, 2 * PART + 100) == _right(2 * PART + 100, 1000)

    with open(tmp, "r+b") as f:
        f.seek(3 * PART)
        f.write(_right(3 * PART, PART))
    record.done(3 * PART)  # merged with part 2
    landed = read_record(record_path(str(tmp)))
    assert landed is not None and landed.spans == ((2 * PART, 4 * PART),)
    assert reader.copy(into, *_ranges(0, 2, 3)).tolist() == [False, True, True]

    record.close()
    assert not os.path.exists(record_path(str(tmp)))
    assert not LandedBytes(str(tmp_path / "shard.mds"), SIZE).copy(into, *_ranges(2)).any()
    os.close(into)


def test_an_untrusted_record_reads_as_nothing_landed(tmp_path: Path) -> None:
    tmp = _temp(tmp_path)
    os.truncate(tmp, SIZE)
    record = LandedRecord(str(tmp), SIZE, _ends())
    record.done(0)
    path = record_path(str(tmp))
    whole = Path(path).read_bytes()
    assert read_record(path) is not None

    Path(path).write_bytes(whole[:-3])  # torn
    assert read_record(path) is None
    Path(path).write_bytes(whole)
    os.chmod(path, 0o644)  # another user could have written it
    assert read_record(path) is None
    os.chmod(path, 0o600)
    assert read_record(path) is not None

    real = tmp_path / "elsewhere.parts"
    os.replace(path, real)
    os.symlink(real, path)
    assert read_record(path) is None

    # A record of the right form whose file is another one (not its inode) copies nothing.
    os.unlink(path)
    os.replace(real, path)
    os.replace(tmp, tmp_path / "moved")
    tmp.write_bytes(b"\0" * SIZE)
    into = os.memfd_create("t")
    os.ftruncate(into, SIZE)
    assert not LandedBytes(str(tmp_path / "shard.mds"), SIZE).copy(into, *_ranges(0)).any()
    os.close(into)


def _restarting_writer(tmp: str, stop_at: float) -> None:
    """An owner whose attempts restart without end: each truncates the file, fills it
    with garbage, then writes the right bytes part by part, publishing each."""
    while time.time() < stop_at:
        record = LandedRecord(tmp, SIZE, _ends())
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            os.ftruncate(fd, SIZE)
            os.pwrite(fd, b"\xee" * SIZE, 0)
            for start in range(0, SIZE, PART):
                os.pwrite(fd, _right(start, PART), start)
                record.done(start)
        finally:
            record.close()
            os.close(fd)


def test_copies_are_right_while_the_owner_restarts_its_attempts(tmp_path: Path) -> None:
    tmp = _temp(tmp_path)
    os.truncate(tmp, SIZE)
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=_restarting_writer, args=(str(tmp), time.time() + 4.0))
    writer.start()
    reader = LandedBytes(str(tmp_path / "shard.mds"), SIZE)
    into = os.memfd_create("t")
    os.ftruncate(into, SIZE)
    starts = np.arange(0, SIZE, 4096, dtype=np.int64)
    ends = starts + 4096
    copies = 0
    try:
        while writer.is_alive():
            os.pwrite(into, b"\0" * SIZE, 0)
            copied = reader.copy(into, starts, ends)
            for start in starts[copied].tolist():
                assert os.pread(into, 4096, start) == _right(start, 4096)
            copies += int(copied.sum())
    finally:
        writer.join(30)
        os.close(into)
    assert writer.exitcode == 0
    assert copies > 0  # the race was run: some copies were taken, and all were right

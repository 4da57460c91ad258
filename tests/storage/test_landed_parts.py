"""The record of a download's landed parts, and the copies readers take from it.

A reader copies a range only while the record lists it and is of the same epoch after the
copy: a writer process here restarts its attempt over and over (a new epoch, the file
truncated and filled with garbage, then the right bytes written and published part by
part), and no copy the reader takes is ever anything but the right bytes. A record that is
torn, a symlink, of loose mode, or describes another file reads as nothing landed. A record
names the version its download pinned: a reader pinned to another copies nothing, one that
pinned none pins the record's; an older streamx's record (no version) reads as nothing landed.
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
from streamx.storage.object_pin import ObjectPin

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


def _reader(tmp_path: Path, pin: ObjectPin | None = None) -> LandedBytes:
    return LandedBytes(str(tmp_path / "shard.mds"), SIZE, pin or ObjectPin("t"))


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
    record.done(2 * PART, None)
    landed = read_record(record_path(str(tmp)))
    assert landed is not None and landed.spans == ((2 * PART, 3 * PART),)
    assert oct(os.stat(record_path(str(tmp))).st_mode & 0o777) == "0o600"

    reader = _reader(tmp_path)
    into = os.memfd_create("t")
    os.ftruncate(into, SIZE)
    copied = reader.copy(into, *_ranges(0, 2, 3))
    assert copied.tolist() == [False, True, False]  # only part 2 has landed
    assert os.pread(into, 1000, 2 * PART + 100) == _right(2 * PART + 100, 1000)

    with open(tmp, "r+b") as f:
        f.seek(3 * PART)
        f.write(_right(3 * PART, PART))
    record.done(3 * PART, None)  # merged with part 2
    landed = read_record(record_path(str(tmp)))
    assert landed is not None and landed.spans == ((2 * PART, 4 * PART),)
    assert reader.copy(into, *_ranges(0, 2, 3)).tolist() == [False, True, True]

    record.close()
    assert not os.path.exists(record_path(str(tmp)))
    assert not _reader(tmp_path).copy(into, *_ranges(2)).any()
    os.close(into)


def test_an_untrusted_record_reads_as_nothing_landed(tmp_path: Path) -> None:
    tmp = _temp(tmp_path)
    os.truncate(tmp, SIZE)
    record = LandedRecord(str(tmp), SIZE, _ends())
    record.done(0, None)
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
    assert not _reader(tmp_path).copy(into, *_ranges(0)).any()
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
                record.done(start, None)
        finally:
            record.close()
            os.close(fd)


def test_copies_are_right_while_the_owner_restarts_its_attempts(tmp_path: Path) -> None:
    tmp = _temp(tmp_path)
    os.truncate(tmp, SIZE)
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=_restarting_writer, args=(str(tmp), time.time() + 4.0))
    writer.start()
    reader = _reader(tmp_path)
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


def test_a_reader_copies_only_the_version_it_pinned(tmp_path: Path) -> None:
    tmp = _temp(tmp_path)
    os.truncate(tmp, SIZE)
    with open(tmp, "r+b") as f:
        f.write(_right(0, PART))
    record = LandedRecord(str(tmp), SIZE, _ends())
    record.done(0, ("ETag", '"v2"'))
    landed = read_record(record_path(str(tmp)))
    assert landed is not None and landed.version == ("ETag", '"v2"')
    into = os.memfd_create("t")
    os.ftruncate(into, SIZE)
    try:
        pinned = ObjectPin("t")
        pinned.check('"v1"', None)  # a GET of the reader's answered with another version
        assert not _reader(tmp_path, pinned).copy(into, *_ranges(0)).any()
        assert not _reader(tmp_path, pinned).wait(into, *_ranges(0))[0].any()
        fresh = ObjectPin("t")  # nothing read yet: the record's version becomes its pin
        assert _reader(tmp_path, fresh).copy(into, *_ranges(0)).all()
        assert fresh.version == ("ETag", '"v2"') and fresh.headers() == {"if-match": '"v2"'}
        assert os.pread(into, 1000, 100) == _right(100, 1000)
        # An older streamx's record, of the same spans and no version: nothing landed.
        path = record_path(str(tmp))
        whole = Path(path).read_bytes()
        old = b"SXLP" + whole[4:40] + whole[42:58]  # its head had no version's length
        Path(path).write_bytes(old)
        assert read_record(path) is None
        assert not _reader(tmp_path).copy(into, *_ranges(0)).any()
    finally:
        os.close(into)
        record.close()

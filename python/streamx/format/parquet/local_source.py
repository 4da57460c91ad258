"""A local Parquet file read where it lies: a row group's column chunks are read straight
from the user's file, never copied into the cache.

Where every file of a source is local (a path or ``file://``), each row group's shard file
is the Parquet file itself (an absolute path, which ``local/split`` joined to it leaves as
it is), as a local tar is read in place. Nothing but the footers is written to the cache,
so ``cache_limit`` does not count these files and eviction never touches them, as for an
MDS stream without a remote: they are the user's only copy.

Each read goes through a :class:`~streamx.format.held_file.HeldFile` of the source, which
checks after the read that the file still has the size and mtime its footer was read at: a
file rewritten or truncated since raises ``StaleIndexError`` naming it and the row group,
so rows of one version are never decoded with another's footer.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from streamx import _core
from streamx.exceptions import CorruptShardError, StaleIndexError
from streamx.format.held_file import HeldFile
from streamx.format.index import ShardInfo
from streamx.format.parquet.index import ParquetIndex, RowGroup
from streamx.location import Location

__all__ = ["LocalParquetIndex", "check_source", "in_place", "read_chunks", "read_into_buffer"]


class LocalParquetIndex(ParquetIndex):
    """Row groups of local files, each shard's file the Parquet file itself."""

    def extra(self, unit: RowGroup) -> dict[str, Any]:
        return {**super().extra(unit), "in_place": True}


def in_place(index: ParquetIndex) -> ParquetIndex:
    """``index`` read in place where every row group's file is local, else as it is (all
    or none: a stream's shards are either the user's own files or copies the cache owns)."""
    units = index.units
    if not units or any(Location.parse(u.file.url).is_remote for u in units):
        return index
    return LocalParquetIndex(
        [
            dataclasses.replace(u, basename=os.path.abspath(Location.parse(u.file.url).local_path))
            for u in units
        ]
    )


# The sources read in this process, one held file each (a HeldFile closes the least recently
# read past its own bound, and opens it again, checked again, at its next read).
_HELD: dict[tuple[str, int, str], HeldFile] = {}
_MAX_HELD = 4096
_LOCK = threading.Lock()


def _fresh_lock() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # a thread of the parent may have held it as it forked


os.register_at_fork(after_in_child=_fresh_lock)


def _held(shard: ShardInfo) -> HeldFile:
    extra = shard.extra
    path = shard.local_path(shard.raw_data)
    key = (path, int(extra["source_size"]), str(extra["source_version"]))
    with _LOCK:
        found = _HELD.get(key)
    if found is not None:
        return found
    # Opened outside the lock: FileNotFoundError, StaleIndexError (named by the caller).
    made = HeldFile(path, key[1], str(extra["source"]), key[2])
    with _LOCK:
        if len(_HELD) >= _MAX_HELD:
            _HELD.clear()  # a dataset of very many files: opened again, not kept all
        return _HELD.setdefault(key, made)


def check_source(shard: ShardInfo, shown: str) -> None:
    """Checks the row group's file is there, with its footer's size and mtime.

    Raises:
        FileNotFoundError: If the file is gone.
        StaleIndexError: Naming the file and row group, if it changed since.
    """
    _named(lambda: _held(shard).pread(0, 0), shown)  # a read checks the file after it


def read_chunks(shard: ShardInfo, shown: str) -> bytes:
    """The row group's read column chunks, one after the other, read from the file itself
    (what a copy in the cache would hold).

    Raises:
        FileNotFoundError: If the file is gone.
        StaleIndexError: Naming the file and row group (``shown``), if the file changed
            since its footer was read (checked after the read).
        CorruptShardError: If a read came back short.
    """
    chunks = [(int(start), int(length)) for start, length in shard.extra["chunks"]]

    def read() -> list[bytes]:
        held = _held(shard)
        return [held.pread(length, start) for start, length in chunks]

    parts = _named(read, shown)
    for part, (start, length) in zip(parts, chunks):
        if len(part) != length:  # the size was checked after the read: not a truncation
            raise CorruptShardError(
                f"{shown}: {len(part)} of its {length} bytes at offset {start} could be read"
            )
    return parts[0] if len(parts) == 1 else b"".join(parts)


# Each reading thread's buffer, reused from one row group to the next (see
# ``_core.ReadBuffer``); one that grew past this is let go after its row group.
_BUFFERS = threading.local()
_KEEP_BYTES = 64 << 20


def read_into_buffer(shard: ShardInfo, shown: str) -> _core.ReadBuffer:
    """The row group's read column chunks, one after the other, read from the file itself
    into this thread's reused buffer (valid until the thread's next read). Raises as
    :func:`read_chunks` does."""
    buffer: _core.ReadBuffer | None = getattr(_BUFFERS, "buffer", None)
    if buffer is None or len(buffer) > _KEEP_BYTES:
        buffer = _BUFFERS.buffer = _core.ReadBuffer()
    spans = [(int(start), int(length)) for start, length in shard.extra["chunks"]]
    short = _named(lambda: _held(shard).read_with(lambda fd: buffer.read(fd, spans, shown)), shown)
    if short is not None:  # the size was checked after the read: not a truncation
        start, length, read = short
        raise CorruptShardError(
            f"{shown}: {read} of its {length} bytes at offset {start} could be read"
        )
    return buffer


T = TypeVar("T")


def _named(call: Callable[[], T], shown: str) -> T:
    """``call()``, its ``StaleIndexError`` naming the row group (``shown``) as well as the
    file (a held file is shared by the file's row groups, so it names the file only)."""
    try:
        return call()
    except StaleIndexError as err:
        raise StaleIndexError(f"{shown}: {str(err).split(': ', 1)[-1]}") from err

"""A row group decoded once and kept (:mod:`.decoded_cache`), read a row at a time by the
per-sample path and a column at a time by the batched one.

A kept table is named by everything that decides its rows: the local file, the source's
size and version (its ETag or mtime) the index pinned, and how it is decoded (projection,
casts, images, row filter). A dataset built again over a changed source has another version
in its index, so it never meets the old table; and a row group whose local file leaves the
disk is dropped (:func:`forget`), so it is fetched, and its source checked, before it is
read again.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from streamx.format.index import ShardInfo
from streamx.format.parquet.decoded_cache import DecodedCache
from streamx.format.parquet.page_rows import page_rows
from streamx.format.parquet.python_values import images, python_column
from streamx.format.parquet.row_group import decode_table, local_bytes, where
from streamx.format.parquet.row_values import Getter, row_getter

__all__ = [
    "CACHE",
    "DecodedRowGroup",
    "RowGroupReader",
    "decoded",
    "decoded_key",
    "done_reading",
    "forget",
]

# Python objects a whole column converted to values keeps per row, beyond Arrow's buffers.
_VALUE_BYTES = 64


class DecodedRowGroup:
    """A row group's table; each column's getter, Python values or array once asked for.
    Made for rows (``for_rows``), its pages are decoded by the core instead where it can
    (:mod:`.page_rows`), and the table only if the batched path asks for it."""

    def __init__(self, shard: ShardInfo, for_rows: bool = False) -> None:
        self.shard = shard
        # A file read in place is read by the core into a reused buffer; the table, only
        # where the pages are not the core's (a feature it leaves to pyarrow: read again).
        in_place = bool(shard.extra.get("in_place"))
        data = None if for_rows and in_place else local_bytes(shard)
        self.pages = page_rows(shard, data) if for_rows else None
        self._table = decode_table(shard, data) if self.pages is None else None
        self.images = frozenset(shard.extra.get("images") or ())
        self.values_of: dict[str, list[Any]] = {}  # the columns decoded to Python so far
        self.arrays: dict[str, Any] = {}  # the batched path's array per column, or None
        # The batched path's way into a batch per column (``arrow_columns``), made once.
        self.ways: list[tuple[str, np.ndarray[Any, Any] | None, Any]] | None = None
        self._getters: list[tuple[str, Getter]] | None = None
        # Which rows are unread (1): bytes ``dataset[i]`` marks one at a time (a bytearray's
        # item costs a fifth of a numpy array's), ``_unread`` the same bytes for batches.
        self.unread_rows = bytearray(b"\x01") * int(shard.samples)
        self._unread = np.frombuffer(self.unread_rows, np.bool_)
        self.left = int(shard.samples)  # rows not read yet
        self.extra_bytes = 0  # what the getters, values and arrays keep beside the table
        self.grown = False  # extra_bytes grew since the cache last counted them
        # Arrow walks every buffer: counted once.
        self._table_bytes = 0 if self._table is None else int(self._table.nbytes)
        self._page_bytes = 0 if self.pages is None else int(self.pages.nbytes)

    @property
    def table(self) -> Any:
        """The row group as an Arrow table (decoded on first use after the pages)."""
        if self._table is None:
            self._table = decode_table(self.shard)
            self._table_bytes = int(self._table.nbytes)
            self.grown = True
        return self._table

    @property
    def nbytes(self) -> int:
        return self._table_bytes + self._page_bytes + self.extra_bytes + self._unread.nbytes

    def values(self, name: str) -> list[Any]:
        """Column ``name`` as the per-sample path hands it out, one value per row."""
        found = self.values_of.get(name)
        if found is None:
            column = self.table.column(name)
            found = python_column(column)
            if name in self.images:
                found = images(found, where(self.shard))
            self.values_of[name] = found
            self.grow(int(column.nbytes) + _VALUE_BYTES * len(found))
        return found

    def row(self, index: int) -> dict[str, Any]:
        """Row ``index`` as the per-sample path hands it out, converted alone."""
        if self.pages is not None:
            row: dict[str, Any] = self.pages.row(index)
            return row
        getters = self._getters if self._getters is not None else self._make_getters()
        return {name: get(index) for name, get in getters}

    def _make_getters(self) -> list[tuple[str, Getter]]:
        getters = []
        for name in self.table.column_names:
            get, kept = row_getter(self.table.column(name))
            getters.append((name, self._image(get) if name in self.images else get))
            self.grow(kept)
        self._getters = getters
        return getters

    def grow(self, size: int) -> None:
        """Counts ``size`` more bytes kept beside the table."""
        self.extra_bytes += size
        self.grown = True

    def _image(self, get: Getter) -> Getter:
        named = where(self.shard)
        return lambda index: images([get(index)], named, index)[0]

    def read(self, rows: int | np.ndarray[Any, Any]) -> bool:
        """Marks ``rows`` read; whether every row has been read now."""
        if isinstance(rows, int):
            flags = self.unread_rows
            if flags[rows]:
                flags[rows] = 0
                self.left -= 1
            return self.left == 0
        unread = self._unread
        if len(rows) and bool((rows[1:] > rows[:-1]).all()):
            # Rising, so no row twice (a batch of a pass): a count does, no sort.
            first, last = int(rows[0]), int(rows[-1])
            if last - first == len(rows) - 1:  # a run: a slice, no gather
                run = unread[first : last + 1]
                self.left -= int(np.count_nonzero(run))
                run[:] = False
            else:
                self.left -= int(np.count_nonzero(unread[rows]))
                unread[rows] = False
        elif len(rows):
            fresh = np.unique(rows[unread[rows]])
            unread[fresh] = False
            self.left -= len(fresh)
        return self.left == 0


CACHE: DecodedCache[DecodedRowGroup] = DecodedCache()


def decoded_key(shard: ShardInfo) -> str:
    """What names the row group's decoded table among those of every dataset in this
    process: two datasets over one cache may decode the same file differently, or hold
    another version of its source."""
    extra = shard.extra
    # A file read in place is every row group's file: its number tells them apart.
    parts = [shard.local_path(shard.raw_data), extra["row_group"], extra.get("source_version")]
    parts.append(extra["source_size"])
    parts += [extra.get(name) for name in ("read_columns", "images", "cast", "kept")]
    return "\0".join(str(part) for part in parts)


def decoded(shard: ShardInfo, key: str | None = None, for_rows: bool = False) -> DecodedRowGroup:
    """The row group decoded (kept in :data:`CACHE`); ``key``: its :func:`decoded_key`, when
    the caller has it; ``for_rows``: made for :meth:`DecodedRowGroup.row` (its pages decoded
    by the core where it can).

    Raises:
        FileNotFoundError: If it is not kept and its local file is not on disk.
    """
    key = decoded_key(shard) if key is None else key
    return CACHE.get(key, lambda: DecodedRowGroup(shard, for_rows))


def done_reading(key: str, group: DecodedRowGroup, rows: int | np.ndarray[Any, Any]) -> None:
    """After ``rows`` of ``group`` were read: its bytes counted again if it grew, and the
    row group dropped once every row of it has been read."""
    if group.read(rows):
        CACHE.drop(key)
    elif group.grown:
        group.grown = False
        CACHE.measure(key)


def forget(shard: ShardInfo) -> None:
    """Drops the row group's decoded table (its local file left the disk)."""
    CACHE.drop(decoded_key(shard))


class RowGroupReader:
    """Samples of one row-group shard, read from its kept decoded table."""

    def __init__(self, shard: ShardInfo) -> None:
        self.shard = shard
        self._key = decoded_key(shard)
        # Made once: a kept row group's `dataset[i]` is a few microseconds, and a closure
        # and a call per access were a tenth of it.
        self._make = functools.partial(DecodedRowGroup, shard, True)
        path = shard.local_path(shard.raw_data)
        if not os.path.exists(path):
            CACHE.drop(self._key)  # never served from memory while its file is not on disk
            raise FileNotFoundError(path)

    def get(self, index: int) -> dict[str, Any]:
        key = self._key
        group = CACHE.get(key, self._make)
        pages = group.pages
        row: dict[str, Any] = group.row(index) if pages is None else pages.row(index)
        # ``done_reading`` of one row, inline: its calls were a tenth of a kept row's read.
        unread = group.unread_rows
        if unread[index]:
            unread[index] = 0
            group.left -= 1
        if group.left == 0:
            CACHE.drop(key)
        elif group.grown:
            group.grown = False
            CACHE.measure(key)
        return row

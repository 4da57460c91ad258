"""What range reads need to know of each shard format they read (:mod:`range_reads`).

An MDS shard and a LitData chunk open alike: a uint32 sample count, then count + 1
absolute uint32 offsets, sample ``i`` lying in ``[offsets[i], offsets[i + 1])``. What
differs is where the bytes live, what the table must say of the file, and which reader
decodes them:

- an MDS shard lies at ``remote/split/basename``; its table ends exactly at the file's end;
  the Rust reader maps it;
- a LitData chunk lies at the URL its index entry records (``extra["source"]``); its
  table may end before the file does (an Arrow IPC footer may follow); LitData's
  :class:`~streamx.format.litdata.chunk.ChunkReader` decodes it. A chunk whose rows live
  in that footer (``json`` leaves, or no leaves at all: every offset equal) is not read
  by range: its rows need the footer, at the end of the chunk, whole.

A Parquet row group has no offset table: its rows are read by range by its own reader,
from the first pages of its column chunks (:mod:`streamx.format.parquet.early_rows`), which
:func:`rows_by_range` names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from streamx.cache.cached_files import remote_url
from streamx.cache.views import CachedStream
from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo

if TYPE_CHECKING:  # imported where a shard of theirs is read by range
    from streamx.format.litdata.chunk import ChunkReader
    from streamx.format.readers.mds import MDSSampleReader

__all__ = [
    "NotByRange",
    "PartialReader",
    "RangeFormat",
    "RowsByRange",
    "range_format",
    "rows_by_range",
]


class NotByRange(Exception):
    """The shard's table says its samples cannot be served by range (it keeps the
    whole-file path for good)."""


class PartialReader(Protocol):
    """Decodes the samples of a partial (only those fetched are ever asked for)."""

    def get(self, local: int) -> Any: ...

    def close(self) -> None:
        """Drops what maps the partial (samples handed out stay valid)."""


class RangeFormat(Protocol):
    """One shard format, as range reads see it."""

    def source(self, stream: CachedStream, shard: ShardInfo, own_way: bool) -> str | None:
        """The URL of the shard's bytes, or None when the shard is not read by range."""

    def unchanged(self, shard: ShardInfo) -> None:
        """Checks, before any range of it is read, that the shard is still the version its
        index was read with, where the index's reader noted one.

        Raises:
            StaleIndexError: If it was rewritten since, naming it.
        """

    def check(self, offsets: NDArray[np.int64], size: int, url: str) -> None:
        """Checks the shard's (ordered, in-bounds at the start) offset table against its
        ``size`` bytes.

        Raises:
            CorruptShardError: If the table contradicts the file.
            NotByRange: If the samples cannot be served by range.
        """

    def reader(self, mapped: ShardInfo, zero_copy: bool) -> PartialReader:
        """The reader of ``mapped``: the shard's entry, its file the partial."""


class _MDSReader:
    def __init__(self, reader: MDSSampleReader) -> None:
        self._reader = reader

    def get(self, local: int) -> Any:
        return self._reader.get(local)

    def close(self) -> None:
        self._reader.evict(0)  # zero-copy views handed out keep their own mapping


class _MDS:
    def source(self, stream: CachedStream, shard: ShardInfo, own_way: bool) -> str | None:
        # A subclass that fetches files its own way may not fetch them from `remote` at all.
        if own_way or stream.remote is None:
            return None
        return remote_url(stream.remote, stream.split, shard.raw_data.basename)

    def unchanged(self, shard: ShardInfo) -> None:
        pass  # an MDS index notes no version: its size and sample count are checked

    def check(self, offsets: NDArray[np.int64], size: int, url: str) -> None:
        if offsets[-1] != size:
            raise CorruptShardError(f"{url}: the offset table contradicts the shard's {size} bytes")

    def reader(self, mapped: ShardInfo, zero_copy: bool) -> PartialReader:
        from streamx.format.readers.mds import MDSSampleReader

        return _MDSReader(MDSSampleReader([mapped], zero_copy=zero_copy))


class _ChunkReader:
    def __init__(self, reader: ChunkReader) -> None:
        self._reader: ChunkReader | None = reader

    def get(self, local: int) -> Any:
        assert self._reader is not None  # the partial asks only while open
        return self._reader.get(local)

    def close(self) -> None:
        # The chunk reader's own descriptor of the partial closes with it; its samples are
        # copies, so nothing handed out maps the partial.
        self._reader = None


class _LitData:
    def source(self, stream: CachedStream, shard: ShardInfo, own_way: bool) -> str | None:
        # The stream fetches a chunk from the URL its entry records: ranges read it there.
        url = shard.extra.get("source")
        formats = shard.extra.get("data_format") or []
        if not isinstance(url, str) or "json" in formats:
            return None  # json leaves are read from the Arrow footer
        return url

    def unchanged(self, shard: ShardInfo) -> None:
        from streamx.format.litdata.chunk import check_chunk_unchanged

        # A same-size rewrite: its version, noted when the index was read, differs.
        check_chunk_unchanged(shard.extra, shard.raw_data.bytes)

    def check(self, offsets: NDArray[np.int64], size: int, url: str) -> None:
        if offsets[-1] > size:
            raise CorruptShardError(f"{url}: the chunk's offset table is out of bounds")
        if offsets[-1] == offsets[0]:
            raise NotByRange(f"{url}: the chunk's rows are in its Arrow footer")

    def reader(self, mapped: ShardInfo, zero_copy: bool) -> PartialReader:
        from streamx.format.litdata.chunk import ChunkReader

        return _ChunkReader(ChunkReader(mapped))


_FORMATS: dict[str, RangeFormat] = {"mds": _MDS(), "litdata": _LitData()}


def range_format(shard: ShardInfo) -> RangeFormat | None:
    """How range reads read ``shard``, or None for a format they do not read."""
    return _FORMATS.get(shard.format)


class RowsByRange(Protocol):
    """A format whose rows its own reader reads by range, without a partial of the file."""

    def row(self, shard: ShardInfo, index: int, timeout: float, downloading: bool) -> Any:
        """Row ``index`` of ``shard`` read by range, or None when it must wait for the
        shard's file (``downloading``: this process is prefetching it, and has read rows
        by range before).

        Raises:
            CorruptShardError: If the bytes read contradict the format, naming the shard.
        """


class _ParquetRows:
    def row(self, shard: ShardInfo, index: int, timeout: float, downloading: bool) -> Any:
        from streamx.format.parquet.early_rows import early_row  # pyarrow, when read

        return early_row(shard, index, timeout, downloading)


_ROWS: dict[str, RowsByRange] = {"parquet": _ParquetRows()}


def rows_by_range(shard: ShardInfo) -> RowsByRange | None:
    """The reader of ``shard``'s rows by range, for a format that reads them its own way."""
    return _ROWS.get(shard.format)

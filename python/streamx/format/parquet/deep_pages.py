"""A row deep in a remote row group, served from the one data page of each column chunk
that holds it, where the file carries an offset index (the Parquet page index, which
``pyarrow.parquet.write_table(..., write_page_index=True)`` writes, and parquet-mr and Spark
write by default).

The offset index gives, for each data page of a column chunk, where it lies and the first
row it holds. So a row needs of each chunk that one page, and its dictionary page (the bytes
before the first data page) if the page holds dictionary indices: a ranged GET or two,
however deep the row lies, where
:mod:`.early_rows` otherwise reads the chunk's start up to the row. The indexes of a row
group's read columns lie together before the footer: one GET reads them, once per row group.
The core reads both the footer's spans and each index (``_core.parquet_offset_index_spans``,
``_core.parquet_page_locations``, bounds-checked: pages back to back inside the chunk, first
rows increasing), and decodes the dictionary page and data page as a chunk of that page's
rows (``_core.ParquetRows.decode``), which checks the page holds as many values as the index
says. Bytes that contradict the format raise
:class:`~streamx.exceptions.CorruptShardError` naming the file and row group.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from streamx import _core
from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo
from streamx.format.parquet.footer import cached_footer
from streamx.format.parquet.page_rows import reworded
from streamx.format.parquet.row_group import footer, where

__all__ = ["DeepColumn", "decode_page", "dictionary_wanted", "index_spans", "page_tables", "pread"]

Span = tuple[int, int]  # (offset in the file, length)


@dataclass
class DeepColumn:
    """One column chunk's data pages (from its offset index), and the one decoded last."""

    pages: list[tuple[int, int, int]]  # (offset, compressed size, first row) of each
    dictionary: Span  # the bytes before its first data page (its dictionary page, if any)
    rows: int  # the row group's rows
    fetched: set[int] = field(default_factory=set)  # pages in the scratch file; -1: dict
    encodings: dict[int, int] = field(default_factory=dict)  # page -> its header's encoding
    page: int = -1  # the page ``decoded`` holds
    decoded: _core.ParquetRows | None = None
    firsts: list[int] = field(init=False)  # each page's first row

    def __post_init__(self) -> None:
        self.firsts = [p[2] for p in self.pages]

    def page_of(self, row: int) -> int:
        return bisect.bisect_right(self.firsts, row) - 1

    def holds(self, row: int) -> bool:
        return self.decoded is not None and self.page == self.page_of(row)

    def wants(self, row: int) -> list[tuple[int, Span]]:
        """The spans (keyed as ``fetched``) to read first for ``row``, that are not read
        yet: its page, and the dictionary page if it costs little more (a page of
        dictionary indices needs it; a page of plain values, as after pyarrow's fallback
        from a dictionary grown past 1 MiB, does not: :meth:`dictionary_wanted`)."""
        k = self.page_of(row)
        out = [] if k in self.fetched else [(k, self.pages[k][:2])]
        if 0 < self.dictionary[1] <= max(self.pages[k][1], _SMALL) and -1 not in self.fetched:
            out.append((-1, self.dictionary))
        return out

    def first_row(self) -> int:
        return self.pages[self.page][2]


_SMALL = 64 << 10  # a dictionary page read with the data page whatever its encoding
_INDICES = frozenset([2, 8])  # PLAIN_DICTIONARY, RLE_DICTIONARY: entries of the dictionary


def dictionary_wanted(
    deep: DeepColumn, row: int, read: Callable[[int, int], bytes], named: str, name: str
) -> bool:
    """Whether the page holding ``row`` (read already) needs the dictionary page, not read
    yet.

    Raises:
        CorruptShardError: Naming ``named`` and the column, if the page's header
            contradicts the format.
    """
    if -1 in deep.fetched or not deep.dictionary[1]:
        return False
    return _encoding(deep, row, read, named, name) in _INDICES


def _encoding(
    deep: DeepColumn, row: int, read: Callable[[int, int], bytes], named: str, name: str
) -> int:
    k = deep.page_of(row)
    if k in deep.encodings:  # its header parsed already, by :func:`dictionary_wanted`
        return deep.encodings[k]
    offset, size, _ = deep.pages[k]
    try:
        encoding = _core.parquet_page_encoding(read(offset, size))
    except ValueError as err:
        raise CorruptShardError(
            f"{named} does not decode (column {name!r}: {err}, its page {k} of the offset "
            "index); the file may have changed on the server"
        ) from err
    deep.encodings[k] = encoding
    return encoding


def index_spans(shard: ShardInfo, positions: list[int]) -> list[Span | None] | None:
    """The offset index span of each read column (by its place in the row group), or
    ``None`` when none of them has one.

    Raises:
        CorruptShardError: Naming the file and row group, if the footer contradicts the
            format.
    """
    path, md = footer(shard)
    number = int(shard.extra["row_group"])
    rg = md.row_group(number)
    if not any(rg.column(p).has_offset_index for p in positions):
        return None
    metadata = cached_footer(path, str(shard.extra["source"])).thrift
    try:
        spans = _core.parquet_offset_index_spans(metadata, number, int(shard.extra["source_size"]))
    except ValueError as err:
        raise CorruptShardError(f"{where(shard)} does not decode ({err})") from err
    if len(spans) != rg.num_columns:
        raise CorruptShardError(
            f"{where(shard)} does not decode (the footer's offset indexes name {len(spans)} "
            f"columns, its metadata {rg.num_columns})"
        )
    return [spans[p] for p in positions]


def page_tables(
    blob: bytes,
    at: int,
    spans: list[Span | None],
    chunks: list[tuple[str, int, int]],
    rows: int,
    named: str,
) -> list[DeepColumn | None]:
    """Each read column's pages, from its offset index in ``blob`` (the file's bytes from
    ``at``); ``chunks``: each column's name, start and length; ``named``: the file and row
    group, as errors name them.

    Raises:
        CorruptShardError: Naming the file, row group and column, if an index contradicts
            the format or its chunk.
    """
    out: list[DeepColumn | None] = []
    for span, (name, start, length) in zip(spans, chunks, strict=True):
        if span is None:
            out.append(None)
            continue
        index = blob[span[0] - at : span[0] - at + span[1]]
        try:
            pages = _core.parquet_page_locations(index, start, length, rows)
        except ValueError as err:
            raise CorruptShardError(
                f"{named} does not decode (column {name!r}: {err}); the file may have "
                "changed on the server"
            ) from err
        out.append(DeepColumn(pages, (start, pages[0][0] - start), rows))
    return out


def decode_page(
    deep: DeepColumn,
    row: int,
    read: Callable[[int, int], bytes],
    chunk: tuple[str, int, int, int, str],
    named: str,
) -> bool:
    """Decodes the page of ``deep`` holding ``row`` (its dictionary page before it), read by
    ``read(offset, length)``; ``chunk``: the column's name, physical type, codec, max
    definition level and Arrow type. False when the core leaves the column to pyarrow.

    Raises:
        CorruptShardError: Naming ``named`` and the column, if the pages contradict the
            format or the offset index.
    """
    k = deep.page_of(row)
    offset, size, first = deep.pages[k]
    end = deep.pages[k + 1][2] if k + 1 < len(deep.pages) else deep.rows
    name = chunk[0]
    dictionary = b""
    if deep.dictionary[1] and _encoding(deep, row, read, named, name) in _INDICES:
        dictionary = read(*deep.dictionary)
    data = dictionary + read(offset, size)
    _, physical, codec, max_def, arrow = chunk
    spec = [(name, 0, len(data), physical, codec, max_def, arrow)]
    try:
        decoded = _core.ParquetRows.decode(data, spec, end - first, named)
    except CorruptShardError as err:
        raise reworded(err, named, f", its page {k} of the offset index") from err
    deep.page, deep.decoded = k, decoded
    return decoded is not None


def pread(fd: int) -> Callable[[int, int], bytes]:
    """Reads ``length`` bytes at ``offset`` of ``fd`` (the scratch file), in full."""

    def read(offset: int, length: int) -> bytes:
        data = os.pread(fd, length, offset) if length else b""
        if len(data) != length:  # a sparse file reads zeros, never short: a bug if so
            raise OSError(f"the scratch file holds {len(data)} of {length} bytes at {offset}")
        return data

    return read

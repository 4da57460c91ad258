"""A row of a remote row group served before the row group has arrived: the first pages of
each read column chunk, fetched by range, decoded by the core (:mod:`.page_rows`).

A row group is fetched whole (its projected column chunks, :mod:`.fetch`) before any of its
rows is read, so the first sample of an epoch, and ``dataset[i]`` of a row group not local,
wait for megabytes they do not need. A row needs, of each column chunk, its dictionary page
and the data pages up to the row: the start of the chunk. So each chunk's first bytes are
read by range (its dictionary page, whose span the footer gives, and about as far into its
values as the row lies; on to the end of the page cut off while the row is not in a whole
page yet), the whole pages of that prefix decoded, and the row handed out as the whole row
group would hand it out (the same decoder, the same values). The ranges are read while the
row group's download runs on: what MDS range reads do for a shard
(:mod:`streamx.cache.range_reads`).

Where a column chunk has an offset index (the page index), a row is read from the one data
page holding it instead, and the chunk's dictionary page where that page needs it
(:mod:`.deep_pages`): a row deep in the row group costs what the first row does. The group's
offset indexes are read once, by one GET.

Off with ``STREAMX_RANGE_READS=0``, and while the file's host throttles (each GET would
delay the row group's own). The first row read this way of a row group no download has begun
starts its download in the background, as an MDS shard's first range reads do.

Bounds, as for an MDS shard read by range: a row group of at least ``_MIN_GROUP`` read bytes
(a smaller one arrives about as soon as its first pages would) is read this way up to
``_BUDGET`` bytes per process and a quarter of its read bytes (past that its rows wait for
it, as before: the rest comes sooner whole), and only
where the core decodes its rows (flat columns of numbers, strings and binary, no cast, no
image columns: :func:`.page_rows.column_plan`). Every range is
checked against the file's size and pinned to the version its footer was read at (the
listing's ``ETag``, else the first answer's): an answer of another version or size serves
nothing, and the row group's download reports it. Bytes that contradict the format raise
:class:`~streamx.exceptions.CorruptShardError` naming the file and row group.
"""

from __future__ import annotations

import bisect
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from streamx import _core
from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo
from streamx.format.parquet.deep_pages import (
    DeepColumn,
    decode_page,
    dictionary_wanted,
    index_spans,
    page_tables,
    pread,
)
from streamx.format.parquet.page_rows import CODECS, column_plan, reworded
from streamx.format.parquet.row_group import footer, kept_rows, where
from streamx.storage.object_pin import ObjectPin
from streamx.storage.object_sources import source_for
from streamx.storage.pool import range_pool
from streamx.storage.settings import range_reads_enabled
from streamx.storage.throttle import host_calm

__all__ = ["early_row"]

_FIRST = 64 << 10  # the least first read of a chunk: a page or two of most columns
_PEEK = 16 << 10  # read past a page's end: the next page's header, a small page whole
# Bytes one process reads by range of one row group. More than an MDS shard's 4 MiB: a row
# needs each column's dictionary page (up to 1 MiB each, as pyarrow writes them) and its
# first data page (as much again) however small the row itself.
_BUDGET = 32 << 20
_MIN_GROUP = 4 << 20  # a smaller row group arrives about as soon as its first pages would
_KEPT = 4  # row groups whose ranges a process keeps


@dataclass
class _Column:
    """One read column chunk: where it lies, how it decodes, what of it is read."""

    name: str
    position: int  # its place among the row group's column chunks
    start: int
    length: int
    spec: tuple[int, int, int, str]  # physical type, codec, max definition level, Arrow type
    dictionary: int  # its dictionary page's bytes (0 without one), as the footer places it
    read: int = 0  # bytes of its start fetched so far
    rows: _core.ParquetRows | None = None  # the core's rows of its whole pages read so far
    deep: DeepColumn | None = None  # its pages, where its offset index places them


@dataclass
class _Group:
    """What one process has read of a row group by range."""

    columns: list[_Column]
    rows: int  # the row group's rows in its file (before a row filter)
    scratch: int  # the fd of a file of the ranges at their own offsets (sparse, unnamed)
    pin: ObjectPin
    budget: int  # at most _BUDGET, and a quarter of the row group's read bytes
    spent: int = 0
    done: bool = False  # budget spent or a range refused: its rows wait for the row group
    indexed: bool = False  # its offset indexes read (where its columns have them)
    lock: threading.Lock = field(default_factory=threading.Lock)  # one reader at a time
    count: threading.Lock = field(default_factory=threading.Lock)  # guards ``spent``


_Deep = list[tuple[_Column, DeepColumn]]  # columns read by their offset index, and their pages
_Keyed = tuple[int, tuple[int, int]]  # a span of a column's pages: its key and (start, length)
_GROUPS: dict[str, _Group] = {}
_LOCK = threading.Lock()


def _forked() -> None:
    """In a forked child: the parent's groups are not its own. Only their fds (copies) are
    closed: a lock a parent's thread held at the fork is never released here (``_LOCK``'s)."""
    global _LOCK
    _LOCK = threading.Lock()
    for group in _GROUPS.values():
        os.close(group.scratch)
    _GROUPS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def early_row(
    shard: ShardInfo, index: int, timeout: float, downloading: bool = False
) -> dict[str, Any] | None:
    """Row ``index`` of the row group ``shard``, read from the first pages of its column
    chunks by range; ``None`` when it must wait for the row group (read in place, local
    already, not the core's to decode, or its bytes by range spent or refused).

    ``downloading``: the row group is being prefetched, and is not the reader's first (the
    caller decides: ``StreamingDataset._early_row``). It is then not opened for range
    reads: its parallel parts land sooner than reading it twice pays off, as for MDS shards.

    Raises:
        CorruptShardError: Naming the file and row group, if a page contradicts the format.
    """
    extra = shard.extra
    if extra.get("in_place") or extra.get("cast") or extra.get("images"):
        return None
    url = str(extra["source"])
    if "://" not in url or url.startswith("file://") or not range_reads_enabled():
        return None
    if not host_calm(url):  # a throttling store counts requests: the row group's GETs only
        return None
    key = "\0".join(
        str(extra.get(k)) for k in ("source", "source_version", "row_group", "read_columns")
    )
    if os.path.exists(shard.local_path(shard.raw_data)):
        _drop(key)
        return None
    group = _group(shard, key, downloading)
    if group is None:
        return None
    row = int(kept_rows(shard)[index]) if extra.get("kept") else index
    with group.lock:
        if group.done:
            return None
        return _row(shard, group, row, time.monotonic() + timeout)


def _drop(key: str) -> None:
    with _LOCK:
        group = _GROUPS.pop(key, None)
    if group is not None:
        _close(group)


def _close(group: _Group) -> None:
    with group.lock:  # not while a reader of it reads its scratch file
        group.done = True
        os.close(group.scratch)


def _group(shard: ShardInfo, key: str, downloading: bool) -> _Group | None:
    """The row group's ranges read so far, opened if it may be (see :func:`early_row`)."""
    with _LOCK:
        found = _GROUPS.get(key)
        if found is not None or downloading:
            return found
        columns = _columns(shard)
        if columns is None or sum(c.length for c in columns) < _MIN_GROUP:
            return None
        oldest = [_GROUPS.pop(k) for k in list(_GROUPS)[: max(len(_GROUPS) + 1 - _KEPT, 0)]]
        found = _GROUPS[key] = _open(shard, columns)
    for old in oldest:
        _close(old)
    return found


def _open(shard: ShardInfo, columns: list[_Column]) -> _Group:
    extra = shard.extra
    rows = int(footer(shard)[1].row_group(int(extra["row_group"])).num_rows)
    pin = ObjectPin(str(extra["source"]))
    version = str(extra["source_version"])
    if len(version) > 2 and version[0] == version[-1] == '"':  # an ETag, as fetch pins it
        pin.check(version, None)
    budget = min(_BUDGET, sum(c.length for c in columns) // 4)
    return _Group(columns, rows, _scratch(), pin, budget)


def _scratch() -> int:
    """An unnamed sparse file (mode 0600) as a bare fd, closed when its group goes or by the
    system at exit: no file object for the collector to find open, or a forked child to close."""
    fd, name = tempfile.mkstemp(prefix="streamx-early-rows-")
    os.unlink(name)
    return fd


def _columns(shard: ShardInfo) -> list[_Column] | None:
    """Each read column chunk, or ``None`` if some column is not the core's to decode."""
    path, md = footer(shard)
    plan = column_plan(path, md, tuple(shard.extra["read_columns"]))
    if plan is None:
        return None
    rg = md.row_group(int(shard.extra["row_group"]))
    out = []
    for name, index, physical, max_def, arrow in plan:
        col = rg.column(index)
        codec = CODECS.get(col.compression)
        if codec is None:
            return None
        data = start = int(col.data_page_offset)
        if col.has_dictionary_page and col.dictionary_page_offset:
            start = min(start, int(col.dictionary_page_offset))
        length = int(col.total_compressed_size)
        spec = (physical, codec, max_def, arrow)
        dictionary = min(max(data - start, 0), length)
        out.append(_Column(name, index, start, length, spec, dictionary))
    return out


def _row(shard: ShardInfo, group: _Group, row: int, deadline: float) -> dict[str, Any] | None:
    """Row ``row`` from each column's pages, read on (the columns side by side) where they
    do not hold it yet: the page holding it where the column has an offset index
    (:mod:`.deep_pages`), else its whole pages from its start; ``None`` once the group is
    done."""
    if not group.indexed:
        group.indexed = True
        if not _read_indexes(shard, group, deadline):
            group.done = True
            return None
    short = [c for c in group.columns if c.deep is None and (c.rows is None or row >= len(c.rows))]
    deep = [(c, c.deep) for c in group.columns if c.deep is not None and not c.deep.holds(row)]
    if (short or deep) and not _fits(group, row, deep):
        group.done = True
        return None
    reads = [partial(_read_to, shard, group, c, row, deadline) for c in short]
    reads += [partial(_read_spans, shard, group, d, d.wants(row), deadline) for _, d in deep]
    read, named = pread(group.scratch), where(shard)
    if not (
        _side_by_side(reads)
        and _read_dictionaries(shard, group, deep, row, deadline)
        and all(decode_page(d, row, read, (c.name, *c.spec), named) for c, d in deep)
    ):
        group.done = True
        return None
    out: dict[str, Any] = {}
    for column in group.columns:
        if column.deep is not None:
            assert column.deep.decoded is not None  # decoded above or before
            out.update(column.deep.decoded.row(row - column.deep.first_row()))
            continue
        assert column.rows is not None  # each holds the row now: read above or before
        out.update(column.rows.row(row))
    return out


def _read_indexes(shard: ShardInfo, group: _Group, deadline: float) -> bool:
    """Reads the offset indexes of the group's columns (one GET: they lie together), where
    they have them and the budget allows; False if the GET fails."""
    spans = index_spans(shard, [c.position for c in group.columns])
    held = [span for span in spans or [] if span is not None]
    if not held:
        return True
    low, high = min(s[0] for s in held), max(s[0] + s[1] for s in held)
    if group.spent + high - low > group.budget // 2:  # not worth it: their prefixes, then
        return True
    if not _fetch_span(shard, group, low, high - low, deadline):
        return False
    blob = pread(group.scratch)(low, high - low)
    chunks = [(c.name, c.start, c.length) for c in group.columns]
    assert spans is not None  # ``held`` is not empty
    tables = page_tables(blob, low, spans, chunks, group.rows, where(shard))
    for column, table in zip(group.columns, tables, strict=True):
        column.deep = table
    return True


def _side_by_side(reads: list[partial[bool]]) -> bool:
    """Runs ``reads`` (on the range pool, when more than one); whether all succeeded."""
    if len(reads) > 1:
        return all(list(range_pool().map(lambda read: read(), reads)))
    return all(read() for read in reads)


def _read_dictionaries(
    shard: ShardInfo, group: _Group, deep: _Deep, row: int, deadline: float
) -> bool:
    """Reads the dictionary pages not read yet that the pages just read need."""
    read, named = pread(group.scratch), where(shard)
    reads = [
        partial(_read_spans, shard, group, d, [(-1, d.dictionary)], deadline)
        for c, d in deep
        if dictionary_wanted(d, row, read, named, c.name)
    ]
    return _side_by_side(reads)


def _read_spans(
    shard: ShardInfo, group: _Group, deep: DeepColumn, spans: list[_Keyed], deadline: float
) -> bool:
    """Fetches ``spans`` of a column's pages (keyed as :class:`.DeepColumn` keys them)."""
    for key, (start, length) in spans:
        if not _fetch_span(shard, group, start, length, deadline):
            return False
        deep.fetched.add(key)
    return True


def _read_to(shard: ShardInfo, group: _Group, column: _Column, row: int, deadline: float) -> bool:
    """Reads ``column``'s start until its whole pages hold ``row``; decodes them. False when
    the budget is spent, a range fails, or the core leaves the column to pyarrow."""
    named = where(shard)
    want = _guess(column, row, group.rows)
    while True:
        want = min(want, column.length)
        if want > column.read and not _fetch(shard, group, column, want, deadline):
            return False
        prefix = os.pread(group.scratch, column.read, column.start)
        try:
            ends, rows, next_end = _core.parquet_whole_pages(prefix, column.length)
        except ValueError as err:  # a header contradicts the format
            raise CorruptShardError(
                f"{named} does not decode (column {column.name!r}: {err})"
            ) from err
        whole = bisect.bisect_right(rows, row)  # the shortest run of pages holding the row
        if whole < len(rows):
            return _decode(named, column, prefix[: ends[whole]], rows[whole])
        # On to the end of the page cut off (and the next one's header), when its header
        # says where that is; else twice as far.
        want = 2 * column.read if next_end is None else next_end + _PEEK
        if column.read >= column.length:
            raise CorruptShardError(
                f"{named} does not decode (column {column.name!r}: its pages hold "
                f"{rows[-1] if rows else 0} rows, the footer says {group.rows})"
            )


def _guess(column: _Column, row: int, rows: int) -> int:
    """How far into ``column`` row ``row`` likely lies: its dictionary page (whose span the
    footer gives), then as far into the values as the row lies, and a tenth more."""
    values = column.length - column.dictionary
    return max(_FIRST, column.dictionary + values * (row + 1) // max(rows, 1) * 11 // 10 + _PEEK)


def _fits(group: _Group, row: int, deep: _Deep) -> bool:
    """Whether the row's guessed first pages of every column without an offset index, and
    the pages ``deep`` (columns with one) need, fit the group's budget (else no GET is spent
    on them)."""
    prefixes = [c for c in group.columns if c.deep is None]
    more = sum(max(_guess(c, row, group.rows) - c.read, 0) for c in prefixes)
    more += sum(n for _, d in deep for _, (_, n) in d.wants(row))
    return group.spent + more <= group.budget


def _fetch(shard: ShardInfo, group: _Group, column: _Column, want: int, deadline: float) -> bool:
    """Reads ``column``'s start up to ``want``; False past the budget or if the GET fails."""
    if not _fetch_span(shard, group, column.start + column.read, want - column.read, deadline):
        return False
    column.read = want
    return True


def _fetch_span(shard: ShardInfo, group: _Group, start: int, length: int, deadline: float) -> bool:
    """Reads the file's bytes ``[start, start + length)`` into the scratch file at their
    offset; False past the budget or if the GET fails."""
    extra = shard.extra
    with group.count:  # the columns are read side by side
        if group.spent + length > group.budget:
            return False
        group.spent += length
    try:
        source_for(str(extra["source"])).fetch_range(
            group.scratch, start, length, int(extra["source_size"]), deadline, group.pin
        )
    except OSError:  # another version or size, a timeout: the row group's download says
        return False
    return True


def _decode(named: str, column: _Column, pages: bytes, rows: int) -> bool:
    physical, codec, max_def, arrow = column.spec
    chunk = [(column.name, 0, len(pages), physical, codec, max_def, arrow)]
    try:
        column.rows = _core.ParquetRows.decode(pages, chunk, rows, named)
    except CorruptShardError as err:
        raise reworded(err, named) from err
    return column.rows is not None

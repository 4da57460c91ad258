"""A batch of a Parquet source's rows, column by column.

The batched ``StreamingDataLoader`` path asks for whole batches of sample ids. Here the ids
are grouped by row group; each row group's decoded, projected and filtered table is the one
the per-sample path reads (kept through
:func:`~streamx.format.parquet.decoded_row_group.decoded`), and each column of the batch is
built from it by :mod:`.arrow_columns`: numbers as arrays, strings and blobs as values made
by Arrow in C++, no dict per row.

A dataset with a string or binary column whose values average 4 KiB or more (images, audio)
goes another way where the core decodes its row groups' pages (flat columns, no cast, filter
or images: :mod:`.page_rows`): the batch is built from the core's rows, as the per-sample
path would hand them out (numbers stacked into arrays within a row group). Decoding the
whole table with pyarrow and converting its blobs costs several times more (row groups of
100 KB blobs: 4x) than the core's rows, which copy each blob once, into its ``bytes``; for
short values the dict per row costs more than Arrow's columns.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from streamx.format.batch_parts import scatter, shard_parts
from streamx.format.index import ShardInfo
from streamx.format.parquet.arrow_columns import Piece, column, one_group, run_of, with_ways
from streamx.format.parquet.built_batches import BuiltBatches, ahead, split
from streamx.format.parquet.decode_ahead import DecodeAhead
from streamx.format.parquet.decoded_row_group import CACHE, decoded, decoded_key, done_reading
from streamx.format.parquet.row_group import parsed_footer
from streamx.format.parquet.run_marks import RunMarks

__all__ = ["ParquetRows", "RowColumns"]

# A batch: per column, its array (a fast column) or its rows' per-sample values.
RowColumns = dict[str, "np.ndarray[Any, Any] | list[Any]"]

# A string or binary column's mean bytes per value from which the core's rows build batches.
_BLOB_BYTES = 4096


class ParquetRows:
    """Batches of a dataset whose shards are all row groups of one set of columns.

    Args:
        shards: The dataset's shards, in order (see :meth:`over`).
    """

    def __init__(self, shards: Sequence[ShardInfo]) -> None:
        self._shards = list(shards)
        self._keys = [decoded_key(shard) for shard in self._shards]
        self._names = list(self._shards[0].extra["columns"])
        # One past each row group's last id.
        self._ends = np.cumsum([shard.samples for shard in self._shards]).tolist()
        self._for_rows: bool | None = None  # read through the core's rows (found on first use)
        self._ahead = DecodeAhead()
        self._marks = RunMarks()  # rows read by consecutive batches in order, not marked yet
        self._last = -1  # the row group the last batch of one row group read
        self._built = BuiltBatches()  # batches of a run cut ahead (see .built_batches)
        # Per row group, the ids of this process's pass not read yet (see expect); None
        # outside a pass that declared its ids.
        self._wanted: np.ndarray[Any, Any] | None = None

    @classmethod
    def over(cls, shards: Sequence[ShardInfo]) -> ParquetRows | None:
        """The batches of ``shards``, or ``None`` unless every shard is a Parquet row group
        and all read the same columns in the same order (every row then has the same keys,
        as a batch of dicts must)."""
        listed = list(shards)
        if not listed or any(shard.format != "parquet" for shard in listed):
            return None
        if len({tuple(shard.extra["columns"]) for shard in listed}) != 1:
            return None
        return cls(listed)

    @property
    def for_rows(self) -> bool:
        """Whether batches come from the core's rows (blobs of 4 KiB or more on average in
        the first row group), not from Arrow's columns."""
        if self._for_rows is None:
            self._for_rows = _has_blobs(self._shards[0])
        return self._for_rows

    def flat_columns(self) -> bool:
        """Whether every batch is built by Arrow and numpy alone, no Python per row: Arrow's
        columns (not the core's rows) of numbers, strings and binary, no image, no list, no
        cast to a unified schema (each file's footer gives the types)."""
        import pyarrow as pa

        if self.for_rows or any(s.extra.get("images") or s.extra.get("cast") for s in self._shards):
            return False  # a cast's types are not the footer's: not looked into
        schema = parsed_footer(self._shards[0])[1].schema
        names = self._shards[0].extra["read_columns"]
        if any(schema.get_field_index(name) < 0 for name in names):
            return False
        kinds = [schema.field(name).type for name in names]
        simple = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean)
        text = (
            pa.types.is_string,
            pa.types.is_large_string,
            pa.types.is_binary,
            pa.types.is_large_binary,
        )
        return all(any(test(kind) for test in simple + text) for kind in kinds)

    def expect(self, ids: np.ndarray[Any, Any] | None) -> None:
        """Declares more ids this process's pass will read (``None``: the pass ended).

        A DataLoader worker reads only its share of each row group (every other batch with
        two workers), so a decoded row group is never read through there: each worker would
        keep row groups up to the cache's bound. Counting the ids of its own pass, a worker
        drops a row group as soon as it has read its last id of it."""
        self._built.clear()
        if ids is None:
            self._wanted = None
            return
        groups = np.searchsorted(self._ends, ids[ids >= 0], side="right")
        counts = np.bincount(groups, minlength=len(self._shards))
        self._wanted = counts if self._wanted is None else self._wanted + counts

    def get_columns(self, ids: list[int]) -> RowColumns | None:
        """Samples ``ids`` (dataset-wide), in order, one array or list of values per column;
        ``None`` while a row group of theirs is not on local disk.

        Raises:
            IndexError: If an id lies outside the dataset.
            CorruptShardError: If a row group does not decode, as on the per-sample path.
        """
        built = self._built.take(ids)
        if built is not None:  # cut ahead by _run_columns: its rows are marked read now
            cut, (number, kept, key, size, at) = built
            self._marks.add(key, kept, at, at + len(ids), size)
            if self._wanted is not None:
                self._read_own(number, len(ids))
            return cut
        if not ids:
            return {name: [] for name in self._names}
        run = self._run(ids)
        if run is not None:
            return self._run_columns(*run, len(ids), ids[0])
        self._marks.flush()
        parts = shard_parts(self._ends, ids)
        for_rows = self.for_rows
        groups = []
        for shard, _, _ in parts:
            self._ahead.wait(shard)
            try:
                groups.append(decoded(self._shards[shard], self._keys[shard], for_rows=for_rows))
            except FileNotFoundError:
                return None
        pieces = [(group, positions, rows) for group, (_, positions, rows) in zip(groups, parts)]
        out = _page_columns(pieces, len(ids)) if for_rows else None
        if out is None and len(pieces) == 1:
            out = one_group(groups[0], pieces[0][2])
        elif out is None:
            names = groups[0].table.column_names  # the keys of the per-sample path's dicts
            out = {name: column(name, pieces, len(ids)) for name in names}
        for group, (shard, _, rows) in zip(groups, parts):
            done_reading(self._keys[shard], group, rows)
            self._read_own(shard, len(rows))
        if len(parts) == 1 and parts[0][0] != self._last:
            rows = parts[0][2]
            self._decode_next(parts[0][0], int(rows[-1]) - int(rows[0]) == len(rows) - 1)
        return out

    def _run(self, ids: list[int]) -> tuple[int, int] | None:
        """``(row group, first row)`` where ``ids`` run in order inside one row group read
        from Arrow's columns (a batch of a pass in order), else ``None``."""
        first, count = ids[0], len(ids)
        shard = bisect.bisect_right(self._ends, first)
        if first < 0 or shard == len(self._ends) or first + count > self._ends[shard]:
            return None
        if self.for_rows or ids != list(range(first, first + count)):
            return None
        return shard, first - (self._ends[shard - 1] if shard else 0)

    def _run_columns(self, shard: int, first: int, count: int, first_id: int) -> RowColumns | None:
        """The batch of ``count`` rows from row ``first`` of row group ``shard`` (dataset id
        ``first_id``): :meth:`get_columns` for a run, with its rows marked read once per
        run. A batch that continues the run of the batch before also cuts the batches after
        it in the row group (:func:`~.built_batches.ahead`)."""
        if shard != self._last:  # the last batch's row group was waited for then
            self._ahead.wait(shard)
        key = self._keys[shard]
        try:
            group = decoded(self._shards[shard], key)
        except FileNotFoundError:
            return None
        rows = self._shards[shard].samples
        batches = ahead(count, rows - first) if first_id == self._built.next_id else 1
        out = run_of(group, first, count * batches)
        if group.grown:  # its columns were made on this batch: counted at once
            group.grown = False
            CACHE.measure(key)
        if batches > 1:
            out, *rest = split(out, count, batches)
            self._built.keep(
                first_id + count, count, rest, (shard, group, key, rows, first + count)
            )
            if shard == self._last:  # the next row group may have landed since
                self._start_next(shard)
        self._built.next_id = first_id + count * batches
        self._marks.add(key, group, first, first + count, rows)
        self._read_own(shard, count)
        if shard != self._last:
            self._decode_next(shard, True)
        return out

    def _read_own(self, shard: int, count: int) -> None:
        """Counts ``count`` ids of row group ``shard`` read by the pass (see :meth:`expect`),
        and drops the group once the pass has no id of it left to read."""
        wanted = self._wanted
        if wanted is not None:
            wanted[shard] -= count
            if wanted[shard] <= 0:
                CACHE.drop(self._keys[shard])

    def _decode_next(self, shard: int, in_order: bool) -> None:
        """On a row group's first batch, if its rows run in order (``in_order``: a pass in
        order), starts decoding the next row group (:mod:`.decode_ahead`); not on the
        process's first batch, which would wait for the CPU that thread takes (images: first
        batch 0.6 -> 0.8 s)."""
        first, self._last = self._last < 0, shard
        if not first and in_order:
            self._start_next(shard)

    def _start_next(self, shard: int) -> None:
        """Starts decoding row group ``shard + 1`` ahead, unless it is under way, not on
        local disk yet (a cold pass: asked again as more batches are cut, so that it is
        decoded in the thread once it lands, not on the loop's thread) or not read here."""
        following = shard + 1
        if following == len(self._shards):
            return
        if self._wanted is not None and self._wanted[following] <= 0:
            return  # the pass reads none of it here (another worker reads it all)
        nxt, key, for_rows = self._shards[following], self._keys[following], self.for_rows
        path = None if nxt.extra.get("in_place") else nxt.local_path(nxt.raw_data)
        if for_rows:
            self._ahead.start(following, path, lambda: decoded(nxt, key, for_rows=True))
        else:  # the columns' ways too: numpy views or copies of the Arrow columns
            self._ahead.start(following, path, lambda: with_ways(decoded(nxt, key)))


def _has_blobs(shard: ShardInfo) -> bool:
    """Whether the row group reads a string or binary column whose values average
    :data:`_BLOB_BYTES` or more, uncompressed (its file's footer says)."""
    import pyarrow as pa

    parsed = parsed_footer(shard)[1]  # one lookup for the metadata and the schema
    md, schema = parsed.metadata, parsed.schema
    read = set(shard.extra["read_columns"])
    group = md.row_group(int(shard.extra["row_group"]))
    for index in range(group.num_columns):
        chunk = group.column(index)
        name = chunk.path_in_schema
        if name not in read or schema.get_field_index(name) < 0:
            continue
        kind = schema.field(name).type
        blobs = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        if (blobs or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)) and (
            chunk.total_uncompressed_size >= _BLOB_BYTES * max(chunk.num_values, 1)
        ):
            return True
    return False


def _page_columns(parts: list[Piece], count: int) -> RowColumns | None:
    """The batch from the rows the core decoded (:mod:`.page_rows`), or ``None`` unless
    every row group has them (a dataset with large blobs: see the module's docstring). A
    batch of one row
    group has its numbers as arrays; one over several row groups, as values (the loader
    stacks them as ``default_collate`` does)."""
    pieces = []
    for group, positions, rows in parts:
        if group.pages is None:
            return None
        row = group.pages.row
        pieces.append((positions, [row(index) for index in rows.tolist()]))
    names = list(pieces[0][1][0])  # the keys of the per-sample path's dicts
    if len(pieces) == 1:
        samples = pieces[0][1]
        return {name: _stacked([sample[name] for sample in samples]) for name in names}
    return {
        name: scatter(
            [(positions, [sample[name] for sample in samples]) for positions, samples in pieces],
            count,
        )
        for name in names
    }


# The dtype ``default_collate`` gives a batch of a row group's Python numbers.
_STACKED: dict[type, type] = {int: np.int64, float: np.float64}


def _stacked(values: list[Any]) -> np.ndarray[Any, Any] | list[Any]:
    """One row group's values of a column as the array ``default_collate`` makes of them,
    or as they are (not numbers, a null, an int past ``int64``). The core gives a column's
    rows one Python type, or ``None``: the first value and a scan for ``None`` decide."""
    dtype = _STACKED.get(type(values[0]))
    if dtype is None or None in values:
        return values
    try:
        return np.array(values, dtype)
    except OverflowError:  # default_collate refuses such ints: the values path raises as it does
        return values

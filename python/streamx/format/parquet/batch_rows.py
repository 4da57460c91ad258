"""A batch of a Parquet source's rows, column by column, with no dict per row.

The batched ``StreamingDataLoader`` path asks for whole batches of sample ids. Here the ids
are grouped by row group; each row group's decoded, projected and filtered table is the one
the per-sample path reads (kept through
:func:`~streamx.format.parquet.decoded_row_group.decoded`).
A column of numbers without nulls becomes one numpy array per row group, once, and a batch
is one ``np.take`` from it; a list column whose rows all hold as many numbers becomes one
2-D array, a view of Arrow's flattened values buffer where Arrow allows. Any other column
comes as its rows' values, exactly those the per-sample path hands out, for the loader to
collate as torch's ``default_collate`` would.

The arrays equal what ``default_collate`` makes of the per-sample values: a Python ``int``
column is ``int64`` whatever its Arrow width, a ``float`` one ``float64`` (``float16`` and
``float32`` included) and a ``bool`` one ``bool``; a row's numpy list keeps its Arrow type's
dtype. So the choices follow the per-sample path's own, made per row group over the whole
column (where a null anywhere in a list column changes its rows' dtype there, so it does
here): a column with nulls, a ``uint64`` column past ``int64``, lists of unequal lengths,
images and every other type come as values. A batch whose row groups disagree on a column
(one has nulls, or their lists differ in length) gets that column as values from all of them.

A dataset that reads a string or binary column goes another way where the core decodes its
row groups' pages (flat columns, no cast, filter or images: :mod:`.page_rows`): the batch is
built from the core's rows, as the per-sample path would hand them out (numbers stacked into
arrays within a row group). Decoding the whole table with pyarrow and converting its strings
or blobs costs several times more (row groups of 100 KB blobs: 4x) than the core's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from streamx.format.batch_parts import scatter, shard_parts
from streamx.format.index import ShardInfo
from streamx.format.parquet.arrow_numpy import numpy_values
from streamx.format.parquet.decoded_row_group import (
    DecodedRowGroup,
    decoded,
    decoded_key,
    done_reading,
)
from streamx.format.parquet.python_values import numeric_lists
from streamx.format.parquet.row_group import footer

__all__ = ["ParquetRows", "RowColumns"]

# A batch: per column, its array (a fast column) or its rows' per-sample values.
RowColumns = dict[str, "np.ndarray[Any, Any] | list[Any]"]
# The rows of one row group a batch reads: the row group (its shard number, then its decoded
# table), where they go in the batch (``None``: the whole batch is theirs), which rows.
_Piece = tuple[DecodedRowGroup, "np.ndarray[Any, Any] | None", "np.ndarray[Any, Any]"]

_INT64_MAX = np.iinfo(np.int64).max


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

    def get_columns(self, ids: list[int]) -> RowColumns | None:
        """Samples ``ids`` (dataset-wide), in order, one array or list of values per column;
        ``None`` while a row group of theirs is not on local disk.

        Raises:
            IndexError: If an id lies outside the dataset.
            CorruptShardError: If a row group does not decode, as on the per-sample path.
        """
        if not ids:
            return {name: [] for name in self._names}
        parts = shard_parts(self._ends, ids)
        if self._for_rows is None:
            self._for_rows = _has_text(self._shards[0])
        for_rows = self._for_rows
        groups = []
        for shard, _, _ in parts:
            try:
                groups.append(decoded(self._shards[shard], self._keys[shard], for_rows=for_rows))
            except FileNotFoundError:
                return None
        pieces = [(group, positions, rows) for group, (_, positions, rows) in zip(groups, parts)]
        out = _page_columns(pieces, len(ids)) if for_rows else None
        if out is None:
            names = groups[0].table.column_names  # the keys of the per-sample path's dicts
            out = {name: _column(name, pieces, len(ids)) for name in names}
        for group, (shard, _, rows) in zip(groups, parts):
            done_reading(self._keys[shard], group, rows)
        return out


def _has_text(shard: ShardInfo) -> bool:
    """Whether the row group reads a string or binary column (its file's footer says)."""
    import pyarrow as pa

    schema = footer(shard)[1].schema.to_arrow_schema()
    names = [name for name in shard.extra["read_columns"] if name in schema.names]
    return any(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        for kind in (schema.field(name).type for name in names)
    )


def _page_columns(parts: list[_Piece], count: int) -> RowColumns | None:
    """The batch from the rows the core decoded (:mod:`.page_rows`), or ``None`` unless
    every row group has them. For a dataset with strings or blobs: decoding the whole table
    with pyarrow, then its strings or blobs to Python, costs several times more than the
    core's rows (a 100 KB blob is copied once, into its ``bytes``). A batch of one row
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


def _column(name: str, parts: list[_Piece], count: int) -> np.ndarray[Any, Any] | list[Any]:
    if len(parts) == 1:
        group, _, rows = parts[0]
        array = _array(group, name)
        if array is None:
            return _values(group, name, rows)
        taken: np.ndarray[Any, Any] = array.take(rows, axis=0)
        return taken  # a fresh, writable array
    found = [_array(group, name) for group, _, _ in parts]
    arrays = [a for a in found if a is not None]
    shapes = {(a.dtype, a.shape[1:]) for a in arrays}
    if len(arrays) == len(parts) and len(shapes) == 1:
        dtype, shape = shapes.pop()
        out = np.empty((count, *shape), dtype)
        for (_, positions, rows), array in zip(parts, arrays, strict=True):
            out[positions] = array.take(rows, axis=0)
        return out
    return scatter(
        [(positions, _values(group, name, rows)) for group, positions, rows in parts], count
    )


def _array(group: DecodedRowGroup, name: str) -> np.ndarray[Any, Any] | None:
    """The column of the whole row group as one array, if it is a fast one (kept)."""
    if name not in group.arrays:
        array = None if name in group.images else _as_array(group.table.column(name))
        group.arrays[name] = array
        if array is not None and array.base is None:  # a copy, not a view of Arrow's buffer
            group.grow(array.nbytes)
    found: np.ndarray[Any, Any] | None = group.arrays[name]
    return found


def _as_array(column: Any) -> np.ndarray[Any, Any] | None:
    import pyarrow as pa

    kind = column.type
    array = column.combine_chunks()
    if pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _list_array(array) if numeric_lists(array) else None
    if array.null_count:
        return None
    if pa.types.is_boolean(kind):
        return np.asarray(numpy_values(array), np.bool_)
    if pa.types.is_floating(kind):
        return np.asarray(numpy_values(array), np.float64)
    if pa.types.is_integer(kind):
        values = numpy_values(array)
        if values.dtype == np.uint64 and len(values) and values.max() > _INT64_MAX:
            return None  # default_collate refuses such ints: the values path raises as it does
        return np.asarray(values, np.int64)
    return None


def _list_array(array: Any) -> np.ndarray[Any, Any] | None:
    """Rows of as many numbers each as one 2-D array (zero-copy where Arrow allows)."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(array.type):
        values = numpy_values(array.flatten())
        return values.reshape(len(array), array.type.list_size)
    offsets = numpy_values(array.offsets)
    lengths = np.diff(offsets)
    if len(lengths) == 0 or (lengths != lengths[0]).any():
        return None  # ragged: each row's own array, as on the per-sample path
    values = numpy_values(array.values)
    return values[offsets[0] : offsets[-1]].reshape(len(array), int(lengths[0]))


def _values(group: DecodedRowGroup, name: str, rows: np.ndarray[Any, Any]) -> list[Any]:
    """The per-sample path's values of ``rows`` in column ``name`` (decoded once per row
    group: per batch, Arrow's ``take`` costs more than indexing a list)."""
    everything = group.values(name)
    return [everything[row] for row in rows.tolist()]

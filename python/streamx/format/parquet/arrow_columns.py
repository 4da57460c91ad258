"""One column of a batch built from the decoded Arrow tables of its row groups, with no dict
per row.

A column of numbers without nulls becomes one numpy array per row group, once, and a batch
is one ``np.take`` from it; a list column whose rows all hold as many numbers becomes one
2-D array, a view of Arrow's flattened values buffer where Arrow allows. Strings, binary and
numbers with nulls come as the rows' Python values made by Arrow in C++: ``to_pylist`` of
a zero-copy slice where the rows run in order (the usual batch), else of the row group's
whole column once (per batch, Arrow's ``take`` costs more than indexing that list). Lists
of other shapes and images come as the per-sample path's values of the whole column.

The arrays equal what ``default_collate`` makes of the per-sample values: a Python ``int``
column is ``int64`` whatever its Arrow width, a ``float`` one ``float64`` (``float16`` and
``float32`` included) and a ``bool`` one ``bool``; a row's numpy list keeps its Arrow type's
dtype. So the choices follow the per-sample path's own, made per row group over the whole
column (where a null anywhere in a list column changes its rows' dtype there, so it does
here): a column with nulls, a ``uint64`` column past ``int64``, lists of unequal lengths,
images and every other type come as values. A batch whose row groups disagree on a column
(one has nulls, or their lists differ in length) gets that column as values from all of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamx.format.batch_parts import scatter
from streamx.format.parquet.arrow_numpy import numpy_values
from streamx.format.parquet.decoded_row_group import DecodedRowGroup
from streamx.format.parquet.python_values import numeric_lists

__all__ = ["Piece", "column", "one_group", "run_of", "with_ways"]

# The rows of one row group a batch reads: the row group, where they go in the batch
# (``None``: the whole batch is theirs), which rows.
Piece = tuple[DecodedRowGroup, "np.ndarray[Any, Any] | None", "np.ndarray[Any, Any]"]

_INT64_MAX = np.iinfo(np.int64).max

# A column's way into a batch: its name, its array (numbers), and its Arrow array where
# Arrow's ``to_pylist`` gives the per-sample values (else the row group's values are used).
_Way = tuple[str, "np.ndarray[Any, Any] | None", Any]


def one_group(group: DecodedRowGroup, rows: np.ndarray[Any, Any]) -> dict[str, Any]:
    """The batch of ``rows`` (non-empty), all of ``group`` (the usual batch), every column
    as :func:`column` makes it, with the choices per column made once per row group."""
    listed = rows.tolist()
    first, count = listed[0], len(listed)
    if listed == list(range(first, first + count)):
        return run_of(group, first, count)
    out: dict[str, Any] = {}
    for name, array, _ in _ways(group):
        if array is not None:
            out[name] = array.take(rows, axis=0)  # a fresh, writable array
        else:
            everything = group.values(name)
            out[name] = [everything[row] for row in listed]
    return out


def run_of(group: DecodedRowGroup, first: int, count: int) -> dict[str, Any]:
    """The batch of rows ``first`` to ``first + count`` (a run, as a pass in order reads
    them) of ``group``: :func:`one_group`'s columns by slices, no gather."""
    stop = first + count
    # Made at every batch of a pass in order: one comprehension, no lookup per column.
    return {
        name: array[first:stop].copy()  # a fresh, writable array
        if array is not None
        else arrow.slice(first, count).to_pylist()
        if arrow is not None
        else group.values(name)[first:stop]
        for name, array, arrow in group.ways or _ways(group)
    }


def with_ways(group: DecodedRowGroup) -> DecodedRowGroup:
    """``group`` with its columns' ways into a batch made (in the decode-ahead thread, so
    that the loop's thread does not make them on the row group's first batch)."""
    _ways(group)
    return group


def _ways(group: DecodedRowGroup) -> list[_Way]:
    """Each column's way into a batch, made on the row group's first batch (kept on it)."""
    ways = group.ways
    if ways is None:
        ways = group.ways = [_way(group, name) for name in group.table.column_names]
    return ways


def _way(group: DecodedRowGroup, name: str) -> _Way:
    array = _array(group, name)
    if array is not None or not _plain(group, name):
        return (name, array, None)
    chunked = group.table.column(name)
    return (name, None, chunked.chunk(0) if chunked.num_chunks == 1 else chunked)


def column(name: str, parts: list[Piece], count: int) -> np.ndarray[Any, Any] | list[Any]:
    """Column ``name`` of a batch of ``count`` rows read from ``parts``: one array, as
    ``default_collate`` would stack its values, or the list of its rows' values."""
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


def _as_array(chunked: Any) -> np.ndarray[Any, Any] | None:
    import pyarrow as pa

    kind = chunked.type
    array = chunked.combine_chunks()
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
    """The per-sample path's values of ``rows`` in column ``name``: a slice's ``to_pylist``
    where the rows run in order and Arrow's values are the per-sample ones (not a list,
    not an image), else the row group's whole column as values (decoded once)."""
    listed = rows.tolist()
    first = listed[0]
    if listed == list(range(first, first + len(listed))) and _plain(group, name):
        values: list[Any] = group.table.column(name).slice(first, len(listed)).to_pylist()
        return values
    everything = group.values(name)
    return [everything[row] for row in listed]


def _plain(group: DecodedRowGroup, name: str) -> bool:
    """Whether Arrow's ``to_pylist`` gives the column's per-sample values (not lists, which
    go as numpy arrays, nor images)."""
    import pyarrow as pa

    kind = group.table.schema.field(name).type
    nested = pa.types.is_list(kind) or pa.types.is_large_list(kind)
    return not (nested or pa.types.is_fixed_size_list(kind) or name in group.images)

"""Whole batches across the DataLoader's worker boundary.

torch's per-sample path collates each batch in the worker into tensors, and every tensor a
worker sends travels through a fresh shared-memory segment (create, map, pass a file
descriptor, unmap): for small batches that costs more than reading them. Here each worker
stacks a batch into one numpy array per fixed-size column instead, all of them copied into
one buffer that pickles as it is through the worker's pipe, and the main process wraps each
with ``torch.from_numpy`` (no copy). Nothing is left in ``/dev/shm`` if a process dies.

When the dataset reads whole batches column by column (MDS columns of fixed width, Parquet
row groups: ``SampleAccess.get_columns``) and no subclass hook runs per sample, a worker
reads each batch that way instead of sample by sample: a column that comes as an array
needs no stacking, and one that comes as its samples' values is packed as below.

The batches equal torch's ``default_collate`` of the same samples: same samples, order,
types and dtypes. A column this module cannot stack exactly as ``default_collate`` would
(tensors a transform made, mixed types, ragged arrays, objects) is collated by
``default_collate`` itself in the worker, as on the per-sample path (its refusal of a null
naming the column and sample: :mod:`streamx.torch.null_collate`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import islice
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset
from torch.utils.data._utils.collate import collate_str_fn, default_collate_fn_map

from streamx.dataset.iteration import worker_batches, worker_samples
from streamx.dataset.streaming import StreamingDataset
from streamx.format.readers.batch_columns import Columns
from streamx.runtime.overrides import overridden
from streamx.torch.null_collate import collate_column, collate_samples

__all__ = [
    "BatchedStream",
    "Packed",
    "as_sent",
    "collate_batch",
    "collate_columns",
    "pack_batch",
    "pack_columns",
    "unpack_batch",
]

# A packed column: ("array", stacked ndarray) or ("done", what default_collate returned).
Column = tuple[str, Any]
# A packed batch: ("buffer", (places, bytearray)), each column's place either its array's
# (dtype, shape, offset) in the buffer or a Column; or ("done", what default_collate returned).
Packed = tuple[str, Any]

# Python scalar types and the dtype ``default_collate`` gives a batch of them.
_SCALAR_DTYPES: dict[type, type] = {bool: np.bool_, int: np.int64, float: np.float64}
# A batch whose first value is a str or bytes: default_collate returns the list itself
# (unless its map was changed to collate them another way).
_AS_THEY_ARE: dict[type, Any] = {str: collate_str_fn, bytes: collate_str_fn}


def _collated(samples: list[Any]) -> Column:
    return ("done", collate_samples(samples))


def _column(values: list[Any], name: str) -> Column:
    return ("done", collate_column(values, name))


def _pack_column(values: list[Any], name: str) -> Column:
    first = values[0]
    kind = type(first)
    if kind in _AS_THEY_ARE and default_collate_fn_map.get(kind) is _AS_THEY_ARE[kind]:
        return ("done", values)  # what default_collate returns for them, whatever follows
    if any(type(v) is not kind for v in values):
        return _column(values, name)
    try:
        if kind is np.ndarray:
            if first.dtype.hasobject or any(
                v.dtype != first.dtype or v.shape != first.shape for v in values
            ):
                return _column(values, name)
            return ("array", np.stack(values))
        if kind in _SCALAR_DTYPES:
            return ("array", np.array(values, dtype=_SCALAR_DTYPES[kind]))
        if isinstance(first, np.generic) and not isinstance(first, (np.str_, np.bytes_)):
            if np.dtype(kind).hasobject or kind is np.uint64:  # torch refuses uint64 scalars
                return _column(values, name)
            return ("array", np.array(values, dtype=kind))
    except OverflowError:  # an int beyond int64: default_collate raises its own error
        return _column(values, name)
    return _column(values, name)


def pack_batch(samples: list[Any]) -> Packed:
    """Packs the samples of one batch for the trip to the main process (in a worker)."""
    columns = _sample_columns(samples)
    return _collated(samples) if columns is None else _compact(columns)


def collate_batch(samples: list[Any]) -> Any:
    """The batch ``default_collate`` makes of ``samples``, in this process (no buffer)."""
    columns = _sample_columns(samples)
    if columns is None:
        return _collated(samples)[1]
    return {name: _unpack_column(column) for name, column in columns.items()}


def _sample_columns(samples: list[Any]) -> dict[str, Column] | None:
    """Dict samples of the same keys as one packed column per key; ``None`` otherwise."""
    first = samples[0]
    if type(first) is not dict or any(
        type(s) is not dict or s.keys() != first.keys() for s in samples
    ):
        return None
    return {name: _pack_column([s[name] for s in samples], name) for name in first}


def pack_columns(columns: Columns) -> Packed:
    """Packs a batch read column by column: an array as it is, a column of the samples'
    values as :func:`pack_batch` packs it."""
    return _compact(
        {
            name: ("array", value) if isinstance(value, np.ndarray) else _pack_column(value, name)
            for name, value in columns.items()
        }
    )


def collate_columns(columns: Columns) -> dict[str, Any]:
    """A batch read column by column as ``default_collate`` makes it, in this process: an
    array as a tensor over it, a column of values packed as :func:`pack_batch` packs it."""
    # Called at every batch of the inline loader: a plain loop, the exact type tested first.
    from_numpy = torch.from_numpy
    out: dict[str, Any] = {}
    for name, value in columns.items():
        if type(value) is np.ndarray or isinstance(value, np.ndarray):
            out[name] = from_numpy(value)
        else:
            out[name] = _unpack_column(_pack_column(value, name))
    return out


def _compact(columns: dict[str, Column]) -> Packed:
    """The batch's arrays copied into one buffer, each at a 64-byte boundary: pickling a
    numpy array costs about 15 µs (its reduce protocol), one ``bytearray`` well under one,
    and the per-batch cost of the worker pipe is what bounds small batches. The buffer is
    a ``bytearray``, so the tensors made over it in the main process are writable."""
    places: list[tuple[str, Any]] = []
    size = 0
    for name, (tag, value) in columns.items():
        if tag == "array" and not value.dtype.hasobject:
            size += -size % 64
            places.append((name, (value.dtype.str, value.shape, size)))
            size += value.nbytes
        else:
            places.append((name, (tag, value)))
    buffer = bytearray(size)
    for (_, place), (_tag, value) in zip(places, columns.values(), strict=True):
        if len(place) == 3 and value.nbytes:
            start = place[2]
            buffer[start : start + value.nbytes] = np.ascontiguousarray(value).data.cast("B")
    return ("buffer", (places, buffer))


def _joined(pieces: list[Columns]) -> Columns:
    """The pieces of one batch (a cache limit cut it short) as one.

    Pieces disagree on a column's kind over Parquet row groups (one has nulls, or another
    list length), over LitData chunks (one read as samples) and over tars (``.npy`` headers
    that differ, a label past ``int64``): the column then goes as its
    samples' values, an array piece's rows as the per-sample path decodes them. Where another
    piece holds those values, its rows take their kind (LitData's tensor leaves are tensors
    there); otherwise a 1-D array holds ``int``, ``float`` or ``bool`` values and a 2-D one
    the rows' numpy arrays (Parquet, tars; see :mod:`streamx.format.parquet.batch_rows` and
    :mod:`streamx.format.webdataset.batch_members`, which never stacks 0-d arrays).
    """
    joined: Columns = {}
    for name, first in pieces[0].items():
        column = [piece[name] for piece in pieces]
        if isinstance(first, np.ndarray) and all(
            isinstance(c, np.ndarray) and (c.dtype, c.shape[1:]) == (first.dtype, first.shape[1:])
            for c in column
        ):
            joined[name] = np.concatenate(column)
        else:
            as_tensors = any(isinstance(c, list) and c and torch.is_tensor(c[0]) for c in column)
            joined[name] = [value for c in column for value in _values(c, as_tensors)]
    return joined


def _values(column: np.ndarray[Any, Any] | list[Any], as_tensors: bool) -> list[Any]:
    if isinstance(column, list):
        return column
    if as_tensors:
        return list(torch.from_numpy(column).unbind(0))
    return column.tolist() if column.ndim == 1 else list(column)


def _unpack_column(column: Column) -> Any:
    tag, value = column
    return torch.from_numpy(value) if tag == "array" else value


def unpack_batch(packed: Packed) -> Any:
    """The batch ``default_collate`` would have built from the packed samples (main side)."""
    tag, value = packed
    if tag == "buffer":
        places, buffer = value
        return {name: _unpack_place(place, buffer) for name, place in places}
    return value


def _unpack_place(place: tuple[Any, ...], buffer: bytearray) -> Any:
    if len(place) == 2:
        return _unpack_column((place[0], place[1]))
    dtype, shape, start = place
    count = math.prod(shape)
    if count == 0:
        return torch.from_numpy(np.empty(shape, dtype))
    return torch.from_numpy(np.frombuffer(buffer, dtype, count, start).reshape(shape))


def as_sent(packed: Packed) -> Packed:
    """A worker's collate_fn that leaves the packed batch as it is, for the main process to
    unpack (a module function: spawned workers unpickle it by name)."""
    return packed


class BatchedStream(IterableDataset[Packed]):
    """Yields a :class:`StreamingDataset`'s samples as packed batches, per worker.

    Each worker groups its own samples into batches exactly as torch's fetcher does for an
    ``IterableDataset`` (consecutive samples, a short last batch unless ``drop_last``), so
    the DataLoader's round-robin over workers gives the per-sample path's batches.

    Args:
        dataset: The dataset whose ``__iter__`` yields this worker's samples.
        batch_size: Samples per batch.
        drop_last: Drop each worker's short last batch.
    """

    def __init__(self, dataset: StreamingDataset, batch_size: int, drop_last: bool) -> None:
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[Packed]:
        dataset = self.dataset
        if overridden(type(dataset), StreamingDataset, ("__iter__",)):
            return self._packed(iter(dataset))
        claimed = dataset.claim_pass()
        access, get_columns = claimed.access, claimed.access.get_columns
        walk = (claimed.start, claimed.layout, claimed.world, access)
        if get_columns is None:
            return self._packed(worker_samples(*walk))
        size, drop_last = self.batch_size, self.drop_last
        batches = worker_batches(*walk, get_columns, batch_size=size, drop_last=drop_last)
        return (pack_columns(p[0] if len(p) == 1 else _joined(p)) for p in batches)

    def _packed(self, samples: Iterator[Any]) -> Iterator[Packed]:
        while True:
            batch = list(islice(samples, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield pack_batch(batch)

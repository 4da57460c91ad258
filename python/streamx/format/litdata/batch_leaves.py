"""A batch of one LitData chunk's samples, leaf by leaf, from the chunk's mapped bytes.

A sample is its leaves' sizes (uint32 each) and then the leaves (see
:mod:`~streamx.format.litdata.chunk`). For a batch, the sizes of every sample are read at
once (:func:`frame`), and then each leaf over the whole batch:

- ``int``, ``float`` and ``bool`` leaves of their exact width become one ``int64``,
  ``float64`` or ``bool`` array, the dtypes ``default_collate`` gives Python numbers;
- ``numpy`` and ``tensor`` leaves (with or without their header) whose samples agree on
  header and size become one array of the leaf's dtype, shaped ``(batch, *shape)``:
  ``default_collate`` stacks them so, and ``torch.from_numpy`` of it equals the stack;
- any other leaf, and any of these whose samples disagree (ragged arrays, a size that
  does not fit, ``bfloat16`` with no numpy dtype), is decoded sample by sample by the
  per-sample path's own decoder, into the list of its values.

A leaf that does not decode raises the per-sample path's ``CorruptShardError``, naming the
chunk, the sample and the leaf.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.exceptions import CorruptShardError
from streamx.format.litdata.chunk import ChunkReader
from streamx.format.litdata.leaves import NUMPY_DTYPES, TORCH_DTYPES

__all__ = ["Frame", "LeafBatcher", "frame", "leaf_batcher", "leaf_values"]

# Gather rows with one fancy index up to this many bytes; above, one copy per sample (an
# index array per byte would outweigh the data).
_FANCY_BYTES = 1 << 16


@dataclass(frozen=True)
class Frame:
    """Where each leaf of a batch's samples lies in the chunk's bytes."""

    reader: ChunkReader
    data: NDArray[np.uint8]  # the whole chunk
    rows: NDArray[np.int64]  # the samples, within the chunk
    starts: NDArray[np.int64]  # (samples, leaves): each leaf's first byte
    sizes: NDArray[np.int64]  # (samples, leaves): each leaf's bytes


# A leaf over a batch as one array, or None where its samples disagree (decoded one by one).
LeafBatcher = Callable[[Frame, int], "NDArray[Any] | None"]


def frame(reader: ChunkReader, rows: NDArray[np.int64]) -> Frame:
    """The leaves of samples ``rows`` of the chunk, checked as the per-sample path checks
    each sample's (the first bad sample in batch order is named)."""
    data, offsets = reader.mapped(), reader.offsets()
    count = len(reader.decoders)
    begins = offsets[rows]
    lengths = offsets[rows + 1] - begins
    short = np.flatnonzero(lengths < 4 * count)
    whole = int(short[0]) if len(short) else len(rows)  # the samples before the first short
    sizes = _gather(data, begins[:whole], 4 * count).view("<u4").astype(np.int64)
    sizes = sizes.reshape(whole, count)
    wrong = np.flatnonzero(4 * count + sizes.sum(axis=1) != lengths[:whole])
    if len(wrong):
        where = reader.where(int(rows[wrong[0]]))
        raise CorruptShardError(f"{where}: its leaf sizes do not add up to its bytes")
    if len(short):
        where = reader.where(int(rows[whole]))
        raise CorruptShardError(f"{where}: {lengths[whole]} bytes, too few for its leaf sizes")
    ends = np.cumsum(sizes, axis=1)
    starts = begins[:, None] + 4 * count + ends - sizes
    return Frame(reader, data, rows, starts, sizes)


def leaf_values(frame: Frame, leaf: int) -> list[Any]:
    """Leaf ``leaf`` of each sample, decoded as on the per-sample path."""
    decode = frame.reader.decoders[leaf]
    data = frame.data
    values = []
    starts, sizes = frame.starts[:, leaf].tolist(), frame.sizes[:, leaf].tolist()
    for row, start, size in zip(frame.rows.tolist(), starts, sizes, strict=True):
        try:
            values.append(decode(data[start : start + size].tobytes()))
        except Exception as err:  # each format's own error: struct, PIL, numpy, UTF-8
            where = frame.reader.where(row)
            raise CorruptShardError(f"{where}, leaf {leaf}: does not decode ({err})") from err
    return values


def _gather(data: NDArray[np.uint8], begins: NDArray[np.int64], width: int) -> NDArray[np.uint8]:
    """``width`` bytes from each of ``begins``, one row each (a fresh array)."""
    if len(begins) > 1:
        steps = np.diff(begins)
        step = int(steps[0])
        if step > 0 and bool((steps == step).all()):  # evenly spaced: one strided copy
            shape, strides = (len(begins), width), (step, 1)
            rows = np.lib.stride_tricks.as_strided(
                data[begins[0] :], shape, strides, writeable=False
            )
            return rows.copy()
    if len(begins) * width <= _FANCY_BYTES:
        gathered: NDArray[np.uint8] = data[begins[:, None] + np.arange(width)]
        return gathered
    out = np.empty((len(begins), width), np.uint8)
    for row, begin in enumerate(begins.tolist()):
        out[row] = data[begin : begin + width]
    return out


def _one_size(frame: Frame, leaf: int) -> int | None:
    sizes = frame.sizes[:, leaf]
    return int(sizes[0]) if len(sizes) and bool((sizes == sizes[0]).all()) else None


def _scalar(dtype: str, width: int, frame: Frame, leaf: int) -> NDArray[Any] | None:
    """A number of ``width`` bytes (a bool: one byte, true unless zero)."""
    if _one_size(frame, leaf) != width:
        return None  # the per-sample decoder says what is wrong
    raw = _gather(frame.data, frame.starts[:, leaf], width)
    if dtype == "bool":
        flags: NDArray[np.bool_] = raw[:, 0] != 0
        return flags
    return raw.view(dtype).reshape(len(raw)).astype(dtype[1:])


def _array_of(names: tuple[str, ...], code: int) -> np.dtype[Any] | None:
    """The numpy dtype of a LitData dtype code, if numpy has it (not ``bfloat16``)."""
    if not 0 <= code < len(names):
        return None
    try:
        return np.dtype(names[code])
    except TypeError:
        return None


def _with_header(
    order: str, names: tuple[str, ...], frame: Frame, leaf: int
) -> NDArray[Any] | None:
    """An array after its dtype code, rank and dims (uint32s in ``order``)."""
    size = _one_size(frame, leaf)
    if size is None or size < 8:
        return None
    starts = frame.starts[:, leaf]
    first = int(starts[0])
    code, rank = struct.unpack(f"{order}II", frame.data[first : first + 8].tobytes())
    head = 8 + 4 * rank
    dtype = _array_of(names, code)
    if dtype is None or head > size:
        return None
    heads = _gather(frame.data, starts, head)
    if not (heads == heads[0]).all():
        return None
    shape = struct.unpack(f"{order}{rank}I", heads[0, 8:].tobytes())
    if size - head != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        return None
    body = _gather(frame.data, starts + head, size - head)
    return body.view(dtype).reshape(len(body), *shape)


def _flat(dtype: np.dtype[Any] | None, frame: Frame, leaf: int) -> NDArray[Any] | None:
    """A 1-D array with no header."""
    size = _one_size(frame, leaf)
    if dtype is None or size is None or size % dtype.itemsize:
        return None
    body = _gather(frame.data, frame.starts[:, leaf], size)
    return body.view(dtype).reshape(len(body), size // dtype.itemsize)


# Partials of module functions: a dataset's batch reader goes to spawned workers by pickle.
_BATCHERS: dict[str, LeafBatcher] = {
    "int": functools.partial(_scalar, "<i8", 8),
    "float": functools.partial(_scalar, "<f8", 8),
    "bool": functools.partial(_scalar, "bool", 1),
    "numpy": functools.partial(_with_header, "<", NUMPY_DTYPES),
    "tensor": functools.partial(_with_header, ">", TORCH_DTYPES),
}


def leaf_batcher(name: str) -> LeafBatcher | None:
    """How leaves of the ``data_format`` entry ``name`` batch into one array, if they may."""
    if name in _BATCHERS:
        return _BATCHERS[name]
    kind, _, code = name.partition(":")
    if kind == "no_header_numpy" and code.isdigit():
        return functools.partial(_flat, _array_of(NUMPY_DTYPES, int(code)))
    if kind == "no_header_tensor" and code.isdigit():
        return functools.partial(_flat, _array_of(TORCH_DTYPES, int(code)))
    return None

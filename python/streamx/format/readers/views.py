"""Zero-copy sample views over a memory-mapped MDS shard (``zero_copy=True``).

``bytes`` columns come back as read-only ``memoryview`` slices of the shard's mapping, and
``ndarray`` columns of static dtype and shape as read-only numpy arrays over it; nothing is
copied. Each view holds a reference to the shard's map (``_core.MappedShard``), which keeps
it alive: dropping a shard (eviction) only forgets the reader's own reference, and the cache
deletes files by unlinking them, which leaves an existing mapping readable. So a view stays
valid for as long as it lives, and the pages are unmapped when the last view dies. The map
also holds a read lease on its file: before anyone truncates or rewrites it in place, the
map's bytes move to private memory, so the views keep the bytes they had, and the next
sample read from it raises ``CorruptShardError`` (a file that cannot be leased is copied
into private memory when it is mapped).

The offset table is validated once per shard, and every sample's column sizes against its
byte range, so a corrupt shard raises ``CorruptShardError`` rather than yielding a view of
the wrong bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from streamx import _core
from streamx.exceptions import CorruptShardError
from streamx.format.columns import ColumnPlan
from streamx.format.encodings import get_coder
from streamx.format.ndarray import NDArray

__all__ = ["ShardViews"]

# Reads one column from ``(mapping, begin, end)``.
Decode = Callable[[memoryview, int, int], Any]
_INT64 = struct.Struct("<q")


def _view_decoder(encoding: str) -> Decode:
    """How one column is read from its bytes in the mapping."""
    if encoding == "bytes":
        return lambda view, begin, end: view[begin:end]
    if encoding == "int":
        unpack = _INT64.unpack_from
        return lambda view, begin, end: unpack(view, begin)[0]
    coder = get_coder(encoding)
    if isinstance(coder, NDArray) and coder.dtype is not None and coder.shape is not None:
        dtype, shape = np.dtype(coder.dtype), coder.shape
        return lambda view, begin, end: np.frombuffer(view[begin:end], dtype).reshape(shape)
    return lambda view, begin, end: coder.decode(bytes(view[begin:end]))


class ShardViews:
    """Samples of one uncompressed MDS shard file as views over its memory map.

    Args:
        path: The shard's ``.mds`` file.
        plan: The shard's columns.
        samples: The sample count the index gives.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        CorruptShardError: If the header contradicts the index or the file's size.
    """

    def __init__(self, path: str, plan: ColumnPlan, samples: int) -> None:
        self.path = path
        # A leased map: a file truncated or rewritten under it leaves the views their bytes
        # (moved to private memory) and `changed` says so; every view holds it, so it lives
        # as long as the last view.
        self._map = _core.MappedShard(path)
        size = len(self._map)
        array = self._map.array()
        array.flags.writeable = False
        view = array.data  # read-only: the flag is cleared first
        self._view = view
        header = 4 * (samples + 2)
        count = struct.unpack_from("<I", view)[0] if size >= 4 else -1
        if count != samples or size < header:
            raise CorruptShardError(
                f"Corrupt shard {path}: its header gives {count} samples, the index {samples}"
            )
        offsets = np.frombuffer(view, "<u4", samples + 1, 4).astype(np.int64)
        if offsets[0] < header or offsets[-1] > size or (np.diff(offsets) < 0).any():
            raise CorruptShardError(f"Corrupt shard {path}: offsets out of order or past the end")
        self._offsets = offsets.tolist()
        self._names = plan.names
        self._sizes = plan.sizes
        self._variable = struct.Struct("<" + "I" * sum(s is None for s in plan.sizes))
        self._decoders = [_view_decoder(e) for e in plan.encodings]
        self._encodings = plan.encodings

    def get(self, index: int) -> dict[str, Any]:
        """Sample ``index`` of this shard, its columns as views where they can be."""
        begin, end = self._offsets[index], self._offsets[index + 1]
        view = self._view
        head = self._variable.size
        if end - begin < head:
            raise CorruptShardError(f"Corrupt shard {self.path}: sample {index} is too short")
        lengths = iter(self._variable.unpack_from(view, begin))
        cursor = begin + head
        sample = {}
        for name, size, decode, encoding in zip(
            self._names, self._sizes, self._decoders, self._encodings
        ):
            stop = cursor + (next(lengths) if size is None else size)
            if stop > end:
                raise CorruptShardError(
                    f"Corrupt shard {self.path}: sample {index}'s columns overrun it"
                )
            try:
                sample[name] = decode(view, cursor, stop)
            except Exception as err:
                raise CorruptShardError(
                    f"Corrupt sample in shard {self.path}: sample {index} of the shard, column "
                    f"{name!r} ({encoding}) does not decode: {type(err).__name__}: {err}"
                ) from err
            cursor = stop
        if self._map.changed:
            raise CorruptShardError(
                f"Corrupt shard {self.path}: the file was truncated or rewritten in place while "
                "streamx had it mapped (do not modify a dataset's files while it is read; views "
                "of it already handed out keep the bytes they had)"
            )
        return sample

"""Batches of a LitData dataset's dict samples, key by key, with no object per sample.

The batched ``StreamingDataLoader`` path asks for whole batches of ids. Here they are
grouped by chunk, each chunk's samples are read leaf by leaf
(:mod:`~streamx.format.litdata.batch_leaves`), and the batch is a dict with the samples'
keys in their order, as ``default_collate`` builds it: a key whose value is one leaf gets
the leaf's array, or the list of its values; a key whose value is itself a dict, list or
tuple gets the list of those values, which the loader hands to ``default_collate`` (so the
nesting comes out as it would). Chunks whose samples come from their Arrow rows give each
key its rows' values. A batch whose chunks disagree on a key (one an array, another a list,
or arrays of two shapes) gets that key's values from each.

Only dict samples are batched so: a sample that is a list, a tuple, an ``OrderedDict`` or
one leaf keeps the per-sample path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.format.batch_parts import Columns, scatter, shard_parts
from streamx.format.index import ShardInfo
from streamx.format.litdata.batch_leaves import (
    Frame,
    LeafBatcher,
    frame,
    leaf_batcher,
    leaf_values,
)
from streamx.format.litdata.chunk import ChunkReader
from streamx.format.litdata.pytree import Spec, parse_spec

__all__ = ["LitDataBatches"]


@dataclass(frozen=True)
class _Key:
    """A key of the samples: its name, its value's structure, and that value's leaves."""

    name: str
    spec: Spec
    leaves: range
    batcher: LeafBatcher | None  # a value that is one leaf of a format that may batch


@dataclass(frozen=True)
class _Part:
    """The samples of one chunk a batch reads."""

    reader: ChunkReader
    positions: NDArray[np.int64] | None  # where they go in the batch (None: all, in order)
    rows: NDArray[np.int64]  # within the chunk
    frame: Frame | None  # None: the chunk's Arrow rows hold them


class LitDataBatches:
    """Batches of a dataset whose shards are all chunks of one LitData dataset config.

    Args:
        shards: The dataset's shards, in order (see :meth:`over`).
        open_chunk: The reader of shard ``n`` (the dataset's own, so evicting it drops it).
    """

    def __init__(
        self, shards: Sequence[ShardInfo], open_chunk: Callable[[int], ChunkReader]
    ) -> None:
        self._open = open_chunk
        self._ends = np.cumsum([shard.samples for shard in shards]).tolist()
        spec = parse_spec(shards[0].extra["data_spec"], str(shards[0].extra["source"]))
        formats = shards[0].extra["data_format"]
        keys, first = [], 0
        for name, child in zip(spec.keys, spec.children, strict=True):
            leaves = range(first, first + child.leaves)
            one = leaf_batcher(formats[first]) if child.kind is None else None
            keys.append(_Key(name, child, leaves, one))
            first = leaves.stop
        self._keys = keys

    @classmethod
    def over(
        cls, shards: Sequence[ShardInfo], open_chunk: Callable[[int], ChunkReader]
    ) -> LitDataBatches | None:
        """The batches of ``shards``, or ``None`` unless every shard is a LitData chunk, all
        of one config, whose samples are dicts (their batch is then a dict)."""
        listed = list(shards)
        if not listed or any(shard.format != "litdata" for shard in listed):
            return None
        configs = {
            (tuple(s.extra["data_format"]), s.extra["data_spec"], s.extra["allow_pickle"])
            for s in listed
        }
        if len(configs) != 1:
            return None
        spec = parse_spec(listed[0].extra["data_spec"], str(listed[0].extra["source"]))
        if spec.kind != "builtins.dict" or len(set(spec.keys)) != len(spec.keys):
            return None
        return cls(listed, open_chunk)

    def get_columns(self, ids: list[int]) -> Columns | None:
        """Samples ``ids`` (dataset-wide), in order, one array or list of values per key;
        ``None`` while a chunk of theirs is not on local disk.

        Raises:
            IndexError: If an id lies outside the dataset.
            CorruptShardError: If a chunk's samples do not decode, as on the per-sample path.
        """
        if not ids:
            return {key.name: [] for key in self._keys}
        parts = []
        try:
            for shard, positions, rows in shard_parts(self._ends, ids):
                reader = self._open(shard)
                framed = frame(reader, rows) if reader.rows is None else None
                parts.append(_Part(reader, positions, rows, framed))
        except FileNotFoundError:  # evicted or not fetched yet: the miss handler's way
            return None
        names = [key.name for key in self._keys]
        if not all(_rows_agree(part, names) for part in parts):
            return _from_samples(parts, len(ids))
        return {key.name: self._column(key, parts, len(ids)) for key in self._keys}

    def _column(self, key: _Key, parts: list[_Part], count: int) -> NDArray[Any] | list[Any]:
        found = [_array(key, part) for part in parts]
        arrays = [a for a in found if a is not None]
        if len(arrays) == len(parts) and len({(a.dtype, a.shape[1:]) for a in arrays}) == 1:
            if len(parts) == 1:
                return arrays[0]
            out = np.empty((count, *arrays[0].shape[1:]), arrays[0].dtype)
            for part, array in zip(parts, arrays, strict=True):
                out[part.positions] = array
            return out
        return scatter([(part.positions, _values(key, part)) for part in parts], count)


def _array(key: _Key, part: _Part) -> NDArray[Any] | None:
    if key.batcher is None or part.frame is None:
        return None
    return key.batcher(part.frame, key.leaves.start)


def _values(key: _Key, part: _Part) -> list[Any]:
    """The per-sample path's values of ``key`` for the part's samples."""
    if part.frame is None:
        rows = part.reader.rows
        assert rows is not None
        return [rows[row][key.name] for row in part.rows.tolist()]
    leaves = [leaf_values(part.frame, leaf) for leaf in key.leaves]
    if key.spec.kind is None:
        return leaves[0]
    samples = zip(*leaves, strict=True) if leaves else [()] * len(part.rows)
    return [key.spec.build(iter(sample)) for sample in samples]


def _rows_agree(part: _Part, names: list[str]) -> bool:
    """Whether the part's samples have the keys of the spec, in its order (its Arrow rows
    may not: then the batch is built from its samples)."""
    rows = part.reader.rows
    if part.frame is not None or rows is None:
        return True
    return all(type(rows[row]) is dict and list(rows[row]) == names for row in part.rows)


def _from_samples(parts: list[_Part], count: int) -> Columns:
    """The batch as the per-sample path's samples, one list of values per key of the first."""
    pieces = [(p.positions, [p.reader.get(row) for row in p.rows.tolist()]) for p in parts]
    samples = scatter(pieces, count)
    return {name: [sample[name] for sample in samples] for name in samples[0]}

"""What reads a batch of a dataset's samples column by column, shard by shard.

The batched ``StreamingDataLoader`` path asks a reader for whole batches of ids. A reader of
one format (Parquet row groups, LitData chunks, WebDataset tars) that can answer with one
array per column offers a :class:`BatchReader`;
:class:`~streamx.format.readers.mixed.MixedSampleReader` holds the one that fits its
shards, if any. A batch's ids are grouped by the shard that
holds them (:func:`shard_parts`), each shard's part read at once, and the parts joined.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["BatchReader", "Columns", "ShardPart", "scatter", "shard_parts"]

# A batch: per key, one array (its values stacked) or the list of its samples' values.
Columns = dict[str, "np.ndarray[Any, Any] | list[Any]"]

# The ids of one shard a batch reads: the shard's number, where its ids go in the batch
# (``None``: the whole batch is theirs, in order), and the ids within the shard.
ShardPart = tuple[int, "NDArray[np.int64] | None", "NDArray[np.int64]"]


class BatchReader(Protocol):
    """Reads a batch of samples column by column."""

    def get_columns(self, ids: list[int]) -> Columns | None:
        """Samples ``ids`` (dataset-wide), in order: per key, one array equal to what
        ``default_collate`` makes of the values (dtype and shape included), or the list of
        the samples' values for the loader to collate; ``None`` while a shard of theirs is
        not on local disk.

        Raises:
            IndexError: If an id lies outside the dataset.
            CorruptShardError: If a shard does not decode, as on the per-sample path.
        """
        ...


def shard_parts(ends: Sequence[int], ids: list[int]) -> list[ShardPart]:
    """``ids`` (non-empty) grouped by shard, shards in order of first appearance; ``ends``
    holds one past each shard's last id.

    Raises:
        IndexError: If an id lies outside ``0..ends[-1]``.
    """
    low, high = min(ids), max(ids)
    if low < 0 or high >= ends[-1]:
        raise IndexError(f"Sample ids {ids[:8]}... outside 0..{ends[-1]}")
    wanted = np.asarray(ids, np.int64)
    first = bisect.bisect_right(ends, low)
    start = ends[first - 1] if first else 0
    if high < ends[first]:  # one shard: the usual batch
        return [(first, None, wanted - start)]
    starts = np.concatenate([[0], np.asarray(ends[:-1], np.int64)]).astype(np.int64)
    which = np.searchsorted(np.asarray(ends, np.int64), wanted, side="right")
    rows = wanted - starts[which]
    parts: list[ShardPart] = []
    for shard in dict.fromkeys(which.tolist()):
        positions = np.flatnonzero(which == shard)
        parts.append((shard, positions, rows[positions]))
    return parts


def scatter(pieces: Sequence[tuple[NDArray[np.int64] | None, Any]], count: int) -> list[Any]:
    """The values of the pieces (each: its positions in the batch, its values in order) as
    one list of ``count``."""
    values: list[Any] = [None] * count
    for positions, part in pieces:
        if positions is None:
            return list(part)
        for position, value in zip(positions.tolist(), part, strict=True):
            values[position] = value
    return values

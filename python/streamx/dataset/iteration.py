"""One worker's pass over its share of an epoch.

The dataset decides how samples are read (a :class:`SampleAccess`) and which epoch starts
(an ``EpochStart``); this module only plans the worker's ids and walks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.dataset import metrics
from streamx.dataset.layout import DatasetLayout
from streamx.order.epoch import plan_config, worker_sample_ids
from streamx.order.epoch_state import EpochStart
from streamx.order.world import World

__all__ = ["SampleAccess", "chunk_size", "worker_samples"]

# Samples decoded per call into Rust on the fast path, and the bytes a chunk aims at: a
# chunk of large samples is kept small so its buffers are reused, not faulted in afresh.
_CHUNK = 256
_CHUNK_BYTES = 1 << 20

# Samples are whatever the dataset's reader or ``get_item`` returns (a dict by default).
Sample = Any


@dataclass(frozen=True)
class SampleAccess:
    """How a pass reads samples.

    Attributes:
        get_one: ``ds[i]``, used for every id when ``get_many`` is ``None`` (a subclass
            overrides ``__getitem__`` or ``get_item``, which must then apply).
        get_many: Decodes a list of ids in one call into Rust, or ``None``.
        prepare: ``prepare(ids, start, stop)`` declares ``ids[start:stop]`` (and what
            follows) to the shard cache and returns where the chunk should end; called with
            ``start == len(ids)`` it releases everything.
        chunk: Samples per ``get_many`` call.
    """

    get_one: Callable[[int], Sample]
    get_many: Callable[[list[int]], Iterable[Sample]] | None
    prepare: Callable[[NDArray[np.int64], int, int], int]
    chunk: int


def worker_samples(
    start: EpochStart, layout: DatasetLayout, replication: int | None, access: SampleAccess
) -> Iterator[Sample]:
    """Yields this worker's samples of the epoch ``start`` describes (padding skipped)."""
    world = World.detect().replicate(replication)
    config = plan_config(
        layout.plan_streams(), start.settings, start.epoch, start.sample_in_epoch, world
    )
    ids = worker_sample_ids(config, world)
    ids = ids[ids >= 0]
    metrics.begin_epoch(start.epoch)
    try:
        if access.get_many is None:
            for position, sample_id in enumerate(ids.tolist()):
                if position % _CHUNK == 0:
                    access.prepare(ids, position, position + _CHUNK)
                    metrics.add_samples(min(_CHUNK, len(ids) - position))
                yield access.get_one(sample_id)
            return
        begin = 0
        while begin < len(ids):
            # Under a cache limit, prepare may shorten the chunk.
            stop = access.prepare(ids, begin, begin + access.chunk)
            yield from access.get_many(ids[begin:stop].tolist())
            metrics.add_samples(min(stop, len(ids)) - begin)
            begin = stop
    finally:
        access.prepare(ids, len(ids), len(ids))  # an empty window releases the shards held


def chunk_size(layout: DatasetLayout) -> int:
    """Up to ``_CHUNK`` samples, fewer when the average sample is large."""
    total = sum(int(shard.raw_data.bytes) for shard in layout.shards)
    average = total // max(layout.num_samples, 1)
    return max(1, min(_CHUNK, _CHUNK_BYTES // max(average, 1)))

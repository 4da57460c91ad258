"""One worker's pass over its share of an epoch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streamx.order.epoch import worker_sample_ids
from streamx.order.world import World

__all__ = ["iterate"]

# Samples decoded per call into Rust on the fast path, and the bytes a chunk aims at: a
# chunk of large samples is kept small so its buffers are reused, not faulted in afresh.
_CHUNK = 256
_CHUNK_BYTES = 1 << 20


def iterate(ds: Any) -> Iterator[Any]:
    """Starts this worker's next epoch now and returns the generator of its samples.

    The epoch is claimed when ``__iter__`` is called, not at the first ``next``: a
    DataLoader worker calls ``iter`` as it starts, so a worker that is shut down before it
    fetches anything (a pass cut short) still moves on to the next epoch with its siblings.
    """
    epoch, sample_in_epoch = ds._state.start_epoch()
    return _samples(ds, epoch, sample_in_epoch)


def _samples(ds: Any, epoch: int, sample_in_epoch: int) -> Iterator[Any]:
    """Yields ``ds[i]`` for each of this worker's ids of the epoch (padding skipped).

    When neither ``__getitem__`` nor ``get_item`` is overridden, samples are decoded in
    chunks with one call into Rust each; otherwise every id goes through ``ds[i]`` so that
    subclass overrides apply, as in mosaicml-streaming.
    """
    world = World.detect().replicate(ds.replication)
    ids = worker_sample_ids(ds, epoch, sample_in_epoch, world)
    ids = ids[ids >= 0]
    prepare = getattr(ds, "_prepare_ahead", None)
    try:
        if _overridden(ds):
            for position, sample_id in enumerate(ids.tolist()):
                if prepare is not None and position % _CHUNK == 0:
                    prepare(ids, position, position + _CHUNK)
                yield ds[sample_id]
            return
        reader = ds._reader
        step = _chunk_size(ds)
        start = 0
        while start < len(ids):
            stop = start + step
            if prepare is not None:  # under a cache limit, it may shorten the chunk
                stop = prepare(ids, start, stop)
            yield from reader.get_many(ids[start:stop].tolist(), ds.get_item)
            start = stop
    finally:
        if prepare is not None:
            prepare(ids, len(ids), len(ids))  # an empty window releases the shards held


def _chunk_size(ds: Any) -> int:
    """Up to ``_CHUNK`` samples, fewer when the average sample is large."""
    total = sum(int(shard.raw_data.bytes) for shard in ds.shards)
    average = total // max(int(ds.num_samples), 1)
    return max(1, min(_CHUNK, _CHUNK_BYTES // max(average, 1)))


def _overridden(ds: Any) -> bool:
    from streamx.dataset.streaming import StreamingDataset

    cls = type(ds)
    return (
        cls.__getitem__ is not StreamingDataset.__getitem__
        or cls.get_item is not StreamingDataset.get_item
    )

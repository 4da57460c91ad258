"""Shard-level operations of ``StreamingDataset``: preparing and evicting one shard by hand,
as mosaicml-streaming exposes them, over streamx's shard cache.

Shards of a stream without a remote (the user's own files) are never deleted: evicting one
is an error here, where mosaicml-streaming deletes the only copy (its issue #988).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from streamx.cache.shard_cache import ShardCache
from streamx.dataset.stream import Stream
from streamx.format.index import ShardInfo

__all__ = ["evict_coldest_shard", "evict_shard", "on_exception", "prepare_shard"]

_NOTHING_TO_EVICT = (
    "Attempted shard eviction, but there are no shards present locally to evict (shards "
    "of streams without a remote, and shards in use, are never evicted). Your cache limit "
    "may be too low."
)


class ShardOwner(Protocol):
    """What these operations read of a dataset."""

    @property
    def streams(self) -> Sequence[Stream]: ...
    @property
    def shards(self) -> Sequence[ShardInfo]: ...
    @property
    def stream_per_shard(self) -> NDArray[np.int64]: ...
    @property
    def _shard_cache(self) -> ShardCache | None: ...


def _check_id(ds: ShardOwner, shard_id: int) -> int:
    if not 0 <= int(shard_id) < len(ds.shards):
        raise IndexError(f"Shard id {shard_id} is out of range: 0 <= id < {len(ds.shards)}")
    return int(shard_id)


def prepare_shard(ds: ShardOwner, shard_id: int, blocking: bool) -> None:
    """See :meth:`StreamingDataset.prepare_shard`."""
    shard_id = _check_id(ds, shard_id)
    cache = ds._shard_cache
    if cache is not None and cache.remote_shards[shard_id]:
        if blocking:
            cache.prepare(shard_id)
        else:
            cache.try_prepare(shard_id)
        return
    # The user's own files: at most a compressed-only shard to decompress (zips are kept).
    stream = ds.streams[int(ds.stream_per_shard[shard_id])]
    stream.prepare_shard(ds.shards[shard_id])


def evict_shard(ds: ShardOwner, shard_id: int) -> None:
    """See :meth:`StreamingDataset.evict_shard`."""
    shard_id = _check_id(ds, shard_id)
    cache = ds._shard_cache
    if cache is None:
        raise ValueError(
            f"Shard {shard_id} belongs to a stream without a remote: its files are the only "
            "copy and are never evicted"
        )
    cache.evict(shard_id)


def evict_coldest_shard(ds: ShardOwner) -> None:
    """See :meth:`StreamingDataset.evict_coldest_shard`."""
    cache = ds._shard_cache
    if cache is None or cache.evict_coldest() is None:
        raise ValueError(_NOTHING_TO_EVICT)


def on_exception(future: Future[Any]) -> None:
    """See :meth:`StreamingDataset.on_exception`."""
    error = future.exception()
    if error is not None:
        raise error

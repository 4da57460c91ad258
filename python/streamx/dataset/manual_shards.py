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

__all__ = [
    "ShardMembers",
    "evict_coldest_shard",
    "evict_shard",
    "on_exception",
    "prepare_shard",
]

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


class ShardMembers:
    """The shard-level methods of mosaicml-streaming's ``StreamingDataset``, mixed into
    streamx's (which supplies what :class:`ShardOwner` reads)."""

    def prepare_shard(self: ShardOwner, shard_id: int, blocking: bool = True) -> None:
        """Makes a shard local: downloads, checks and decompresses it as needed.

        Safe to call from any thread or process of the node: one of them downloads, and
        under a ``cache_limit`` the least recently used shards are evicted to make room.

        Args:
            shard_id: The shard, in ``0 .. num_shards - 1``.
            blocking: If False, return at once when another process is already fetching
                the shard (or, under a ``cache_limit``, when it does not fit now) instead
                of waiting.

        Raises:
            IndexError: If ``shard_id`` is out of range.
            FileNotFoundError: If the shard's files are missing locally and remotely.
            ChecksumError: If ``validate_hash`` is set and a digest differs.
            StaleIndexError: If the remote's files no longer match the cached index.

        Examples:
            >>> dataset.prepare_shard(0)  # doctest: +SKIP
        """
        prepare_shard(self, shard_id, blocking)

    def evict_shard(self: ShardOwner, shard_id: int) -> None:
        """Deletes a downloaded shard's files from the local cache now.

        Its bytes leave ``cache_usage``; a later read downloads it again.

        Args:
            shard_id: The shard, in ``0 .. num_shards - 1``.

        Raises:
            IndexError: If ``shard_id`` is out of range.
            ValueError: If the shard belongs to a stream without a remote: those files are
                the user's only copy and are never deleted.

        Examples:
            >>> dataset.evict_shard(0)  # doctest: +SKIP
        """
        evict_shard(self, shard_id)

    def evict_coldest_shard(self: ShardOwner) -> None:
        """Evicts the least recently used downloaded shard that no process is reading.

        Raises:
            ValueError: If there is no such shard.

        Examples:
            >>> dataset.evict_coldest_shard()  # doctest: +SKIP
        """
        evict_coldest_shard(self)

    def on_exception(self, future: Future[Any]) -> None:
        """Re-raises the exception of a finished background task, if it raised one.

        Args:
            future: The task, e.g. passed as a ``Future.add_done_callback`` callback.

        Raises:
            BaseException: Whatever the task raised.

        Examples:
            >>> future.add_done_callback(dataset.on_exception)  # doctest: +SKIP
        """
        on_exception(future)

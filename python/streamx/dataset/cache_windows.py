"""The part of ``StreamingDataset`` that faces its shard cache: the cache itself, when a
stream copies files into it, and which shards a pass is reading and which come next
(declared to the cache as the pass goes, so they are fetched in the background and, under a
``cache_limit``, kept from eviction)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from streamx.cache.range_reads import RangeReads
from streamx.cache.shard_cache import ShardCache
from streamx.dataset.layout import DatasetLayout
from streamx.dataset.read_window import ShardWindow
from streamx.format.readers.base import SampleReader
from streamx.order.settings import EpochSettings
from streamx.storage.request_pace import any_paced
from streamx.storage.settings import PACED_AHEAD_FACTOR, shards_ahead

if TYPE_CHECKING:
    from streamx.dataset.stream import Stream

__all__ = ["PACE_LOOK_S", "CacheWindows"]

# How long a look at whether some host is paced (which doubles the shards fetched ahead) is
# trusted before the next chunk looks again. A look is an ``lstat`` of the node's pace file
# per host, a third of what declaring a chunk cost, for an answer that changes when a store
# starts or stops throttling; a window also looks again whenever it moves. A pace's own
# steps are a second or more apart (``request_pace.CUT_GAP_S``, ``QUIET_S``).
PACE_LOOK_S = 0.05


class CacheWindows:
    """Mixed into ``StreamingDataset``, which sets these attributes as it is built."""

    _layout: DatasetLayout
    _reader: SampleReader
    _shard_cache: ShardCache | None
    _ranges: RangeReads | None
    _remote_shard: NDArray[np.bool_]
    _windows: list[ShardWindow]
    _paced: tuple[float, bool]  # (when it was looked at, whether some host was paced)
    _settings: EpochSettings  # read directly at every chunk: not through its descriptors
    predownload: int | None
    cache_limit: int | str | None

    if TYPE_CHECKING:  # the dataset's index fields (``attributes.LayoutField``)

        @property
        def streams(self) -> Sequence[Stream]: ...

        @property
        def samples_per_shard(self) -> NDArray[np.int64]: ...
        @property
        def sample_offset_per_shard(self) -> NDArray[np.int64]: ...

    def _open_shard_cache(self, zero_copy: bool) -> None:
        """The shard cache and its range reads, when a stream copies files into the cache
        (a remote, or compressed files); none for the user's own files alone."""
        self._shard_cache = None
        self._ranges = None
        self._windows = []
        self._paced = (float("-inf"), False)
        if any(s.copies_into_cache for s in self.streams):
            # 0 (like None) means no limit, as in mosaicml-streaming (`if self.cache_limit:`).
            limit = self.cache_limit if isinstance(self.cache_limit, int) else None
            limit = limit or None
            self._shard_cache = ShardCache(self._layout, self._reader, limit)
            self._remote_shard = np.array(self._shard_cache.remote_shards, bool)
            self._ranges = RangeReads(self._layout, self._shard_cache, zero_copy=zero_copy)

    def _shard_of(self, sample_id: int) -> int:
        """The shard holding global sample ``sample_id``."""
        ends = self.sample_offset_per_shard + self.samples_per_shard
        return int(np.searchsorted(ends, sample_id, side="right"))

    def _prepare_ahead(self, ids: NDArray[np.int64], start: int, stop: int | None = None) -> int:
        """Declares the shards of samples ``ids[start:stop]`` (about to be read) and of the
        ``predownload`` samples after them to the shard cache, most urgent first: they are
        fetched in the background and, under a ``cache_limit``, the ones being read are kept
        from eviction. Called with ``start == len(ids)`` it releases them.

        Returns:
            Where the chunk should end: ``stop``, or earlier under a ``cache_limit`` so that
            every shard the chunk reads is held (at least one sample is always allowed).
        """
        stop = start + 1 if stop is None else stop
        if self._shard_cache is None:
            return stop
        if self._ranges is not None and stop > start:
            # A shard's first read brings the chunks its batch spans (the last of them is
            # decoded whole before the batch is complete).
            size = stop - start
            chunks = -(-int(self._settings.batch_size or 1) // size)
            self._ranges.expect(ids, start, start + chunks * size)
        ahead = stop + max(int(self.predownload or 0), 1)
        shards = self._window_of(ids)
        following = self._following(shards, look=False)
        window = shards.window(start, stop, ahead, following)
        if not window.same:  # it moved (rarely: once per run of a shard): look at the pace now
            again = self._following(shards, look=True)
            if again != following:
                window = shards.window(start, stop, ahead, again)
        if start >= len(ids):  # the pass is over: its window goes
            self._windows = [w for w in self._windows if w.ids is not ids]
        held = self._shard_cache.set_window(window.reading, window.ahead, same=window.same)
        if held is None or stop <= start:
            return stop
        chunk = self._layout.shards_of(ids[start:stop])
        missing = ~np.isin(chunk, held) & self._remote_shard[chunk]
        return start + max(int(np.argmax(missing)), 1) if missing.any() else stop

    def _settle_downloads(self) -> None:
        """A pass has read its last sample: the downloads of its shards still under way
        (read by range meanwhile, or from a file renamed into place before its download was
        recorded) are waited for, so nothing of the pass writes into the cache after it."""
        if self._shard_cache is not None:
            self._shard_cache.settle()

    def _following(self, shards: ShardWindow, look: bool) -> int:
        """Shards fetched past the window: the pass's ``shards_ahead``, more while a store
        throttles (its pace limits starts, not downloads). Whether one does is looked at
        again when asked to (``look``) or when the last look is older than
        :data:`PACE_LOOK_S`."""
        looked_at, paced = self._paced
        if look or time.monotonic() - looked_at >= PACE_LOOK_S:
            paced = any_paced()
            self._paced = (time.monotonic(), paced)
        return shards.shards_ahead * PACED_AHEAD_FACTOR if paced else shards.shards_ahead

    def _window_of(self, ids: NDArray[np.int64]) -> ShardWindow:
        """The shard windows of the pass over ``ids`` (kept for the last two passes: a
        process may interleave two iterators)."""
        for window in self._windows:
            if window.ids is ids:
                return window
        window = ShardWindow(ids, self._layout.shards_of, shards_ahead())
        self._windows = [window, *self._windows[:1]]
        return window

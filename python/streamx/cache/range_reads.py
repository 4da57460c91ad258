"""Samples of a remote shard read by byte range while the whole shard is still downloading.

An MDS shard, like a LitData chunk, opens with its sample count and a table of absolute
sample offsets, so one small ranged GET says where every sample lies and one more fetches
the samples a reader needs now. The first sample of a shard is served after two short GETs
instead of after the whole shard (64 MiB, at the tens of MB/s S3 gives each GET), and later
samples read their own ranges until the shard's download, which runs on meanwhile, has
landed. Only a shard that no download of this process has started is opened for range reads
(the first shard of an epoch, a resumption, a random access): a shard this process is
already prefetching lands over its parallel parts sooner than reading its bytes twice pays
off, so a reader waits for it. So does a reader of a shard another process of the node is
downloading (the DataLoader workers read alternate batches of the same shards), while that
download progresses; once it stalls (nothing written for a bound, or its owner gone:
:mod:`download_watch`), the samples are read by range, and never wait on it for longer. A
process's first samples never wait (they are what the range reads speed up), and a shard
this process began reading by range (before any download of it began) is read on by range:
its first fetch by GET, then copied from the parts its download (in any process of the
node) has landed, waiting for them while that download progresses (:mod:`landed_reads`);
only bytes no part brings in time are fetched by range still. The first fetch brings the
chunks the process's first batch spans, which the dataset declares (:meth:`RangeReads.expect`):
the first batch, which time to first sample waits for, then waits for nothing else, and
its bytes go in about four GETs (``range_partial._pieces``), where reading chunk by chunk
took four a chunk. Without that declaration (``ds[i]``), the first 4 MiB come by GET
(``range_partial._FREE``).

The ranges land at their own offsets in a *partial*: an anonymous in-memory file the size of
the shard (``memfd``; elsewhere a deleted temporary file), holes except for what was read.
The reader that reads a downloaded shard reads it (for MDS the Rust reader, which maps it;
for a LitData chunk its ``ChunkReader``), so a sample decodes exactly as it would from the
file, zero-copy views included. What differs by format is in :mod:`range_formats` (a
Parquet row group, which has no offset table, reads its rows by range its own way). Partials
belong to one process and are not cache: the ledger never sees them, ``cache_limit`` does
not count them (each holds at most ``_BUDGET`` bytes read by range, and a quarter of its
shard; past that, a reader waits for the shard, or reads on by range where another process's
download of it has stalled: its owner may be stopped, and a wait then has no bound) and they
are dropped once the shard's file is ready.

What is read by range: uncompressed MDS shards of at least ``MIN_SHARD_BYTES`` (a smaller
one arrives about as soon as its ranges would) of a remote stream that downloads through
streamx's own ``Stream._download_file``, read without ``validate_hash``, and LitData chunks
of that size whose samples hold their leaves (not ``json`` leaves or rows kept in the
chunk's Arrow footer, which is read whole), from the URL the chunk's entry records. A digest
covers the whole file, so a sample served from a range could not be checked before it is
handed out: with ``validate_hash`` every sample waits for its verified shard. A compressed
shard cannot be read by range (a sample's bytes lie somewhere in the compressed stream) and
keeps the whole-file path. Every GET checks the object's size against the index
(``Content-Range``), and the header's sample count is checked against the index's, so a
rewritten remote raises ``StaleIndexError`` here as the download would.

A range GET holds no connection slot: it is small, and it is what a reader is waiting for,
so it must not queue behind the whole-shard parts holding every slot. A process reads from
one thread, usually, so this adds about one connection per process.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.cache.cached_files import files_ready
from streamx.cache.download_watch import DownloadWatch
from streamx.cache.range_formats import NotByRange, RowsByRange, range_format, rows_by_range
from streamx.cache.range_partial import Partial, Target
from streamx.cache.shard_cache import ShardCache
from streamx.cache.views import CachedStream, CacheLayout
from streamx.exceptions import CorruptShardError, StaleIndexError
from streamx.format.index import ShardInfo
from streamx.format.readers.base import SampleReader
from streamx.location import Location
from streamx.runtime import metrics
from streamx.storage.settings import range_reads_enabled
from streamx.storage.throttle import host_calm

__all__ = ["RangeReads"]

logger = logging.getLogger(__name__)

# Smaller shards arrive in about the time of the GETs that would read them by range.
MIN_SHARD_BYTES = 4 << 20
# Partials one process keeps; the oldest is dropped past this.
_MAX_PARTIALS = 4
# fsspec's own local and in-memory file systems: no network between us and the bytes.
_NO_NETWORK_SCHEMES = ("local", "memory")
# How often a reader waiting on another process's download looks at it again.
_POLL_S = 0.01


# Nothing declared (see RangeReads.expect).
_NONE_EXPECTED: tuple[NDArray[np.int64], int, int] = (np.zeros(0, np.int64), 0, 0)


def _target(stream: CachedStream, shard: ShardInfo, remote: bool, own_way: bool) -> Target | None:
    form = range_format(shard)
    if not remote or stream.remote is None or form is None or shard.compression:
        return None
    if shard.raw_data.bytes < MIN_SHARD_BYTES:
        return None
    url = None if stream.validate_hash else form.source(stream, shard, own_way)
    if url is None:
        return None
    where = Location.parse(url)
    if not where.is_remote or where.scheme in _NO_NETWORK_SCHEMES:
        return None  # the bytes are local already: nothing to gain from ranges
    timeout = float(getattr(stream, "download_timeout", 60.0))
    retry = max(int(getattr(stream, "download_retry", 1)), 1)
    return Target(shard, url, stream.index_path, timeout, retry, form)


class _Missing(Exception):
    """A sample's shard is not local (raised by :func:`_missing`, caught in ``get_many``)."""


def _missing(_: int) -> Any:
    raise _Missing


class RangeReads:
    """Serves samples of remote shards that are still downloading, from ranged GETs.

    Args:
        layout: The dataset's streams and shards.
        cache: The dataset's shard cache, which downloads the whole shards.
        zero_copy: Decode as the dataset's reader does (views instead of copies).
    """

    def __init__(self, layout: CacheLayout, cache: ShardCache, *, zero_copy: bool) -> None:
        self._enabled = range_reads_enabled()
        self._streams, self._own_way = layout.streams, layout.fetches_own_way
        self._stream_of_shard = layout.stream_per_shard
        self._shards = layout.shards
        self._remote = cache.remote_shards
        # Each shard's target is made when the shard is first read (not per shard here).
        self._targets: dict[int, Target | None] = {}
        # Streams one of whose shards said its samples cannot be read by range: its
        # siblings share its config (LitData's chunks), so no GET of their tables either.
        self._not_by_range: set[int] = set()
        self._first: NDArray[np.int64] = np.asarray(layout.sample_offset_per_shard, np.int64)
        self._ends = self._first + np.asarray(layout.samples_per_shard, np.int64)
        self._cache = cache
        self._zero_copy = zero_copy
        self._partials: dict[int, Partial] = {}
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._watch = DownloadWatch()
        self._served = -1  # the pid that has asked for samples here already
        self._own_rows_pid = 0  # the pid that has served a row by its format's own reader
        # The ids this process reads next, from the chunk it reads now (see expect).
        self._expected: tuple[NDArray[np.int64], int, int] = _NONE_EXPECTED
        cache.ranges_first = self.reads_first

    def reads_first(self, shard_id: int) -> bool:
        """Whether shard ``shard_id`` is read by range before its download is started."""
        target = self._target(shard_id)
        return target is not None and not self._cache.limited and host_calm(target.url)

    def _target(self, shard_id: int) -> Target | None:
        """What shard ``shard_id`` is read by range from, or None when it is not."""
        stream = int(self._stream_of_shard[shard_id])
        if stream in self._not_by_range:
            return None
        if shard_id in self._targets:
            return self._targets[shard_id]
        target = None
        if self._enabled and self._remote[shard_id]:
            shard = self._shards[shard_id]
            target = _target(self._streams[stream], shard, True, self._own_way[stream])
        return self._targets.setdefault(shard_id, target)  # one per shard across threads

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_partials={}, _lock=None, _pid=-1, _watch=DownloadWatch(), _served=-1)
        state.update(_expected=_NONE_EXPECTED)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def get(self, sample_id: int, shard_id: int) -> Any:
        """Sample ``sample_id`` of shard ``shard_id`` read by range, or None when it must
        wait for the whole shard (not range-readable, ready already, budget spent, or the
        range GETs failed: the whole-shard path then reports the failure).

        Raises:
            StaleIndexError: If the remote shard's size or sample count differs from the
                cached index.
            CorruptShardError: If a Parquet row group's first pages contradict the format.
        """
        try:
            rows = rows_by_range(self._shards[shard_id])
            if rows is not None:  # a format without an offset table reads its own rows
                return self._own_row(rows, sample_id, shard_id)
            local = np.array([sample_id - int(self._first[shard_id])], np.int64)
            partial = self._usable(shard_id)
            if partial is None:
                return None
            fetched = self._fetch(shard_id, partial, local)
            self._start(shard_id)
            return partial.sample(int(local[0])) if fetched else None
        finally:
            self._served = os.getpid()

    def _own_row(self, rows: RowsByRange, sample_id: int, shard_id: int) -> Any:
        """Sample ``sample_id`` read by range by its format's reader (a Parquet row from its
        row group's first pages), or None; the first one starts the shard's download."""
        index = sample_id - int(self._first[shard_id])
        stream = self._streams[int(self._stream_of_shard[shard_id])]
        timeout = float(getattr(stream, "download_timeout", None) or 60.0)
        downloading = self._cache.fetching_here(shard_id)
        # A process's first row never waits; later ones wait for a shard it is prefetching.
        prefetched = downloading and self._own_rows_pid == os.getpid()
        row = rows.row(self._shards[shard_id], index, timeout, prefetched)
        if row is not None:
            self._own_rows_pid = os.getpid()
            if not downloading:
                self._cache.prepare_async([shard_id])  # its next rows come from its file
        return row

    def get_many(self, reader: SampleReader, ids: list[int], fallback: Any) -> list[Any]:
        """``reader.get_many(ids, fallback)``; when a shard is missing, first reads by range
        the samples of ``ids`` in shards still downloading (``fallback``, the dataset's
        ``get_item``, then finds them).

        Raises:
            StaleIndexError: As :meth:`get`.
        """
        try:
            return reader.get_many(ids, _missing)
        except _Missing:
            self.fetch(ids)
        return reader.get_many(ids, fallback)

    def expect(self, ids: NDArray[np.int64], start: int, stop: int) -> None:
        """Declares the ids this process reads next, ``ids[start:stop]`` in order, beginning
        with the chunk it is about to fetch (its ``get_many``) and running to the end of the
        chunk that ends its batch: a shard's first fetch in this process brings their
        samples of it in the same GETs (the batch waits for nothing else), and its later
        samples then come from the shard's download rather than by range.

        Kept as the pass's array and the span, sliced only when a fetch asks (few chunks
        do): this runs before every chunk, on the reading thread."""
        self._expected = (ids, start, stop)

    def fetch(self, sample_ids: Sequence[int]) -> None:
        """Reads by range, in as few GETs as possible, whichever of ``sample_ids`` lie in
        shards still downloading, so that :meth:`get` finds them.

        Raises:
            StaleIndexError: As :meth:`get`.
        """
        ids = np.asarray(sample_ids, np.int64)
        shards = np.searchsorted(self._ends, ids, side="right")
        later = self._later(ids)
        for shard_id in np.unique(shards).tolist():
            local = ids[shards == shard_id] - self._first[shard_id]
            partial = self._usable(shard_id)
            if partial is not None:
                ahead = None
                if later is not None:
                    in_shard = np.searchsorted(self._ends, later, side="right") == shard_id
                    ahead = later[in_shard] - self._first[shard_id]
                self._fetch(shard_id, partial, local, ahead)
                self._start(shard_id)
        self._served = os.getpid()

    def _later(self, ids: NDArray[np.int64]) -> NDArray[np.int64] | None:
        """The declared ids after ``ids``; None unless :meth:`expect` began with them."""
        whole, start, stop = self._expected
        expected = whole[start:stop]
        if len(expected) < len(ids) or not np.array_equal(expected[: len(ids)], ids):
            return None
        return expected[len(ids) :]

    def _usable(self, shard_id: int) -> Partial | None:
        """The shard's partial, opened if needed, while its download is under way."""
        target = self._target(shard_id)
        if target is None:
            return None
        if not host_calm(target.url):
            # A throttling store counts requests: each range GET would delay the shard's
            # own download, which brings every sample in one request.
            self._give_way(shard_id)
            return None
        with self._lock:
            self._forget_parent()
            partial = self._partials.get(shard_id)
        if files_ready(target.shard) or not self._coming(shard_id):
            self._drop(shard_id)
            return None
        if partial is not None:
            # Opened for this process's first samples of the shard (no download had begun):
            # it serves on, within its budget, while the shard downloads.
            return partial
        if (
            self._elsewhere(shard_id)
            and self._served == os.getpid()  # a process's first samples never wait
            and not self._wait_for_other(shard_id, target)
        ):
            return None  # landed: the reader reads the file
        if self._cache.fetching_here(shard_id):
            # Our own download (a prefetch) is under way: its parallel parts land sooner
            # than reading the shard twice, once by range and once whole, pays off.
            return None
        try:
            partial = Partial(target, self._zero_copy)
        except StaleIndexError:
            raise
        except NotByRange as err:
            logger.info("%s; waiting for the shard", err)
            self._not_by_range.add(int(self._stream_of_shard[shard_id]))
            return None
        except (OSError, CorruptShardError) as err:
            logger.info("range reads of %s failed (%r); waiting for the shard", target.url, err)
            self._give_way(shard_id)
            return None
        with self._lock:
            raced = self._partials.get(shard_id)
            if raced is None:
                self._partials[shard_id] = partial
            done = [s for s, p in self._partials.items() if files_ready(p.target.shard)]
            stale = [
                self._partials.pop(old)
                for old in dict.fromkeys(done + list(self._partials)[:-_MAX_PARTIALS])
                if old != shard_id
            ]
        for old_partial in stale:
            old_partial.close()
        if raced is not None:  # another thread opened it meanwhile: use theirs
            partial.close()
            return raced
        return partial

    def _elsewhere(self, shard_id: int) -> bool:
        """Whether another process of the node is downloading the shard."""
        return self._cache.fetching(shard_id) and not self._cache.fetching_here(shard_id)

    def _wait_for_other(self, shard_id: int, target: Target) -> bool:
        """Waits while another process's download of the shard progresses. Returns False
        once the shard landed; True when it stalled (the samples are then read by range)
        or stopped being a download (aborted: read by range while it starts again here)."""
        local = target.shard.local_path(target.shard.raw_data)
        with metrics.stalled():  # a reader waits here as for a shard that is not local
            while not files_ready(target.shard) and self._elsewhere(shard_id):
                if self._watch.stalled(local):
                    return True  # remembered: the next sample needs no new wait
                time.sleep(_POLL_S)
        self._watch.forget(local)
        return not files_ready(target.shard) and self._coming(shard_id)

    def _fetch(
        self,
        shard_id: int,
        partial: Partial,
        local_ids: NDArray[np.int64],
        ahead: NDArray[np.int64] | None = None,
    ) -> bool:
        try:
            if partial.fetch(local_ids, ahead=ahead, coming=self._cache.fetching(shard_id)):
                return True
            # Past the budget: the reader waits for the shard, unless another process's
            # download of it has stalled (its owner stopped): then the samples come by
            # range still, as the waiting would have no bound.
            stalled = self._elsewhere(shard_id) and self._wait_for_other(shard_id, partial.target)
            return stalled and partial.fetch(local_ids, past_budget=True)
        except StaleIndexError:
            raise
        except OSError as err:
            logger.info(
                "range GET of %s failed (%r); waiting for the shard", partial.target.url, err
            )
            self._drop(shard_id)
            return False

    def _coming(self, shard_id: int) -> bool:
        """Whether the shard is being downloaded, or will be once its ranges are read (no
        limit applies; under one, a download needed now may have to evict: left to the
        blocking path)."""
        return self._cache.fetching(shard_id) or not self._cache.limited

    def _start(self, shard_id: int, after_ranges: bool = True) -> None:
        """Starts the shard's download in the background, after its first ranges (their
        GETs go first: the shard's would compete with them; the reader reads on from its
        parts as they land); a no-op once it runs."""
        if not self._cache.fetching(shard_id):
            self._cache.prepare_async([shard_id], after_ranges=after_ranges)

    def _give_way(self, shard_id: int) -> None:
        """The shard is not read by range: its download starts now, so that the shards of a
        chunk download side by side rather than each when the reader reaches it (under a
        limit, the window started them already)."""
        if not self._cache.limited:
            self._start(shard_id, after_ranges=False)

    def _drop(self, shard_id: int) -> None:
        with self._lock:
            partial = self._partials.pop(shard_id, None)
        if partial is not None:
            partial.close()

    def _forget_parent(self) -> None:
        """After a fork: the partials are the parent's (closing our copies leaves its own)."""
        if self._pid != os.getpid():
            for partial in self._partials.values():
                os.close(partial.fd)  # this process's copy; the parent's stays open
            self._partials, self._pid = {}, os.getpid()

"""Bringing remote shards into the local cache, under the node's shared cache ledger.

Each dataset has one :class:`ShardCache`. The Rust ledger (one memory-mapped file per cache
directory and dataset, shared by every process on the node) decides who downloads a shard
and which least-recently-used shards to evict to stay under ``cache_limit``; downloads run
on the process's download pool (:mod:`~streamx.storage.pool`) so several are in flight at
once, each large one as parallel ranged GETs; every GET holds one of the node's connection
slots (``.streamx/connections`` beside the ledger), so the ranks and workers of a node share
``STREAMX_DOWNLOAD_CONNECTIONS`` between them.

Under a ``cache_limit``, each process pins the shards it is reading or about to read (its
*window*), so no process evicts a shard another one needs; prefetching only starts a download
that fits under the limit, and a shard needed right now waits for room (:mod:`.room`): it
goes over the limit only where this process's own holds fill it, and then only until a pin is
released, when the cache is trimmed back under it. Shards of streams that
copy nothing into the cache (no remote, or local tars read where they lie) are the user's
only copy: they are never tracked, counted or evicted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.cache import process_holds
from streamx.cache.background_fetches import BackgroundFetches
from streamx.cache.cache_dir import writable
from streamx.cache.cached_files import bytes_present as _bytes_present
from streamx.cache.cached_files import files_ready as _files_ready
from streamx.cache.download_watch import StallBound
from streamx.cache.ledger_files import ledger_parts, listed_files, remote_indexes
from streamx.cache.ledger_manifest import write_manifest_data
from streamx.cache.ledger_sync import sync_with_disk
from streamx.cache.read_only_ledger import ReadOnlyLedger, mirror_ledger
from streamx.cache.room import begin_within_limit
from streamx.cache.views import CachedStream, CacheLayout
from streamx.exceptions import ChecksumError
from streamx.format.index import ShardInfo, ShardList
from streamx.format.readers import SampleReader
from streamx.order.world import World
from streamx.runtime import metrics
from streamx.runtime.run_dirs import user_root
from streamx.storage.part_plan import after_ranges, looking_ahead
from streamx.storage.request_pace import any_paced, when_paced
from streamx.storage.settings import download_connections
from streamx.storage.slots import ConnectionSlots, using_slots

__all__ = ["ShardCache"]

_POLL_S = 0.005
# How a download's parts are planned (storage.part_plan): needed now, fetched ahead, or read
# on from its parts as they land after its first samples came by range.
_Plan = Literal["now", "ahead", "ranges"]

CacheLedgerLike = _core.CacheLedger | ReadOnlyLedger


def _call_if_alive(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    bound = method()
    if bound is not None:
        bound()


def _never(_: int) -> bool:
    return False


def _has_remote(stream: CachedStream) -> bool:
    return stream.copies_into_cache


class ShardCache:
    """Downloads, validates, decompresses and accounts for one dataset's shards.

    Args:
        layout: The dataset's streams and shards.
        reader: The dataset's reader, told to let go of evicted shards.
        limit: ``cache_limit`` in bytes, index files included, or None for no limit.
    """

    def __init__(self, layout: CacheLayout, reader: SampleReader, limit: int | None) -> None:
        self._streams: Sequence[CachedStream] = layout.streams
        self._stream_of_shard: NDArray[np.int64] = layout.stream_per_shard
        self._shards: ShardList = layout.shards
        self._reader = reader
        has_remote = np.array([_has_remote(s) for s in layout.streams] or [False], bool)
        self._remote: NDArray[np.bool_] = has_remote[self._stream_of_shard]
        # Over indexes read into columns nothing here is done per shard: the ledger reads a
        # shard's files from the index tables when it evicts it, and the cache is checked by
        # listing its directories (None: a source read in place, whose units are walked).
        self._indexes = remote_indexes(layout.shards, self._remote)
        num_shards = len(layout.shards)
        key = hashlib.blake2s(
            repr([(s.local, s.split, s.remote) for s in layout.streams]).encode(), digest_size=8
        ).hexdigest()
        # The ledger lives in the first remote stream's cache directory: never among the
        # user's own files.
        home = next(d for d, s in zip(layout.local_dirs, layout.streams) if _has_remote(s))
        path = os.path.join(home, ".streamx", f"ledger-{key}-{num_shards}")
        # cache_limit counts the index files too, as in mosaicml-streaming.
        self.index_bytes = sum(stream.get_index_size() for stream in layout.streams)
        shard_limit = None if limit is None else max(limit - self.index_bytes, 0)
        self.read_only = not writable(home)
        self.ledger: CacheLedgerLike
        if self.read_only:
            self.ledger = mirror_ledger(home, self._shards, self._remote)
            slots_dir = os.path.join(user_root(), "connections")
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # Eviction deletes only a regular file of the index's size (never a symlink, or
            # a file planted under the name), and nothing out of the stream's `local`.
            if self._indexes is not None:
                parts = ledger_parts(self._indexes)
                self.ledger = _core.CacheLedger(path, num_shards, shard_limit, indexed=parts)
            else:
                files, sizes = listed_files(layout.shards, self._remote)
                self.ledger = _core.CacheLedger(path, num_shards, shard_limit, files, sizes)
            if len(layout.streams) > 1:
                # `streamx cache` names one stream's shards from its index.json; several
                # streams' shards are named by what was registered here.
                write_manifest_data(path, self.ledger.files_manifest())
            slots_dir = os.path.join(os.path.dirname(path), "connections")
            sync_with_disk(self.ledger, layout, self._remote, self._indexes)
        self._slots = ConnectionSlots(slots_dir, download_connections())
        sizes = layout.shards.max_sizes()[self._remote]
        self.max_shard_bytes = int(sizes.max()) if sizes.size else 0
        self._fetches = BackgroundFetches()
        self._pinned: list[int] = []
        self._window_budget: int | None = None
        self._settled = -1  # the pid whose last window needs no more work
        self._held_back: list[int] = []  # the look-ahead waiting for a pace
        self._waits_for_pace = -1  # the pid that waits for one to start it
        # Whether a shard is read by range before its download starts (set by RangeReads).
        self.ranges_first: Callable[[int], bool] = _never

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(
            _pinned=[],
            _window_budget=None,
            _settled=-1,
            _held_back=[],
            _waits_for_pace=-1,
        )
        return state

    @property
    def remote_shards(self) -> NDArray[np.bool_]:
        """Per shard, whether it comes from a remote (False: the user's own local files)."""
        return self._remote.copy()

    @property
    def limited(self) -> bool:
        """Whether a ``cache_limit`` applies."""
        return self.ledger.limit is not None

    def prepare(self, shard_id: int, timeout: float | None = None) -> None:
        """Blocks until shard ``shard_id`` is local, downloading it here if nobody else is.

        Raises:
            FileNotFoundError: If the shard belongs to a stream without a remote and its
                files are missing.
        """
        with metrics.stalled():  # a reader waits here only for a shard that is not local
            self._prepare(shard_id, timeout, background=False)

    def _prepare(
        self, shard_id: int, timeout: float | None, background: bool, ahead: _Plan = "now"
    ) -> bool:
        """Returns whether the shard is local. In the background, gives up (False) rather
        than wait for another process or go over the limit."""
        shard = self._shards[shard_id]
        if not self._remote[shard_id]:
            if _files_ready(shard):
                return True
            raise FileNotFoundError(shard.local_path(shard.raw_data))
        needed = shard.get_max_size()
        deadline = None if timeout is None else time.monotonic() + timeout
        stall: StallBound | None = None
        while True:
            ledger = self.ledger
            if background or not isinstance(ledger, _core.CacheLedger) or ledger.limit is None:
                decision, evicted = ledger.begin_download(shard_id, needed, background)
            else:  # only a writable cache under a limit has room to wait for
                decision, evicted = begin_within_limit(ledger, shard_id, needed, self._held_here)
            for victim in evicted:
                self._reader.evict(victim)
            if decision == "local":
                if _files_ready(shard):
                    return True
                self.ledger.sync(shard_id, None)  # deleted behind our back: fetch again
                continue
            if decision == "download":
                with looking_ahead(ahead == "ahead"), after_ranges(ahead == "ranges"):
                    self._download(shard_id)
                return True
            if background:  # "noroom", or another process is fetching it
                return False
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(
                    f"Timed out waiting for another process to fetch {shard.raw_data.basename}"
                )
            stall = stall or self._stall_bound(shard_id)
            stall.check(shard.raw_data.basename)
            time.sleep(_POLL_S)

    def _stall_bound(self, shard_id: int) -> StallBound:
        """How long a reader waits on another process's stalled download of the shard: as
        long as that download may take in all, ``download_retry x download_timeout``."""
        shard = self._shards[shard_id]
        stream = self._streams[self._stream_of_shard[shard_id]]
        attempts = max(int(getattr(stream, "download_retry", 1)), 1)
        bound = attempts * float(getattr(stream, "download_timeout", 60.0))
        return StallBound(shard.local_path(shard.zip_data or shard.raw_data), bound)

    def _download(self, shard_id: int) -> None:
        shard = self._shards[shard_id]
        stream = self._streams[self._stream_of_shard[shard_id]]
        try:
            with using_slots(self._slots):
                self._prepare_files(stream, shard)
        except BaseException:
            for raw, packed in shard.file_pairs:  # leave nothing the ledger does not count
                for info in (raw, packed):
                    if info is not None:
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(shard.local_path(info))
            self.ledger.abort_download(shard_id)
            raise
        self.ledger.finish_download(shard_id, _bytes_present(shard))
        metrics.add_download(shard.get_zip_size() or shard.get_raw_size())

    @staticmethod
    def _prepare_files(stream: CachedStream, shard: ShardInfo) -> None:
        """The stream's hooks (a subclass's downloads apply). A digest mismatch is a bad
        download like any other: the bad file is gone already, so it is fetched again, up to
        ``download_retry`` attempts in all."""
        attempts = max(int(getattr(stream, "download_retry", 1)), 1)
        for attempt in range(1, attempts + 1):
            try:
                stream.prepare_shard(shard)
                return
            except ChecksumError:
                if attempt == attempts:
                    raise

    @contextlib.contextmanager
    def hold(self, shard_id: int) -> Iterator[None]:
        """Keeps ``shard_id`` from being evicted (under a limit) while the block runs."""
        if not (self.limited and self._remote[shard_id]):
            yield
            return
        pinned = self._pin(shard_id)
        try:
            yield
        finally:
            if pinned:
                self._unpin(shard_id)
                self._trim()

    def _pin(self, shard_id: int) -> bool:
        pinned = self.ledger.pin(shard_id)
        if pinned:
            process_holds.add(self.ledger.path, shard_id)
        return pinned

    def _unpin(self, shard_id: int) -> None:
        process_holds.remove(self.ledger.path, shard_id)
        self.ledger.unpin(shard_id)

    def _held_here(self, shard_id: int) -> int:
        """Bytes of the local shards this process pins (windows and holds of every dataset
        over this ledger), other than ``shard_id``: room only this process could free."""
        held = process_holds.held(self.ledger.path) - {shard_id}
        return sum(self.ledger.bytes(s) for s in held if self.ledger.state(s) == "local")

    def set_window(
        self, reading: Sequence[int], ahead: Sequence[int] = (), *, same: bool = False
    ) -> list[int] | None:
        """Declares the shards this process reads now (``reading``) and next (``ahead``),
        each most urgent first; an empty window releases everything. ``same`` says the
        window is the previous call's: without a limit, once every shard of that window was
        here or on its way, there is nothing to do.

        Under a limit, the shards being read are pinned (as many as this process's share of
        the cache holds) until they are read, so no process evicts them; shards that stop
        being read are unpinned and unmapped, so that once evicted their disk space really
        is freed. The look-ahead is fetched in the background only where it fits under the
        limit, and stamped as recently used (the nearest most recently) so that eviction takes
        shards already read first.

        Returns:
            The remote shards now pinned, or None when there is no limit (nothing is).
        """
        if same and self._settled == os.getpid():
            return None
        self._settled = -1
        now = [s for s in reading if self._remote[s]]
        later = [s for s in ahead if self._remote[s] and s not in now]
        if self.limited:
            now = now[: self._budget()]
            keep = set(now)
            # A pin refused (every slot held by live processes) leaves the shard unprotected;
            # only the pins taken are released.
            pinned = [s for s in now if s in self._pinned or self._pin(s)]
            released = [s for s in self._pinned if s not in keep]
            for shard_id in released:
                self._unpin(shard_id)
                self._reader.evict(shard_id)
            self._pinned = pinned
            if released:
                self._trim()
            later = later[: max(self._capacity() - len(now) - 1, 0)]
        wanted = now + later
        for shard_id in reversed(wanted):
            self.ledger.touch(shard_id)
            if not _files_ready(self._shards[shard_id]):
                # Deleted by hand while this process had it mapped: reading on from the
                # map would never bring the file back, so the read fetches it again.
                self._reader.evict(shard_id)
        self._held_back = []  # a look-ahead held back before is this window's now
        if wanted:
            urgent = wanted[0]
            if not self.fetching_here(urgent) and not _files_ready(self._shards[urgent]):
                # The shards read now get the bandwidth; the look-ahead starts at the next
                # call, once they are here (what makes the first sample quick). All of them
                # at once: a chunk yields nothing before its last shard is in, and a shuffled
                # chunk touches dozens, which one at a time took a shard's time each. One
                # read by range first starts its download once its first samples are in:
                # the whole shard's GETs would compete with them.
                wanted = [s for s in now if not self.ranges_first(s)]
                if any_paced():
                    # Unless a store throttles: its parts are few and large then, so the
                    # shards read now leave connections idle that the look-ahead can use.
                    wanted += later
                elif later:
                    self._ahead_once_paced(later)
            elif not self.limited:
                # Every shard of the window is here or on its way (a failed prefetch is
                # retried when the read needs it); under a limit, pins and recency are kept
                # current at every call instead.
                self._settled = os.getpid()
            soon = set(later)  # fetched ahead: few, large parts (storage.part_plan)
            self.prepare_async([s for s in wanted if s not in soon])
            self.prepare_async([s for s in wanted if s in soon], look_ahead=True)
        return self._pinned if self.limited else None

    def _ahead_once_paced(self, later: list[int]) -> None:
        """Starts ``later`` (the look-ahead held back for the shards read now) once a store
        is seen throttling: its pace serves their requests first (storage.request_pace)."""
        self._held_back = later
        if self._waits_for_pace != os.getpid():
            self._waits_for_pace = os.getpid()
            # Weakly: a dataset dropped before any store throttles is not kept alive by its
            # listener (nor its streams' claims on their `local`).
            start = weakref.WeakMethod(self._start_held_back)
            when_paced(functools.partial(_call_if_alive, start))

    def _start_held_back(self) -> None:
        later, self._held_back = self._held_back, []
        self._waits_for_pace = -1
        if later:
            self.prepare_async(later, look_ahead=True)

    def _trim(self) -> None:
        """Gives back what an urgent download took over the limit while every other shard
        was pinned, now that a pin is released (a cheap check when within the limit)."""
        for victim in self.ledger.trim_to_limit():
            self._reader.evict(victim)

    def _capacity(self) -> int:
        """How many of the largest shards the limit holds."""
        return int((self.ledger.limit or 0) // max(self.max_shard_bytes, 1))

    def _budget(self) -> int:
        """Shards one process may pin: its share of what the cache holds, at least one."""
        if self._window_budget is None:
            world = World.detect()
            processes = world.ranks_per_node * world.workers_per_rank
            self._window_budget = max(1, self._capacity() // processes)
        return self._window_budget

    def prepare_async(
        self, shard_ids: list[int], look_ahead: bool = False, after_ranges: bool = False
    ) -> None:
        """Starts fetching shards in the background (dedup'd per process); ``look_ahead``:
        no reader waits for them yet; ``after_ranges``: their readers read on from their
        parts as they land (:func:`~streamx.storage.part_plan.after_ranges`)."""
        ahead: _Plan = "ahead" if look_ahead else "ranges" if after_ranges else "now"
        missing = [s for s in shard_ids if not _files_ready(self._shards[s])]
        self._fetches.start(missing, functools.partial(self._fetch_in_background, plan=ahead))

    def _fetch_in_background(self, shard_id: int, plan: _Plan) -> bool:
        return self._prepare(shard_id, None, True, plan)

    def settle(self) -> None:
        """Ends this process's background downloads (a pass is over): the ones not started
        are dropped, the ones under way are waited for, so that nothing of them writes into
        the cache afterwards."""
        self._settled = -1  # a window that counted on a dropped download looks again
        self._fetches.settle()

    def fetching_here(self, shard_id: int) -> bool:
        """Whether this process has queued or is running a download of ``shard_id``."""
        return self._fetches.here(shard_id)

    def fetching(self, shard_id: int) -> bool:
        """Whether a download of ``shard_id`` is under way: queued in this process, or
        being fetched by any process of the node."""
        if self.fetching_here(shard_id):
            return True
        return not self.read_only and self.ledger.state(shard_id) == "preparing"

    def usage(self) -> int:
        """Bytes counted against ``cache_limit`` on this node: the index files and every
        downloaded (or reserved) shard."""
        return int(self.ledger.usage) + int(self.index_bytes)

    def try_prepare(self, shard_id: int) -> bool:
        """Like :meth:`prepare`, but returns False at once rather than wait for another
        process's download of the shard or go over the limit.

        Raises:
            FileNotFoundError: If the shard belongs to a stream without a remote and its
                files are missing.
        """
        return self._prepare(shard_id, None, background=True)

    def evict(self, shard_id: int) -> int:
        """Deletes a downloaded shard's files now (even if pinned: a later read fetches it
        again) and unmaps it in this process.

        Returns:
            Bytes freed (0 if the shard was not local).

        Raises:
            ValueError: If the shard belongs to a stream without a remote (its files are the
                user's only copy).
        """
        if not self._remote[shard_id]:
            raise ValueError(
                f"Shard {shard_id} ({self._shards[shard_id].raw_data.basename}) belongs to a "
                "stream without a remote: its files are the only copy and are never evicted"
            )
        freed = self.ledger.evict(shard_id)
        self._reader.evict(shard_id)
        return freed or 0

    def evict_coldest(self) -> int | None:
        """Evicts the least recently used downloaded shard that no process holds.

        Returns:
            The shard evicted, or None if there was none to evict.
        """
        victim = self.ledger.evict_coldest()
        if victim is not None:
            self._reader.evict(victim)
        return victim

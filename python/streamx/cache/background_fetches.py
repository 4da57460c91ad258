"""The shard downloads one process runs in the background, on its download pool.

A pass over an epoch may read a shard's last sample before the shard's own download is
done (its samples came by range, or another thread decompressed what had landed), so a
download can still be writing into the cache when the pass ends. :meth:`settle` waits for
those, so that once a loop over a dataset ends nothing of it writes into ``local`` any more
(as with mosaicml-streaming, whose pass reads a shard only once its download is done).
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from streamx.runtime import metrics
from streamx.storage.pool import download_pool

__all__ = ["BackgroundFetches"]


class BackgroundFetches:
    """At most one background download per shard in this process (a forked child starts
    with none: futures of the parent's pool never finish in it)."""

    def __init__(self) -> None:
        self._pid = -1
        self._running: dict[int, Future[bool]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def start(self, shard_ids: list[int], fetch: Callable[[int], bool]) -> None:
        """Runs ``fetch(shard)`` on the download pool for each shard of ``shard_ids`` not
        already fetched here. The caller has left out shards that are local already."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._running = {}
            pool = download_pool()
            started = []
            for shard_id in shard_ids:
                if shard_id in self._running:
                    continue
                try:
                    future = pool.submit(fetch, shard_id)
                except RuntimeError:  # no thread could start: readers fetch what they need
                    break
                self._running[shard_id] = future
                started.append((shard_id, future))
        metrics.queued(len(started))
        # Outside the lock: a future already done runs its callback right here.
        for shard_id, future in started:
            future.add_done_callback(functools.partial(self._forget, shard_id))

    def _forget(self, shard_id: int, future: Future[bool]) -> None:
        metrics.dequeued()
        with self._lock:
            if self._running.get(shard_id) is future:
                del self._running[shard_id]

    def here(self, shard_id: int) -> bool:
        """Whether this process has queued or is running a download of ``shard_id``."""
        with self._lock:
            return self._pid == os.getpid() and shard_id in self._running

    def settle(self) -> None:
        """Drops the downloads not started yet and waits for those under way: a reader
        that still wants one of the dropped shards fetches it itself. A download's failure
        is its reader's to raise (it fetches the shard again), so none is raised here."""
        with self._lock:
            if self._pid != os.getpid():
                return
            futures = list(self._running.values())
        for future in futures:
            future.cancel()
        concurrent.futures.wait(futures)
        with self._lock:  # a done future's callback may not have run yet
            for shard_id, future in list(self._running.items()):
                if future.done():
                    del self._running[shard_id]

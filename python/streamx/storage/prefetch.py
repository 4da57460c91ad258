"""A bounded, per-process pool of downloads shared by every stream of a dataset.

mosaicml-streaming has one download in flight per worker; here a process keeps up to
`max_in_flight` going, and asking twice for a shard already on its way returns the same
future instead of fetching it twice.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor

from streamx.storage.download import download_file

__all__ = ["Downloader", "default_max_in_flight"]


def default_max_in_flight() -> int:
    """`STREAMX_DOWNLOAD_THREADS` if set, else 8: enough to hide object-store latency."""
    return max(1, int(os.environ.get("STREAMX_DOWNLOAD_THREADS", "8")))


class Downloader:
    """Submits downloads to a lazily created thread pool, deduplicating in-flight requests.

    The pool is created on first use and rebuilt after a fork (threads do not survive one),
    so an instance may be built in the parent and used inside DataLoader workers.

    Args:
        max_in_flight: Downloads running at once in this process.
        retry: Total attempts per file (see :func:`~streamx.storage.download.download_file`).
        timeout: Seconds per attempt.
        fetch: The function doing one download; tests and the dataset (to add
            decompression or hash checks) may wrap :func:`download_file`.
    """

    def __init__(
        self,
        max_in_flight: int | None = None,
        *,
        retry: int = 2,
        timeout: float = 60.0,
        fetch: Callable[..., None] = download_file,
    ) -> None:
        if retry < 1:
            raise ValueError(f"num_attempts must be at-least 1, got retry={retry}")
        self.max_in_flight = max_in_flight or default_max_in_flight()
        self.retry = retry
        self.timeout = timeout
        self._fetch = fetch
        self._lock = threading.Lock()
        self._lock_pid = os.getpid()
        self._pid = -1
        self._pool: ThreadPoolExecutor | None = None
        self._in_flight: dict[Hashable, Future[str]] = {}

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state.update(_lock=None, _lock_pid=-1, _pid=-1, _pool=None, _in_flight={})
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._lock_pid = os.getpid()

    def submit(
        self, key: Hashable, remote: str, local: str, *, expected_size: int | None = None
    ) -> Future[str]:
        """Start downloading `remote` to `local` unless `key` is already in flight.

        Returns:
            A future resolving to `local` once the file is in place, or to the download's
            exception.
        """
        if self._lock_pid != os.getpid():
            # A lock held by another parent thread at fork time would never be released here.
            self._lock = threading.Lock()
            self._lock_pid = os.getpid()
        with self._lock:
            pool = self._ensure_pool()
            future = self._in_flight.get(key)
            if future is not None:
                return future
            future = pool.submit(self._run, remote, local, expected_size)
            self._in_flight[key] = future
        future.add_done_callback(lambda f: self._forget(key, f))
        return future

    def in_flight(self) -> int:
        """Downloads submitted and not yet finished."""
        with self._lock:
            return len(self._in_flight)

    def shutdown(self, wait: bool = True) -> None:
        """Stop the pool; queued downloads are cancelled."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._in_flight.clear()
        if pool is not None and self._pid == os.getpid():
            pool.shutdown(wait=wait, cancel_futures=True)

    def _run(self, remote: str, local: str, expected_size: int | None) -> str:
        self._fetch(
            remote, local, retry=self.retry, timeout=self.timeout, expected_size=expected_size
        )
        return local

    def _ensure_pool(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pid != os.getpid():
            # After a fork the parent's threads are gone: start over in this process.
            self._pool = ThreadPoolExecutor(self.max_in_flight, thread_name_prefix="streamx-dl")
            self._pid = os.getpid()
            self._in_flight = {}
        return self._pool

    def _forget(self, key: Hashable, future: Future[str]) -> None:
        with self._lock:
            if self._in_flight.get(key) is future:
                del self._in_flight[key]

"""The one download thread pool of a process.

Whole-shard tasks (the shard cache's look-ahead) and the ranged parts of a large file run
on it. A file's parts never wait for a pool thread: the thread that downloads a file works
through its parts itself and the pool's threads only help, so a full pool slows a download
down but never deadlocks it. The pool is created on first use and again after a fork
(threads do not survive one); its size is
:func:`~streamx.storage.settings.download_threads`.

Range reads (:mod:`~streamx.cache.range_reads`) get a few threads of their own: they
happen exactly while a shard's parts keep every download thread busy, and a reader is
waiting for them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from streamx.storage.settings import download_threads

__all__ = ["download_pool", "range_pool"]

RANGE_THREADS = 8
_LOCK = threading.Lock()
_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}


def download_pool() -> ThreadPoolExecutor:
    """This process's download pool."""
    return _pool("streamx-dl", download_threads)


def range_pool() -> ThreadPoolExecutor:
    """This process's threads for range reads (``RANGE_THREADS`` of them)."""
    return _pool("streamx-range", lambda: RANGE_THREADS)


def _pool(name: str, size: Callable[[], int]) -> ThreadPoolExecutor:
    global _LOCK
    pid = os.getpid()
    if any(owner != pid for owner, _ in _POOLS.values()):
        # Forked: the parent's threads and a lock it may have held are not ours.
        _LOCK = threading.Lock()
        _POOLS.clear()
    with _LOCK:
        if name not in _POOLS:
            _POOLS[name] = (pid, ThreadPoolExecutor(size(), name))
        return _POOLS[name][1]

"""The one download thread pool of a process.

Whole-shard tasks (the shard cache's look-ahead) and the ranged parts of a large file run
on it. A file's parts never wait for a pool thread: the thread that downloads a file works
through its parts itself and the pool's threads only help, so a full pool slows a download
down but never deadlocks it. The pool is created on first use and again after a fork
(threads do not survive one); its size is
:func:`~streamx.storage.settings.download_threads`.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from streamx.storage.settings import download_threads

__all__ = ["download_pool"]

_LOCK = threading.Lock()
_POOL: list[tuple[int, ThreadPoolExecutor]] = []


def download_pool() -> ThreadPoolExecutor:
    """This process's download pool."""
    global _LOCK
    pid = os.getpid()
    if _POOL and _POOL[0][0] != pid:
        # Forked: the parent's threads and a lock it may have held are not ours.
        _LOCK = threading.Lock()
        _POOL.clear()
    with _LOCK:
        if not _POOL:
            _POOL.append((pid, ThreadPoolExecutor(download_threads(), "streamx-dl")))
        return _POOL[0][1]

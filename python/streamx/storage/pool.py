"""The one download thread pool of a process.

Whole-shard tasks (the shard cache's look-ahead) and the ranged parts of a large file run
on it. A file's parts never wait for a pool thread: the thread that downloads a file works
through its parts itself and the pool's threads only help, so a full pool slows a download
down but never deadlocks it. The pool is created on first use, again after a fork
(threads do not survive one) and again when its size,
:func:`~streamx.storage.settings.download_threads`, changes.

Range reads (:mod:`~streamx.cache.range_reads`) get a few threads of their own: they
happen exactly while a shard's parts keep every download thread busy, and a reader is
waiting for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import resource
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from streamx.storage.settings import download_threads

__all__ = ["download_pool", "range_pool"]

logger = logging.getLogger(__name__)

RANGE_THREADS = 8
_LOCK = threading.Lock()
# name -> (owning pid, the size asked for, the pool)
_POOLS: dict[str, tuple[int, int, ThreadPoolExecutor]] = {}


def download_pool() -> ThreadPoolExecutor:
    """This process's download pool."""
    return _pool("streamx-dl", lambda: min(download_threads(), _threads_that_fit()))


def range_pool() -> ThreadPoolExecutor:
    """This process's threads for range reads (``RANGE_THREADS`` of them)."""
    return _pool("streamx-range", lambda: RANGE_THREADS)


def _pool(name: str, size: Callable[[], int]) -> ThreadPoolExecutor:
    global _LOCK
    pid = os.getpid()
    if any(owner != pid for owner, _, _ in _POOLS.values()):
        # Forked: the parent's threads and a lock it may have held are not ours.
        _LOCK = threading.Lock()
        _POOLS.clear()
    wanted = size()
    with _LOCK:
        found = _POOLS.get(name)
        if found is None or found[1] != wanted:
            # First use, or the settings changed since (a later dataset of the process asks
            # for another count): the old pool finishes what it was given, then ends.
            _few_arenas()
            _POOLS[name] = (pid, wanted, _Pool(wanted, name))
            if found is not None:
                found[2].shutdown(wait=False)
        return _POOLS[name][2]


class _Pool(ThreadPoolExecutor):
    """A pool that works with the threads it could start. Under an address-space limit
    (``ulimit -v``; each thread reserves a stack and a malloc arena) a new thread may fail
    to start: the work then waits for the threads already running, and the pool stops
    growing. With no thread at all, ``submit`` raises ``RuntimeError`` as usual (its
    callers then do the work themselves)."""

    def _adjust_thread_count(self) -> None:
        try:
            with _small_stacks():
                super()._adjust_thread_count()
        except RuntimeError:
            if not self._threads:
                raise
            logger.warning(
                "streamx: %s runs with %d threads (a new thread could not start, as under "
                "an address-space limit)",
                self._thread_name_prefix,
                len(self._threads),
            )
            self._max_workers = len(self._threads)


# What one more thread reserves of the address space besides its stack: glibc gives a
# thread that allocates a malloc arena of its own, reserved 64 MiB at a time.
_ARENA_BYTES = 64 << 20


def _threads_that_fit() -> int:
    """Download threads that leave half of what an address-space limit (``ulimit -v``)
    still allows to the shards' memory maps; no bound without such a limit."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return 1 << 30
    stack = _LIMITED_STACK
    try:
        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        used = 0
    return max(2, (limit - used) // 2 // (stack + _ARENA_BYTES))


# Under an address-space limit, a pool thread gets this stack (its work is shallow: a GET,
# a pwrite) rather than the 8 MiB default, which would count against the limit.
_LIMITED_STACK = 2 << 20
_STACK_LOCK = threading.Lock()


@contextlib.contextmanager
def _small_stacks() -> Iterator[None]:
    """Threads started in the block get small stacks, where an address-space limit is set."""
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        yield
        return
    with _STACK_LOCK:
        before = threading.stack_size(_LIMITED_STACK)
        try:
            yield
        finally:
            threading.stack_size(before)


_M_ARENA_MAX = -8  # mallopt's parameter number in glibc's malloc.h


def _few_arenas() -> None:
    """Under an address-space limit, caps glibc's malloc arenas (each thread that allocates
    may reserve 64 MiB of its own otherwise); changes nothing without such a limit."""
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 2)

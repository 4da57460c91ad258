"""The next row group decoded in a thread while batches are read from this one.

A pass in order reads a row group's batches one after the other, then the next row group's:
decoding that one (pyarrow, which leaves the GIL while it decodes) can run while this one's
batches are built, instead of between them. Only a row group already on local disk is
decoded ahead (the shard cache's look-ahead fetches them); one that is not, or fails to
decode, is left to the reader, which decodes it as before and raises its error. A shuffled
pass jumps between row groups: it decodes nothing ahead (the caller asks only for batches
whose rows run in order).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["DecodeAhead"]


class DecodeAhead:
    """Row groups decoded ahead, by number, one at a time in one thread (made on first use,
    again in a forked child: a parent's thread does not survive a fork)."""

    def __init__(self) -> None:
        self._pending: dict[int, Future[Any]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[DecodeAhead], tuple[()]]:
        return (DecodeAhead, ())  # a fresh one in the process that unpickles it

    def start(self, number: int, path: str | None, decode: Callable[[], Any]) -> None:
        """Decodes row group ``number`` (whose local file is ``path``; ``None``: read in
        place) with ``decode`` in the thread, unless it is already under way or its file is
        not on disk."""
        with self._lock:
            if self._pid != os.getpid():
                self._pool, self._pid, self._pending = None, os.getpid(), {}
            if number in self._pending or (path is not None and not os.path.exists(path)):
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="streamx-decode-ahead")
            self._pending[number] = self._pool.submit(decode)

    def wait(self, number: int) -> None:
        """Waits for row group ``number`` if it is being decoded ahead (its error, if any,
        is left for the reader to meet again)."""
        with self._lock:
            pending = self._pending.pop(number, None) if self._pid == os.getpid() else None
        if pending is not None:
            pending.exception()

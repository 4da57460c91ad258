"""The decoded row-group cache knows its process without a system call per batch (a fork
hook keeps the process id): a child forked while a thread of its parent held the cache's
lock still uses the cache, with a lock of its own."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from streamx.format.parquet.decoded_cache import DecodedCache


@dataclass
class _Entry:
    nbytes: int


def _exit_status(pid: int, seconds: float) -> int | None:
    """The child's exit status, or None (then killed) if it has not exited in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def test_a_child_forked_while_the_lock_is_held_uses_the_cache() -> None:
    cache: DecodedCache[_Entry] = DecodedCache(limit=1 << 20)
    assert cache.get("parent", lambda: _Entry(10)).nbytes == 10
    lock = cache._guard()
    with lock:  # as a parent's thread would hold it at the fork
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                made = cache.get("child", lambda: _Entry(20))
                code = 0 if made.nbytes == 20 and cache.keys() == ["parent", "child"] else 2
            finally:
                os._exit(code)
    assert _exit_status(pid, 20.0) == 0  # None: the child hung on its parent's lock
    assert cache.keys() == ["parent"]  # the parent's cache is its own
    assert cache._guard() is lock

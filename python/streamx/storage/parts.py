"""A file fetched as ranged GETs in parallel, written in place into one preallocated file.

The calling thread works through the parts itself, first part first, and asks the download
pool for helpers that take the next parts as they free up. Nobody ever waits for a part
that no thread has started, so a busy pool makes a download slower, never stuck. Each part
holds a connection slot for its GET and is retried on its own (with jittered backoff); the
first part that fails for good stops the handing out of parts, and the error is raised once
the parts already running have ended (each within its timeout).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from streamx.exceptions import ObjectChangedError, RangeIgnoredError
from streamx.storage.pool import download_pool
from streamx.storage.slots import Slots

__all__ = ["FetchRange", "backoff_delay", "fetch_parts", "split"]

logger = logging.getLogger(__name__)

# fetch(start, length, deadline): writes bytes [start, start + length) in place.
FetchRange = Callable[[int, int, float], None]

_BACKOFF_BASE_S = 0.25
_BACKOFF_CAP_S = 8.0
# Not worth retrying: the object or the access is missing, not the connection.
# Errors no retry can fix: a missing or refused object.
# Nor a part's: an object rewritten, or a server ignoring ranges (the whole file's concern).
_PERMANENT = (FileNotFoundError, PermissionError, ObjectChangedError, RangeIgnoredError)


def backoff_delay(attempt: int) -> float:
    """Seconds to sleep after failed attempt number `attempt` (1-based): exponential, jittered."""
    ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


def split(size: int, part: int) -> list[tuple[int, int]]:
    """``(start, length)`` of each part of a ``size``-byte file, in order."""
    return [(start, min(part, size - start)) for start in range(0, size, part)]


def fetch_parts(
    fetch: FetchRange,
    parts: list[tuple[int, int]],
    *,
    url: str,
    retry: int,
    timeout: float,
    slots: Slots,
) -> None:
    """Runs ``fetch`` over every part, in parallel up to the pool and the slots allow.

    Raises:
        The error of the first part that failed on every attempt.
    """
    job = _Job(fetch, parts, url, retry, timeout, slots)
    helpers = min(len(parts) - 1, slots.count - 1)
    pool = download_pool()
    for _ in range(max(helpers, 0)):
        pool.submit(job.work)
    job.work()
    job.wait()


class _Job:
    def __init__(
        self,
        fetch: FetchRange,
        parts: list[tuple[int, int]],
        url: str,
        retry: int,
        timeout: float,
        slots: Slots,
    ) -> None:
        self._fetch, self._parts, self._url = fetch, parts, url
        self._retry, self._timeout, self._slots = retry, timeout, slots
        self._next = 0
        self._running = 0
        self._error: BaseException | None = None
        self._changed = threading.Condition()

    def work(self) -> None:
        while True:
            with self._changed:
                if self._error is not None or self._next == len(self._parts):
                    return
                start, length = self._parts[self._next]
                self._next += 1
                self._running += 1
            try:
                self._one(start, length)
            except BaseException as err:
                with self._changed:
                    self._error = self._error or err
            finally:
                with self._changed:
                    self._running -= 1
                    self._changed.notify_all()

    def wait(self) -> None:
        with self._changed:
            while self._running:
                self._changed.wait()
        if self._error is not None:
            raise self._error

    def _one(self, start: int, length: int) -> None:
        for attempt in range(1, self._retry + 1):
            try:
                with self._slots.hold():
                    self._fetch(start, length, time.monotonic() + self._timeout)
                return
            except _PERMANENT:
                raise
            except Exception as err:
                with self._changed:
                    if attempt == self._retry or self._error is not None:
                        raise
                delay = backoff_delay(attempt)
                logger.info(
                    "GET %s bytes %d-%d failed (%r), attempt %d/%d; retrying in %.2fs",
                    self._url,
                    start,
                    start + length - 1,
                    err,
                    attempt,
                    self._retry,
                    delay,
                )
                time.sleep(delay)

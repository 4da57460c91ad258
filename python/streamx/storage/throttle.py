"""Throttling as the object stores document it: S3's ``503 SlowDown`` and GCS's ``429``.

A throttled answer is not a failure. The request waits and is asked again:

* for ``Retry-After`` when the server sends it (seconds or an HTTP date), plus a little
  jitter so that the waiting clients do not return together;
* otherwise for a "full jitter" exponential backoff, a random time between zero and a
  ceiling that doubles with each throttled try. Clients that were throttled together then
  come back spread out, not in lockstep.

Each host also gets an adaptive limit on the requests this process sends to it at once
(AIMD, as TCP does): every throttled answer to a request that started after the last cut
halves the limit, and every answer after it raises the limit by one, up to the connection
count. The process writes its limit next to the node's connection slots, so that the other
processes of the node send fewer requests too (:mod:`~streamx.storage.slots`).

A request gives up after ``STREAMX_THROTTLE_RETRIES`` throttled tries (default 10) with
:class:`ThrottledError`, which names the URL, the status and the tries. Throttled answers
are counted in the iteration metrics (``throttled``), and logged at most every
:data:`LOG_EVERY_S` seconds per host.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from streamx.exceptions import HttpResponseError
from streamx.runtime import metrics

__all__ = [
    "LOG_EVERY_S",
    "THROTTLE_STATUSES",
    "AdaptiveLimit",
    "ThrottledError",
    "headers_wanted",
    "limit_for",
    "note_retry_after",
    "parse_retry_after",
    "retry_after_of",
    "throttle_delay",
    "throttle_retries",
    "throttled_status",
    "waiting_out",
    "want_headers",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

THROTTLE_STATUSES = frozenset({429, 503})
LOG_EVERY_S = 30.0
_DEFAULT_TRIES = 10
_BASE_S = 0.5
_CAP_S = 20.0
# The most a Retry-After is obeyed for: a server asking for an hour gets the budget's end.
_MOST_RETRY_AFTER_S = 120.0


# Hosts whose throttled answers were read by Rust, which keeps no headers: their GETs go
# through http.client for a while, so that the next throttled answer's Retry-After is read.
_WANT_HEADERS_S = 30.0
_WANT_HEADERS: dict[tuple[str, int | None], float] = {}


def want_headers(host: str, port: int | None) -> None:
    """Asks for ``host``'s answers to be read whole (headers included) for a while."""
    _WANT_HEADERS[(host, port)] = time.monotonic() + _WANT_HEADERS_S


def headers_wanted(host: str, port: int | None) -> bool:
    """Whether ``host`` throttled lately, so that its answers' headers matter."""
    until = _WANT_HEADERS.get((host, port))
    return until is not None and time.monotonic() < until


class ThrottledError(HttpResponseError):
    """A server kept throttling one request past ``STREAMX_THROTTLE_RETRIES`` tries."""

    def __init__(self, url: str, status: int, tries: int) -> None:
        super().__init__(
            url,
            status,
            "throttled",
            f"the server throttled all {tries} tries (HTTP {status}); "
            "STREAMX_THROTTLE_RETRIES sets how many are made",
        )
        self.tries = tries


def throttle_retries() -> int:
    """Throttled tries one request may make before it fails (``STREAMX_THROTTLE_RETRIES``).

    Raises:
        ValueError: If the variable is set to something other than a positive integer.
    """
    raw = os.environ.get("STREAMX_THROTTLE_RETRIES") or str(_DEFAULT_TRIES)
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"STREAMX_THROTTLE_RETRIES must be a positive integer, got {raw!r}")
    return int(raw)


def throttled_status(err: BaseException) -> int | None:
    """The status of a throttled answer (429 or 503), None for any other error."""
    if isinstance(err, HttpResponseError) and err.status in THROTTLE_STATUSES:
        return err.status
    return None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delay-seconds or an HTTP date), or
    None when absent or unreadable.

    Examples:
        >>> parse_retry_after("2")
        2.0
        >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
        10.0
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), _MOST_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    wait = when.timestamp() - (time.time() if now is None else now)
    return min(max(wait, 0.0), _MOST_RETRY_AFTER_S)


def note_retry_after(err: BaseException, header: str | None) -> None:
    """Keeps an answer's ``Retry-After`` on the error raised for it."""
    seconds = parse_retry_after(header)
    if seconds is not None:
        err.streamx_retry_after = seconds  # type: ignore[attr-defined]


def retry_after_of(err: BaseException) -> float | None:
    """The ``Retry-After`` seconds kept on ``err`` by :func:`note_retry_after`."""
    value = getattr(err, "streamx_retry_after", None)
    return float(value) if isinstance(value, (int, float)) else None


def throttle_delay(tries: int, retry_after: float | None) -> float:
    """Seconds to wait after throttled try number ``tries`` (1-based)."""
    if retry_after is not None:
        return retry_after + random.uniform(0, _BASE_S)
    return random.uniform(0, min(_CAP_S, _BASE_S * 2 ** (tries - 1)))


def waiting_out(call: Callable[[], T], url: str) -> T:
    """``call()``, asked again after each throttled answer (a request outside a download's
    budget: a range read).

    Raises:
        ThrottledError: The server throttled ``STREAMX_THROTTLE_RETRIES`` tries.
    """
    tries = 0
    while True:
        try:
            return call()
        except HttpResponseError as err:
            status = throttled_status(err)
            if status is None:
                raise
            tries += 1
            metrics.add_throttled()
            if tries >= throttle_retries():
                raise ThrottledError(url, status, tries) from err
            time.sleep(throttle_delay(tries, retry_after_of(err)))


class AdaptiveLimit:
    """How many requests to one host may run at once: halved on throttling, +1 per answer.

    ``publish`` is called with the whole-number limit whenever it changes (the node's
    slots read it).
    """

    def __init__(self, host: str, ceiling: int, publish: Callable[[int], None] | None = None):
        self.host, self.ceiling = host, max(ceiling, 1)
        self._limit = float(self.ceiling)
        self._running = 0
        self._cut_at = 0.0
        self._changed = threading.Condition()
        self._publish = publish
        self._throttled = 0
        self._logged_at = 0.0

    @property
    def limit(self) -> int:
        return int(self._limit)

    @contextlib.contextmanager
    def hold(self) -> Iterator[float]:
        """Waits for room under the limit; yields the time the request starts."""
        with self._changed:
            while self._running >= int(self._limit):
                self._changed.wait()
            self._running += 1
        try:
            yield time.monotonic()
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify()

    def throttled(self, started: float, status: int) -> None:
        """A request started at ``started`` was throttled: halve the limit, once per round."""
        with self._changed:
            self._throttled += 1
            if started >= self._cut_at:
                self._set(max(1.0, self._limit / 2))
                self._cut_at = time.monotonic()
            now = time.monotonic()
            if now - self._logged_at >= LOG_EVERY_S:
                self._logged_at = now
                logger.warning(
                    "%s is throttling (HTTP %d): %d throttled answers so far; "
                    "at most %d requests to it at once from this process now",
                    self.host,
                    status,
                    self._throttled,
                    int(self._limit),
                )

    def answered(self, started: float) -> None:
        """A request started at ``started`` was answered: raise the limit by one."""
        if self._limit >= self.ceiling or started < self._cut_at:
            return
        with self._changed:
            self._set(min(float(self.ceiling), self._limit + 1))
            self._changed.notify_all()

    def _set(self, limit: float) -> None:
        before, self._limit = int(self._limit), limit
        if int(limit) != before and self._publish is not None:
            self._publish(int(limit))


_LIMITS: dict[str, AdaptiveLimit] = {}
_LIMITS_PID = [os.getpid()]
_LIMITS_LOCK = threading.Lock()


def limit_for(
    host: str, ceiling: int, publish: Callable[[int], None] | None = None
) -> AdaptiveLimit:
    """This process's limit for ``host`` (made on first use, anew after a fork)."""
    with _LIMITS_LOCK:
        if _LIMITS_PID[0] != os.getpid():
            _LIMITS.clear()
            _LIMITS_PID[0] = os.getpid()
        limit = _LIMITS.get(host)
        if limit is None or limit.ceiling != max(ceiling, 1):
            limit = _LIMITS[host] = AdaptiveLimit(host, ceiling, publish)
        return limit

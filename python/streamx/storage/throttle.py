"""Throttling as the object stores document it: S3's ``503 SlowDown`` and GCS's ``429``.

A throttled answer is not a failure. The request waits and is asked again:

* for ``Retry-After`` when the server sends it (seconds or an HTTP date), plus a little
  jitter so that the waiting clients do not return together;
* otherwise for a "full jitter" exponential backoff, a random time between zero and a
  ceiling that doubles with each throttled try. Clients that were throttled together then
  come back spread out, not in lockstep.

Each host also gets a pace on request starts (:mod:`~streamx.storage.request_pace`): stores
throttle the rate of requests, so a throttled answer first spaces the starts out, keeping
the connections. Only when throttling goes on through several cuts of the pace does the
adaptive limit on the requests sent at once fall too (AIMD, as TCP does): each such throttled
answer to a request that started after the last cut halves it, and every answer after it
raises it by one, up to the connection count. The process writes its limit next to the
node's connection slots, so that the other processes of the node send fewer requests too
(:mod:`~streamx.storage.slots`).

A request gives up after ``STREAMX_THROTTLE_RETRIES`` throttled tries (default 10) with
:class:`ThrottledError`, which names the URL, the status and the tries. Throttled answers
are counted in the iteration metrics (``throttled``), and logged at most every
:data:`LOG_EVERY_S` seconds per host.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar
from urllib.parse import urlparse

from streamx.exceptions import HttpResponseError
from streamx.runtime import metrics
from streamx.storage.request_pace import RequestPace, forget_paces, pace_for

__all__ = [
    "LOG_EVERY_S",
    "PACED_ROUND_S",
    "THROTTLE_STATUSES",
    "AdaptiveLimit",
    "PaceTicket",
    "ThrottledError",
    "forget_hosts",
    "headers_wanted",
    "host_calm",
    "limit_for",
    "note_retry_after",
    "parse_retry_after",
    "retry_after_of",
    "slot_once_connected",
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


# Hosts whose throttled answer Rust left unread (a page not announced, or too long to read
# whole): their GETs go through http.client for a while, so that the next throttled answer's
# Retry-After is read.
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


def waiting_out(call: Callable[[], T], url: str, give_up: Callable[[], bool] | None = None) -> T:
    """``call()``, asked again after each throttled answer (a request outside a download's
    budget: a range read). Each try keeps the host's pace, and its answer teaches it.
    ``give_up()``, asked after each throttled answer, ends the tries at once (a request
    that only saves time, when another brings the same bytes).

    Raises:
        ThrottledError: The server throttled ``STREAMX_THROTTLE_RETRIES`` tries, or
            ``give_up()`` said so.
    """
    pace = pace_for(urlparse(url).netloc)
    tries = 0
    while True:
        started = pace.take()
        try:
            result = call()
        except HttpResponseError as err:
            status = throttled_status(err)
            if status is None:
                raise
            pace.throttled(started)
            tries += 1
            metrics.add_throttled()
            if tries >= throttle_retries() or (give_up is not None and give_up()):
                raise ThrottledError(url, status, tries) from err
            time.sleep(throttle_delay(tries, retry_after_of(err)))
        else:
            pace.answered(started)
            return result


class PaceTicket:
    """One request's start slot in its host's pace, taken once (when it is to be sent)."""

    def __init__(self, limit: AdaptiveLimit, urgent: bool) -> None:
        self.limit, self._pace, self._urgent = limit, limit.pace, urgent
        self.started: float | None = None

    def take(self) -> float:
        """Waits for the slot if it is not taken yet; returns the time the request starts."""
        if self.started is None:
            self.started = self._pace.take(self._urgent)
        return self.started


# The ticket of the request this thread runs under AdaptiveLimit.hold_until_connected.
_TICKET = threading.local()


def slot_once_connected() -> float:
    """Takes the start slot of the request this thread runs (if it is not taken yet), now
    that its connection is connected and handshaken; returns the seconds it waited, which
    the request's deadline does not count. Marks the host's limit as one whose requests
    call this (the next ones wait for it)."""
    ticket: PaceTicket | None = getattr(_TICKET, "ticket", None)
    if ticket is None:
        return 0.0
    ticket.limit.connects_first = True
    if ticket.started is not None:
        return 0.0
    began = time.monotonic()
    ticket.take()
    return time.monotonic() - began


class AdaptiveLimit:
    """How many requests to one host may run at once, and when they start: the host's pace
    is cut on throttling; the count is halved when throttling persists, +1 per answer.

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
        self._bandwidth: float | None = None  # bytes a second of one GET
        # Set once a request here took its slot once connected: the host is read over HTTP.
        self.connects_first = False

    @property
    def limit(self) -> int:
        return int(self._limit)

    @property
    def pace(self) -> RequestPace:
        """The host's pace (asked each time: the node's directory may be set later)."""
        return pace_for(self.host)

    @property
    def calm(self) -> bool:
        """Whether the host is neither paced nor limited below the connection count."""
        return self.pace.rate is None and self._limit >= self.ceiling

    def requests_for_files(self, size: int, files: int = 1) -> int | None:
        """How many requests one of ``files`` files of ``size`` bytes fetched at once may be
        split into while the host throttles (None while it is calm), at most the limit on
        requests at once.

        A paced host admits ``rate`` requests a second. ``files x n`` GETs of ``size / n``
        bytes at ``B`` bytes a second each start ``files x n^2 x B / size`` requests a
        second, so ``n = sqrt(rate x size / (files x B))`` parts keep within the pace with
        the most connections busy. ``B`` is measured from this host's answers; until one
        is, a round of parts may take :data:`PACED_ROUND_S` of the pace."""
        rate = self.pace.rate
        if rate is None and self._limit >= self.ceiling:
            return None
        most = self.limit
        if rate is not None:
            files = max(files, 1)
            if self._bandwidth is None:
                most = min(most, int(rate * PACED_ROUND_S / files))
            else:
                most = min(most, int(math.sqrt(rate * size / (files * self._bandwidth))))
        return max(most, 1)

    def observed(self, size: int, seconds: float) -> None:
        """A GET of ``size`` bytes took ``seconds``: the host's bandwidth per connection."""
        if size < _MEASURED_GET_BYTES or seconds <= 0:
            return  # a small GET's time is its round trip, not the bandwidth
        speed = size / seconds
        with self._changed:
            before = self._bandwidth
            self._bandwidth = speed if before is None else 0.8 * before + 0.2 * speed

    @contextlib.contextmanager
    def hold(self, urgent: bool = True) -> Iterator[float]:
        """Waits for room under the limit, then for the pace's slot; yields the time the
        request starts. A request fetched ahead of its reader (not ``urgent``) lets the
        urgent ones take the pace's slots first (:meth:`RequestPace.take`)."""
        with self._room():
            yield self.pace.take(urgent)

    @contextlib.contextmanager
    def hold_until_connected(
        self, urgent: bool = True, connects_first: bool = False
    ) -> Iterator[PaceTicket]:
        """As :meth:`hold`, but where this host's requests are HTTP ones, the pace's slot is
        taken once the request's connection is ready (:func:`slot_once_connected`): a new
        connection's set-up (tens of ms under load) would otherwise squeeze the spacing
        the pace gave before the store sees it, and a store without burst refuses one.
        ``connects_first`` says the request is one of those (else the limit learns it from
        the host's first such request); others (fsspec's) take the slot at once."""
        with self._room():
            ticket = PaceTicket(self, urgent)
            if not (connects_first or self.connects_first):
                ticket.take()
            _TICKET.ticket = ticket
            try:
                yield ticket
            finally:
                _TICKET.ticket = None

    @contextlib.contextmanager
    def _room(self) -> Iterator[None]:
        with self._changed:
            while self._running >= int(self._limit):
                self._changed.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify()

    def throttled(self, started: float, status: int) -> None:
        """A request started at ``started`` was throttled: cut the pace, once per round, and
        halve the limit when the pace alone has not stopped the throttling."""
        cut = self.pace.throttled(started)
        with self._changed:
            self._throttled += 1
            if cut and started >= self._cut_at and self.pace.persistent:
                self._set(max(1.0, self._limit / 2))
                self._cut_at = time.monotonic()
            now = time.monotonic()
            if now - self._logged_at >= LOG_EVERY_S:
                self._logged_at = now
                rate = self.pace.rate
                logger.warning(
                    "%s is throttling (HTTP %d): %d throttled answers so far; this process "
                    "now starts %s and runs at most %d at once",
                    self.host,
                    status,
                    self._throttled,
                    "requests as they come" if rate is None else f"{rate:.1f} requests/s",
                    int(self._limit),
                )

    def answered(self, started: float) -> None:
        """A request started at ``started`` was answered: raise the pace and the limit."""
        self.pace.answered(started)
        if self._limit >= self.ceiling or started < self._cut_at:
            return
        with self._changed:
            self._set(min(float(self.ceiling), self._limit + 1))
            self._changed.notify_all()

    def _set(self, limit: float) -> None:
        before, self._limit = int(self._limit), limit
        if int(limit) != before and self._publish is not None:
            self._publish(int(limit))


# The share of a second of a paced host's request starts that one round of parts may take.
PACED_ROUND_S = 0.25
# GETs at least this large tell the bandwidth of a connection.
_MEASURED_GET_BYTES = 1 << 20

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


def forget_hosts() -> None:
    """Forgets every host's limit, pace and throttled past (each host starts calm again)."""
    with _LIMITS_LOCK:
        _LIMITS.clear()
    _WANT_HEADERS.clear()
    forget_paces()


def host_calm(url: str) -> bool:
    """Whether ``url``'s host is neither paced nor limited in this process: requests that
    only save time (range reads ahead of a download) are worth their cost to it."""
    host = urlparse(url).netloc
    with _LIMITS_LOCK:
        limit = _LIMITS.get(host) if _LIMITS_PID[0] == os.getpid() else None
    return limit.calm if limit is not None else pace_for(host).rate is None

"""A per-host pace on request starts, learned from the host's throttled answers.

Object stores throttle on the *rate* of requests (S3 per prefix, GCS per object, nginx's
``limit_req``), not on how many run at once. Cutting concurrency in answer to a 503 leaves
connections idle while the store would still carry their bytes, so the first answer to
throttling is to space request starts instead, keeping the connections:

* unthrottled, a host is not paced at all (nothing on the fast path but a lock);
* a throttled answer to a request started after the last cut, and at least
  :data:`CUT_GAP_S` after it, sets the pace to half the rate this process started requests
  at over the last second, at least :data:`FIRST_PACE` a second (a process that has sent a
  few requests has shown no rate yet), its first start one interval after the cut (a store
  without a burst, as nginx's ``limit_req``, refuses a request that comes too soon after
  the one it admitted from the refused one's clump); a later cut halves the pace, down to
  :data:`MIN_RATE` a second;
* an answered request that had to wait for its slot raises the pace by
  :data:`RAISE_FACTOR` (plus :data:`RAISE_STEP`), so the pace probes back up to the store's
  rate, up to :data:`LIFT_FACTOR` times the rate seen over the second before the first cut.
  The pace lifts there once no answer has been throttled for :data:`LIFT_QUIET_S` (sooner,
  the parts it keeps large would come back small all at once, a burst the store refuses).
  A pace that no request waits for says nothing about what the store admits, so it is
  instead doubled after each :data:`QUIET_S` seconds without a throttled answer, to the
  same cap (a pace kept for ever would keep the host's parts large).

:meth:`RequestPace.take` hands out start slots in order, evenly spaced, so threads never
start together. Throttling that goes on through :data:`PERSISTENT_CUTS` cuts within
:data:`PERSISTENT_WITHIN_S` is :attr:`RequestPace.persistent`: the concurrency limit
(:mod:`~streamx.storage.throttle`) then falls too, for stores that throttle on load.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time

__all__ = [
    "CUT_GAP_S",
    "FIRST_PACE",
    "LIFT_FACTOR",
    "LIFT_QUIET_S",
    "MIN_RATE",
    "PERSISTENT_CUTS",
    "PERSISTENT_WITHIN_S",
    "QUIET_S",
    "RAISE_FACTOR",
    "RAISE_STEP",
    "RequestPace",
    "any_paced",
    "forget_paces",
    "pace_for",
]

MIN_RATE = 1.0
FIRST_PACE = 10.0
RAISE_FACTOR = 1.1
RAISE_STEP = 0.25
PERSISTENT_CUTS = 2
PERSISTENT_WITHIN_S = 5.0
QUIET_S = 3.0
CUT_GAP_S = 1.0
LIFT_FACTOR = 4.0
LIFT_QUIET_S = 30.0
logger = logging.getLogger(__name__)

_WINDOW_S = 1.0
_MOST_WAITED = 4096


class RequestPace:
    """Spacing of one host's request starts in this process (see the module's text)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._rate: float | None = None  # requests a second; None while unpaced
        self._lifts_at = 0.0  # the rate seen over the second before the first cut
        self._next = 0.0
        self._cut_at = 0.0
        self._raised_at = 0.0  # the last cut or quiet doubling
        self._starts: collections.deque[float] = collections.deque()
        self._cuts: collections.deque[float] = collections.deque()
        self._waited: set[float] = set()  # start times of requests that waited for a slot

    @property
    def rate(self) -> float | None:
        """Requests a second this process may start to the host, or None while unpaced."""
        if self._rate is None:
            return None
        with self._lock:
            self._quiet_raise(time.monotonic())
            return self._rate

    @property
    def persistent(self) -> bool:
        """Whether throttling went on through several cuts of the pace lately."""
        with self._lock:
            self._forget_cuts(time.monotonic())
            return len(self._cuts) >= PERSISTENT_CUTS

    def take(self) -> float:
        """Waits for this request's start slot; returns the time it starts."""
        with self._lock:
            now = time.monotonic()
            self._quiet_raise(now)
            if self._rate is None:
                self._note_start(now)
                return now
            start = max(now, self._next)
            self._next = start + 1.0 / self._rate
            self._note_start(start)
            if start > now:
                if len(self._waited) > _MOST_WAITED:  # answers lost to permanent errors
                    self._waited.clear()
                self._waited.add(start)
        if start > now:
            time.sleep(start - now)
        return start

    def throttled(self, started: float) -> bool:
        """A request started at ``started`` was throttled: cut the pace, once per round.
        True when this answer cut it."""
        with self._lock:
            self._waited.discard(started)
            now = time.monotonic()
            if started < self._cut_at or now - self._cut_at < CUT_GAP_S:
                # Sent before the last cut, which already answered it; or too soon after it
                # for the store's answer to the new pace to be known.
                return False
            if self._rate is None:
                sustained = self._rate_seen(now)
                self._lifts_at = max(sustained, FIRST_PACE)
                self._rate = max(FIRST_PACE, sustained / 2)
            else:
                self._rate = max(MIN_RATE, self._rate / 2)
            # The next start is one interval from now: the store has just admitted one of
            # the requests that came with the refused one (its header read, a part), and a
            # store without a burst (nginx's limit_req) refuses anything sooner, which then
            # waits a whole Retry-After.
            self._next = max(self._next, now + 1.0 / self._rate)
            self._cut_at = self._raised_at = now
            self._cuts.append(now)
            logger.debug(
                "%s: paced at %.1f requests/s (pid %d)", self.host, self._rate, os.getpid()
            )
            self._forget_cuts(now)
            return True

    def answered(self, started: float) -> None:
        """A request started at ``started`` was answered: raise the pace if it held it."""
        with self._lock:
            waited = started in self._waited
            self._waited.discard(started)
            if self._rate is None or not waited or started < self._cut_at:
                return
            self._rate = self._rate * RAISE_FACTOR + RAISE_STEP
            self._lift_if_past()

    def _quiet_raise(self, now: float) -> None:
        while self._rate is not None and now - self._raised_at >= QUIET_S:
            self._rate *= 2
            self._raised_at += QUIET_S
            self._lift_if_past(now)

    def _lift_if_past(self, now: float | None = None) -> None:
        """Caps the pace at :data:`LIFT_FACTOR` times the rate seen before the first cut,
        and lifts it there once the host has been quiet for :data:`LIFT_QUIET_S`."""
        if self._rate is None or self._rate < LIFT_FACTOR * self._lifts_at:
            return
        self._rate = LIFT_FACTOR * self._lifts_at
        now = time.monotonic() if now is None else now
        if now - self._cut_at >= LIFT_QUIET_S:
            logger.debug("%s: pace lifted at %.1f requests/s", self.host, self._rate)
            self._rate = None
            self._waited.clear()

    def _note_start(self, when: float) -> None:
        self._starts.append(when)
        while self._starts and self._starts[0] < when - _WINDOW_S:
            self._starts.popleft()

    def _rate_seen(self, now: float) -> float:
        """Requests started over the last second."""
        while self._starts and self._starts[0] < now - _WINDOW_S:
            self._starts.popleft()
        return float(len(self._starts)) / _WINDOW_S

    def _forget_cuts(self, now: float) -> None:
        while self._cuts and self._cuts[0] < now - PERSISTENT_WITHIN_S:
            self._cuts.popleft()


_PACES: dict[str, RequestPace] = {}
_PACES_PID = [os.getpid()]
_PACES_LOCK = threading.Lock()


def any_paced() -> bool:
    """Whether this process paces some host now (one has throttled it lately)."""
    with _PACES_LOCK:
        paces = list(_PACES.values()) if _PACES_PID[0] == os.getpid() else []
    return any(pace.rate is not None for pace in paces)


def forget_paces() -> None:
    """Forgets every host's pace (each host starts unpaced again)."""
    with _PACES_LOCK:
        _PACES.clear()


def pace_for(host: str) -> RequestPace:
    """This process's pace for ``host`` (made on first use, anew after a fork)."""
    with _PACES_LOCK:
        if _PACES_PID[0] != os.getpid():
            _PACES.clear()
            _PACES_PID[0] = os.getpid()
        pace = _PACES.get(host)
        if pace is None:
            pace = _PACES[host] = RequestPace(host)
        return pace

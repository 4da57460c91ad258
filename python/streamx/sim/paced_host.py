"""The downloader's answer to a throttling host, on the simulated clock.

:class:`PacedHost` follows :mod:`streamx.storage.request_pace` (a pace on request starts,
cut on a throttled answer, raised by the answers that waited for it and by quiet seconds in
which no request waited)
and :class:`streamx.storage.throttle.AdaptiveLimit` (the limit on requests at once, halved
only when the pace was cut twice within a few seconds; the part count while throttled), with
the same constants, so :mod:`~streamx.sim.request_cap` plays the rules the downloader runs.

One pace stands for the node: the store's limit is the node's, and ``processes`` processes
each keep a pace of their own, so the pace's floors are theirs times ``processes``.
"""

from __future__ import annotations

import math
from collections import deque

from streamx.storage.request_pace import (
    CUT_GAP_S,
    FIRST_PACE,
    LIFT_FACTOR,
    LIFT_QUIET_S,
    MIN_RATE,
    PERSISTENT_CUTS,
    PERSISTENT_WITHIN_S,
    QUIET_S,
    RAISE_FACTOR,
    RAISE_STEP,
)
from streamx.storage.throttle import PACED_ROUND_S

__all__ = ["PacedHost"]

_WINDOW_S = 1.0
# GETs at least this large tell a connection's bandwidth (streamx.storage.throttle).
_MEASURED_GET_BYTES = 1 << 20


class PacedHost:
    """A host's pace and limit on requests at once, in simulated seconds."""

    def __init__(self, connections: int, processes: int = 1) -> None:
        self.ceiling = max(connections, 1)
        self.limit = float(self.ceiling)
        self._first, self._least = FIRST_PACE * processes, MIN_RATE * processes
        self.rate: float | None = None  # requests a second; None while unpaced
        self.bandwidth: float | None = None  # bytes a second of one GET, once measured
        self._lifts_at = 0.0
        self._next = 0.0
        self._cut_at = self._raised_at = self._limit_cut_at = -math.inf
        self._waited_at = -math.inf  # the last start that waited for its slot
        self._starts: deque[float] = deque()
        self._cuts: deque[float] = deque()

    def start_paced(self, bandwidth: float) -> None:
        """Starts as a process does once its first throttled answer set the pace (at its
        floor) and a GET measured a connection's ``bandwidth``."""
        self.rate = self._lifts_at = self._first
        self._cut_at = self._raised_at = 0.0
        self.bandwidth = bandwidth

    def calm(self, now: float) -> bool:
        """Neither paced nor limited: range reads are made, files split as when unthrottled."""
        return self.pace(now) is None and self.limit >= self.ceiling

    def pace(self, now: float) -> float | None:
        """The pace at ``now``: doubled after each :data:`QUIET_S` in which no request
        waited for its slot, up to its cap."""
        while self.rate is not None and now - self._raised_at >= QUIET_S:
            self._raised_at += QUIET_S
            if self._waited_at >= self._raised_at - QUIET_S:
                continue
            self.rate *= 2
            self._lift_if_past(now)
        return self.rate

    def free_at(self, now: float) -> float:
        """When a request fetched ahead of its reader, asking at ``now``, may take its
        slot: the next one, once it is due (it takes only a slot free when it asks, and
        so at the pace of that moment, which the answers meanwhile may have raised)."""
        rate = self.pace(now)
        return now if rate is None else max(now, self._next)

    def take(self, now: float, waited: bool = False) -> float:
        """The start slot of a request asking at ``now``: evenly spaced while paced;
        ``waited``: it asked before and waited for :meth:`free_at`."""
        rate = self.pace(now)
        start = now if rate is None else max(now, self._next)
        if rate is not None:
            self._next = start + 1.0 / rate
            if start > now or waited:
                self._waited_at = start
        self._starts.append(start)
        while self._starts and self._starts[0] < start - _WINDOW_S:
            self._starts.popleft()
        return start

    def throttled(self, started: float, now: float) -> None:
        """A request started at ``started`` was refused at ``now``: cut the pace once per
        round, and halve the limit when the cuts come close together."""
        if started < self._cut_at or now - self._cut_at < CUT_GAP_S:
            return
        if self.rate is None:
            seen = sum(1 for s in self._starts if s >= now - _WINDOW_S) / _WINDOW_S
            self._lifts_at = max(seen, self._first)
            self.rate = max(self._first, seen / 2)
        else:
            self.rate = max(self._least, self.rate / 2)
        self._next = max(self._next, now + 1.0 / self.rate)  # as the downloader: one interval on
        self._cut_at = self._raised_at = now
        self._cuts.append(now)
        while self._cuts and self._cuts[0] < now - PERSISTENT_WITHIN_S:
            self._cuts.popleft()
        if started >= self._limit_cut_at and len(self._cuts) >= PERSISTENT_CUTS:
            self.limit = max(1.0, self.limit / 2)
            self._limit_cut_at = now

    def answered(self, started: float, waited: bool, size: float, seconds: float) -> None:
        """A request started at ``started`` brought ``size`` bytes in ``seconds``."""
        if size >= _MEASURED_GET_BYTES and seconds > 0:
            speed = size / seconds
            self.bandwidth = speed if self.bandwidth is None else 0.8 * self.bandwidth + 0.2 * speed
        if self.rate is not None and waited and started >= self._cut_at:
            self.rate = self.rate * RAISE_FACTOR + RAISE_STEP
            self._lift_if_past(started)
        if self.limit < self.ceiling and started >= self._limit_cut_at:
            self.limit = min(float(self.ceiling), self.limit + 1)

    def requests_for_files(self, size: float, files: int) -> int | None:
        """Parts one of ``files`` files of ``size`` bytes may take while the host throttles
        (None while calm): ``sqrt(rate x size / (files x bandwidth))``, at most the limit."""
        if self.rate is None and self.limit >= self.ceiling:
            return None
        most = int(self.limit)
        if self.rate is not None:
            files = max(files, 1)
            if self.bandwidth is None:
                most = min(most, int(self.rate * PACED_ROUND_S / files))
            else:
                most = min(most, int(math.sqrt(self.rate * size / (files * self.bandwidth))))
        return max(most, 1)

    def _lift_if_past(self, now: float) -> None:
        if self.rate is None or self.rate < LIFT_FACTOR * self._lifts_at:
            return
        self.rate = LIFT_FACTOR * self._lifts_at
        if now - self._cut_at >= LIFT_QUIET_S:
            self.rate = None

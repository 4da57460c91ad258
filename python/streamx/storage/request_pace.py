"""A per-host pace on request starts, learned from the host's throttled answers, and
shared by the processes of a node.

Object stores throttle on the *rate* of requests (S3 per prefix, GCS per object, nginx's
``limit_req``), not on how many run at once. Cutting concurrency in answer to a 503 leaves
connections idle while the store would still carry their bytes, so the first answer to
throttling is to space request starts instead, keeping the connections:

* unthrottled, a host is not paced at all (nothing on the fast path but a lock, and for a
  node's pace one ``lstat`` of its file, which the first throttled answer makes);
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
  instead doubled after each :data:`QUIET_S` seconds in which no request waited for its
  slot, to the same cap (a pace kept for ever would keep the host's parts large).

:meth:`RequestPace.take` hands out start slots in order, evenly spaced, so threads never
start together; a request a reader waits for takes the next one before any request fetched
ahead of its reader (urgent first). Once a cache's connection slots are made
(:func:`share_paces`), the pace is the node's: its processes keep it in a file beside the
slots (:mod:`~.pace_file`) and take their slots from that one clock, so two DataLoader
workers never start within one interval of each other, and one's throttled answer cuts the
pace of all. Throttling that goes on through :data:`PERSISTENT_CUTS` cuts within
:data:`PERSISTENT_WITHIN_S` is :attr:`RequestPace.persistent`: the concurrency limit
(:mod:`~streamx.storage.throttle`) then falls too, for stores that throttle on load.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator

from streamx.storage.pace_file import PaceFile, PaceState, pace_path

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
    "share_paces",
    "when_paced",
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
    """Spacing of one host's request starts (see the module's text).

    Args:
        host: The host paced.
        directory: Where the node's processes share the pace
            (:mod:`~streamx.storage.pace_file`); None paces this process alone.
    """

    def __init__(self, host: str, directory: str | None = None) -> None:
        self.host = host
        self.directory = directory
        self._lock = threading.Lock()
        self._local = PaceState()
        self._file = None if directory is None else PaceFile(pace_path(directory, host))
        self._waited: set[float] = set()  # start times of requests that waited for a slot
        self._ahead_lock = threading.Lock()  # one look-ahead request asks for a slot at once
        self._seen_paced = False

    @contextlib.contextmanager
    def _state(self, shared: bool = False) -> Iterator[PaceState]:
        """The pace's state, this process's threads and the node's processes locked out.

        Until some process of the node is throttled by the host, its file does not exist
        and each process keeps its own starts (no file lock on a calm host's requests);
        ``shared``: a throttled answer, which makes the file and carries these starts in."""
        with self._lock:
            if self._file is None or not (shared or self._file.exists()):
                yield self._local
                return
            with self._file.held() as state:
                if state is None:  # the file cannot be used: pace alone
                    yield self._local
                    return
                if self._local.starts:  # this process's calm starts count for the node's
                    state.starts = collections.deque(sorted([*state.starts, *self._local.starts]))
                    self._local.starts.clear()
                if state.rate is not None:
                    state.rate = max(state.rate, MIN_RATE)
                yield state

    def adopt(self, before: RequestPace) -> None:
        """Carries on what ``before`` learned (this process paced the host before it knew
        the node's directory) unless this pace is paced already."""
        with before._state() as state:
            learned = copy.deepcopy(state)
            waited = set(before._waited)
        if learned.rate is None:
            return
        with self._state(shared=True) as state:
            if state.rate is None:
                vars(state).update(vars(learned))
                self._waited |= waited

    @property
    def rate(self) -> float | None:
        """Requests a second this host's starts are paced at, or None while unpaced."""
        calm = self._file is None or not self._file.exists()
        if calm and self._local.rate is None:
            return None  # the fast path: no lock
        with self._state() as state:
            self._quiet_raise(state, time.monotonic())
            rate = state.rate
        self._notice(rate)
        return rate

    @property
    def persistent(self) -> bool:
        """Whether throttling went on through several cuts of the pace lately."""
        with self._state() as state:
            self._forget_cuts(state, time.monotonic())
            return len(state.cuts) >= PERSISTENT_CUTS

    def take(self, urgent: bool = True) -> float:
        """Waits for this request's start slot; returns the time it starts.

        A request a reader waits for (``urgent``) takes the next free slot, however far
        ahead. One fetched ahead of its reader takes only a slot that is free when it asks:
        it never holds one ahead of an urgent request that comes later, which then waits
        at most one interval (the processes of a node each let one such request ask at a
        time)."""
        if urgent:
            return self._take_slot(urgent=True)
        with self._ahead_lock:
            return self._take_slot(urgent=False)

    def _take_slot(self, urgent: bool) -> float:
        waited = False
        while True:
            with self._state() as state:
                now = time.monotonic()
                self._quiet_raise(state, now)
                rate = state.rate
                if rate is None or urgent or state.next <= now:
                    start = now if rate is None else max(now, state.next)
                    if rate is not None:
                        state.next = start + 1.0 / rate
                    self._note_start(state, start)
                    if rate is not None and (waited or start > now):
                        state.waited_at = start
                        self._note_waited(start)
                    break
                wait = state.next - now
            self._notice(rate)
            time.sleep(wait)  # a look-ahead request: ask again once the next slot is due
            waited = True
        self._notice(rate)
        if start > now:
            time.sleep(start - now)
        return start

    def _note_waited(self, start: float) -> None:
        if len(self._waited) > _MOST_WAITED:  # answers lost to permanent errors
            self._waited.clear()
        self._waited.add(start)

    def _notice(self, rate: float | None) -> None:
        """Tells :func:`when_paced`'s listeners when this process sees the host paced (again)."""
        paced, self._seen_paced = self._seen_paced, rate is not None
        if rate is not None and not paced:
            _paced_now()

    def throttled(self, started: float) -> bool:
        """A request started at ``started`` was throttled: cut the pace, once per round.
        True when this answer cut it."""
        with self._state(shared=True) as state:
            self._waited.discard(started)
            now = time.monotonic()
            if started < state.cut_at or now - state.cut_at < CUT_GAP_S:
                # Sent before the last cut, which already answered it; or too soon after it
                # for the store's answer to the new pace to be known.
                return False
            if state.rate is None:
                sustained = self._rate_seen(state, now)
                state.lifts_at = max(sustained, FIRST_PACE)
                state.rate = max(FIRST_PACE, sustained / 2)
            else:
                state.rate = max(MIN_RATE, state.rate / 2)
            # The next start is one interval from now: the store has just admitted one of
            # the requests that came with the refused one (its header read, a part), and a
            # store without a burst (nginx's limit_req) refuses anything sooner, which then
            # waits a whole Retry-After.
            state.next = max(state.next, now + 1.0 / state.rate)
            state.cut_at = state.raised_at = now
            state.cuts.append(now)
            logger.debug(
                "%s: paced at %.1f requests/s (pid %d)", self.host, state.rate, os.getpid()
            )
            self._forget_cuts(state, now)
        self._notice(state.rate)
        return True

    def answered(self, started: float) -> None:
        """A request started at ``started`` was answered: raise the pace if it held it."""
        with self._lock:
            waited = started in self._waited
            self._waited.discard(started)
        if not waited:
            return  # never waited for a slot: says nothing of the pace (no lock needed)
        with self._state() as state:
            if state.rate is None or started < state.cut_at:
                return
            state.rate = state.rate * RAISE_FACTOR + RAISE_STEP
            self._lift_if_past(state)

    def _quiet_raise(self, state: PaceState, now: float) -> None:
        """Doubles a pace that no request waited for over each :data:`QUIET_S` seconds."""
        while state.rate is not None and now - state.raised_at >= QUIET_S:
            state.raised_at += QUIET_S
            if state.waited_at >= state.raised_at - QUIET_S:
                continue  # requests waited for it: the answers' raises probe instead
            state.rate *= 2
            self._lift_if_past(state, now)

    def _lift_if_past(self, state: PaceState, now: float | None = None) -> None:
        """Caps the pace at :data:`LIFT_FACTOR` times the rate seen before the first cut,
        and lifts it there once the host has been quiet for :data:`LIFT_QUIET_S`."""
        if state.rate is None or state.rate < LIFT_FACTOR * state.lifts_at:
            return
        state.rate = LIFT_FACTOR * state.lifts_at
        now = time.monotonic() if now is None else now
        if now - state.cut_at >= LIFT_QUIET_S:
            logger.debug("%s: pace lifted at %.1f requests/s", self.host, state.rate)
            state.rate = None
            self._waited.clear()

    @staticmethod
    def _note_start(state: PaceState, when: float) -> None:
        state.starts.append(when)
        while state.starts and state.starts[0] < when - _WINDOW_S:
            state.starts.popleft()

    @staticmethod
    def _rate_seen(state: PaceState, now: float) -> float:
        """Requests started over the last second."""
        while state.starts and state.starts[0] < now - _WINDOW_S:
            state.starts.popleft()
        return float(len(state.starts)) / _WINDOW_S

    @staticmethod
    def _forget_cuts(state: PaceState, now: float) -> None:
        while state.cuts and state.cuts[0] < now - PERSISTENT_WITHIN_S:
            state.cuts.popleft()


_PACES: dict[str, RequestPace] = {}
_PACES_PID = [os.getpid()]
_PACES_LOCK = threading.Lock()
# Where this process shares its paces with the node's others (kept across a fork: the
# child is on the same node).
_NODE_DIRECTORY: list[str | None] = [None]


# Called once, each, when this process first sees a host paced (then forgotten).
_LISTENERS: list[Callable[[], None]] = []
_LISTENERS_PID = [os.getpid()]


def when_paced(listener: Callable[[], None]) -> None:
    """Calls ``listener()`` once some host is paced in this process: now if one is, else
    from the thread that first sees one paced (a throttled answer, or the node's pace
    read). What waits for a pace to change its plan (a look-ahead held back while the
    shards read now download) uses it."""
    if any_paced():
        listener()
        return
    with _PACES_LOCK:
        if _LISTENERS_PID[0] != os.getpid():  # forked: the parent's listeners are not ours
            _LISTENERS.clear()
            _LISTENERS_PID[0] = os.getpid()
        _LISTENERS.append(listener)
    if any_paced():  # paced meanwhile, by a thread that found no listener yet
        _paced_now()


def _paced_now() -> None:
    with _PACES_LOCK:
        mine = _LISTENERS_PID[0] == os.getpid()
        listeners = list(_LISTENERS) if mine else []
        _LISTENERS.clear()
    for listener in listeners:
        try:
            listener()
        except Exception:  # a listener's failure is not the request's
            logger.exception("a listener for a paced host failed")


def share_paces(directory: str | None) -> None:
    """Paces this process's hosts from files in ``directory`` (the node's connection
    slots' directory), shared with every process that does the same; None: alone."""
    with _PACES_LOCK:
        _NODE_DIRECTORY[0] = directory


def any_paced() -> bool:
    """Whether some host is paced now (one has throttled this process, or the node)."""
    with _PACES_LOCK:
        paces = list(_PACES.values()) if _PACES_PID[0] == os.getpid() else []
    return any(pace.rate is not None for pace in paces)


def forget_paces() -> None:
    """Forgets every host's pace (each host starts unpaced again) and where the node's
    paces are shared (the next connection slots made say it again)."""
    with _PACES_LOCK:
        _PACES.clear()
        _LISTENERS.clear()
        _NODE_DIRECTORY[0] = None


def pace_for(host: str) -> RequestPace:
    """The pace for ``host`` (made on first use, anew after a fork or when the node's
    directory changed)."""
    with _PACES_LOCK:
        if _PACES_PID[0] != os.getpid():
            _PACES.clear()
            _PACES_PID[0] = os.getpid()
        pace = _PACES.get(host)
        if pace is None or pace.directory != _NODE_DIRECTORY[0]:
            before, pace = pace, RequestPace(host, _NODE_DIRECTORY[0])
            if before is not None:
                pace.adopt(before)
            _PACES[host] = pace
        return pace

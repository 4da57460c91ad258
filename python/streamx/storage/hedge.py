"""Hedged GETs: a part far slower than its peers is asked for again, and the first answer wins.

One slow connection can hold a whole shard, and so a whole batch. Once a few of a file's
parts have arrived, a part still running after ``max(HEDGE_AFTER_S, HEDGE_FACTOR x the
median part time)`` is asked for again on another connection, into a scratch file of its
own. The first complete answer wins:

* the original first: the hedge is cancelled (its socket shut down) and its scratch file
  removed;
* the hedge first: the original is cancelled, and once its thread has stopped writing, the
  hedge's bytes are copied into place. The loser never writes over the winner.

Hedging is bounded so that it never doubles the traffic: at most :data:`MAX_AT_ONCE` hedges
run at once per file, a process hedges at most one part in ten it fetches (plus one), and
nothing is hedged while the host throttles. ``STREAMX_HEDGE=0`` turns it off.
"""

from __future__ import annotations

import os
import statistics
import threading

from streamx.storage.cancel import Scope
from streamx.storage.file_copy import copy_between

__all__ = [
    "HEDGE_AFTER_S",
    "HEDGE_FACTOR",
    "MAX_AT_ONCE",
    "Part",
    "allow_hedge",
    "copy_range",
    "count_parts",
    "hedging_enabled",
    "scratch_path",
    "straggler_after",
]

HEDGE_FACTOR = 3.0
HEDGE_AFTER_S = 1.0
MAX_AT_ONCE = 2
MAX_FRACTION = 0.1
MIN_DONE = 3  # parts arrived before their median is trusted

_LOCK = threading.Lock()
_COUNTS = {"parts": 0, "hedged": 0, "pid": os.getpid()}


class Part:
    """One part of a file and the race for it (guarded by its job's lock)."""

    def __init__(self, start: int, length: int) -> None:
        self.start, self.length = start, length
        self.began = 0.0  # when the running original request started (monotonic)
        self.in_fetch = False
        self.winner: str | None = None  # "original" or "hedge"
        self.complete = False  # the winner's bytes are in place
        self.original = Scope()
        self.hedge: Scope | None = None
        self.hedging = False
        self.scratch_fd: int | None = None
        self.scratch: str | None = None


def hedging_enabled() -> bool:
    """Whether hedged GETs are on (``STREAMX_HEDGE``, on unless ``0``).

    Raises:
        ValueError: If the variable is set to something other than ``0`` or ``1``.
    """
    raw = os.environ.get("STREAMX_HEDGE", "1") or "1"
    if raw not in ("0", "1"):
        raise ValueError(f"STREAMX_HEDGE must be 0 or 1, got {raw!r}")
    return raw == "1"


def straggler_after(durations: list[float]) -> float | None:
    """Seconds after which a running part is a straggler; None before enough parts arrived."""
    if len(durations) < MIN_DONE:
        return None
    return max(HEDGE_AFTER_S, HEDGE_FACTOR * statistics.median(durations))


def _reset_after_fork() -> None:
    if _COUNTS["pid"] != os.getpid():
        _COUNTS.update(parts=0, hedged=0, pid=os.getpid())


def count_parts(parts: int) -> None:
    """Counts parts this process fetches (the base of the hedging bound)."""
    with _LOCK:
        _reset_after_fork()
        _COUNTS["parts"] += parts


def allow_hedge() -> bool:
    """Takes one hedge from this process's allowance, if any is left."""
    with _LOCK:
        _reset_after_fork()
        if _COUNTS["hedged"] >= MAX_FRACTION * _COUNTS["parts"] + 1:
            return False
        _COUNTS["hedged"] += 1
        return True


def scratch_path(tmp: str, start: int) -> str:
    """The hedge's scratch file for the part at ``start`` of the file being written at
    ``tmp`` (named like a download's temporary file, so a crash's leftover is collected)."""
    head, tail = os.path.split(tmp)
    stem = tail[:-4] if tail.endswith(".tmp") else tail
    return os.path.join(head, f"{stem}.h{start}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def copy_range(src: int, dst: int, start: int, length: int) -> None:
    """Copies bytes ``[start, start + length)`` of ``src`` to the same offsets of ``dst``."""
    copy_between(src, dst, length, start, start, "the hedge's scratch file")

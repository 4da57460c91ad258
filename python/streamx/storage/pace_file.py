"""A host's request pace kept in a file, so that every process of a node paces from it.

Each DataLoader worker and rank is its own process. With a pace each, two processes at a
store's rate both start a request inside the interval the store allows, and a store that
throttles by client address (nginx's ``limit_req``, a prefix's budget in S3) refuses one.
Kept in ``<connections>/pace-<digest of the host>``, beside the connection slots
(:mod:`~streamx.storage.slots`), the pace is one clock: the node's processes take their
start slots from it in turn, and one process's throttled answer cuts it for all.

The file is read and rewritten whole under an exclusive ``flock``, held for those few
system calls only, never across a sleep. The kernel drops the lock of a process that dies,
so a process killed while holding it blocks nobody; a record it left half-written (or
garbage, or times from a wall clock stepped back) reads as a fresh, unpaced state. A slot
that a dead process reserved and never used delays the others by one interval, no more.

The directory is a cache's own (checked by :mod:`~streamx.cache.cache_dir`) or the user's
private state root, as the slots'. The file is opened with ``O_NOFOLLOW`` and used only
when it is a regular file of this user: one planted by another local user (or a symlink)
is never read or written; the process then paces alone, as before.

Times are stored as wall-clock seconds (every process of the node reads the same clock,
and it goes on across a reboot, when the cache may outlive the monotonic clock's origin)
and handed to :class:`~streamx.storage.request_pace.RequestPace` on its monotonic clock.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import hashlib
import logging
import math
import os
import stat
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["MOST_STARTS", "PaceFile", "PaceState", "pace_path"]

logger = logging.getLogger(__name__)

# Starts kept to measure the rate seen over the last second (more than any store admits
# unthrottled from one node's processes is not needed to halve it).
MOST_STARTS = 256
_MOST_CUTS = 8
_MAGIC = b"SXP2"
_HEAD = struct.Struct("<4s6dII")
_SIZE = _HEAD.size + 8 * (_MOST_CUTS + MOST_STARTS)
# A stored time further ahead than this is not a reservation but a clock stepped back.
_MOST_AHEAD_S = 300.0


@dataclass
class PaceState:
    """What the processes of a node share about one host's pace (monotonic times)."""

    rate: float | None = None  # requests a second; None while unpaced
    lifts_at: float = 0.0  # the rate seen over the second before the first cut
    next: float = 0.0  # the next free start slot
    cut_at: float = 0.0
    raised_at: float = 0.0  # the last cut or quiet doubling
    waited_at: float = 0.0  # the last start that waited for its slot
    cuts: collections.deque[float] = field(default_factory=collections.deque)
    starts: collections.deque[float] = field(default_factory=collections.deque)


def pace_path(directory: str, host: str) -> str:
    """The file of ``host``'s pace in ``directory`` (the host hashed: any name is safe)."""
    digest = hashlib.blake2s(host.encode("utf-8"), digest_size=8).hexdigest()
    return os.path.join(directory, f"pace-{digest}")


class PaceFile:
    """One host's :class:`PaceState` in a file shared by the node's processes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._exists = False

    def exists(self) -> bool:
        """Whether the file is there: some process of the node was throttled by the host
        (it is made by the first, and kept; one ``lstat`` until then)."""
        if not self._exists:
            self._exists = os.path.lexists(self.path)
        return self._exists

    @contextlib.contextmanager
    def held(self) -> Iterator[PaceState | None]:
        """The state, locked against the node's other processes, written back after the
        block. None (nothing locked) when the file cannot be used: the caller paces alone.
        Threads of one process must hold their own lock around this too."""
        fd = self._open()
        if fd is None:
            yield None
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            offset = time.time() - time.monotonic()
            state = _decode(os.pread(fd, _SIZE, 0), offset)
            yield state
            try:
                os.pwrite(fd, _encode(state, offset), 0)
            except OSError as err:  # a full disk: the node's pace misses this change
                logger.debug("%s: not written (%s)", self.path, err)
        finally:
            os.close(fd)  # closing the open file releases the lock

    def _open(self) -> int | None:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as err:
            logger.debug("%s: not shared (%s); pacing this process alone", self.path, err)
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            os.close(fd)
            logger.warning(
                "%s is not a regular file of this user: not reading it; this process paces "
                "its requests alone",
                self.path,
            )
            return None
        return fd


def _encode(state: PaceState, offset: float) -> bytes:
    cuts = list(state.cuts)[-_MOST_CUTS:]
    starts = list(state.starts)[-MOST_STARTS:]
    head = _HEAD.pack(
        _MAGIC,
        -1.0 if state.rate is None else state.rate,
        state.lifts_at,
        state.next + offset,
        state.cut_at + offset,
        state.raised_at + offset,
        state.waited_at + offset,
        len(cuts),
        len(starts),
    )
    times = [t + offset for t in cuts + starts]
    return head + struct.pack(f"<{len(times)}d", *times)


def _decode(data: bytes, offset: float) -> PaceState:
    """The state in ``data``; a fresh one for a short, foreign or implausible record."""
    if len(data) < _HEAD.size:
        return PaceState()
    head = _HEAD.unpack_from(data)
    magic, rate, lifts_at, nxt, cut_at, raised_at, waited_at, n_cuts, n_starts = head
    if magic != _MAGIC or n_cuts > _MOST_CUTS or n_starts > MOST_STARTS:
        return PaceState()
    count = n_cuts + n_starts
    if len(data) < _HEAD.size + 8 * count:
        return PaceState()
    times = struct.unpack_from(f"<{count}d", data, _HEAD.size)
    wall = (nxt, cut_at, raised_at, waited_at, *times)
    latest = time.time() + _MOST_AHEAD_S
    if not all(math.isfinite(t) and t <= latest for t in (rate, lifts_at, *wall)):
        return PaceState()
    return PaceState(
        rate=None if rate <= 0 else rate,
        lifts_at=max(lifts_at, 0.0),
        next=nxt - offset,
        cut_at=cut_at - offset,
        raised_at=raised_at - offset,
        waited_at=waited_at - offset,
        cuts=collections.deque(t - offset for t in times[:n_cuts]),
        starts=collections.deque(t - offset for t in times[n_cuts:]),
    )

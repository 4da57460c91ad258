"""Samples copied from the parts of a shard's download that have landed, in place of range
GETs (for :mod:`range_partial`).

A shard's download, in any process of the node (this one included), publishes which of its
parts are final in its temporary file (:mod:`streamx.storage.landed_parts`). A range read
whose bytes lie in those parts copies them from that file: no request, and no byte fetched
twice. The copy counts only if the record is of the same epoch once the bytes are copied
(nothing truncated the file in between), and the file opened is the one the record names (a
regular file of this user's, its inode the record's). Anything else, the record gone
included, leaves the bytes to the range GETs, as before any part landed. The download removes
its record only once the file is in place, so a reader waiting on the parts finds the record
or the file at every moment.

The bytes copied and those the reader GETs are of one version: a record names the version its
download pinned, and only a record of the reader's own pin (or, before the reader pinned one,
any record, whose version it then pins: :meth:`ObjectPin.join`) is copied from. A record of
another version (the object was rewritten between the reader's first GET and the download's)
counts as none: the reader's next GET, asking for its own version, fails with a ``412`` and
the reader waits for the shard's download, as for any rewrite.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time

import numpy as np
from numpy.typing import NDArray

from streamx.cache.download_watch import STALL_S
from streamx.storage.file_copy import copy_between
from streamx.storage.landed_parts import Landed, read_record
from streamx.storage.object_pin import ObjectPin

__all__ = ["LandedBytes"]

# How often a directory without a record of the shard is listed again (a reader's chunk
# takes tens of milliseconds; a download starts after a process's first ones).
_LOOK_S = 0.05
# How often a reader waiting for parts to land looks at the record again.
_POLL_S = 0.005
# How long a reader waits for the record of a download that was started (a thread of a busy
# process may take a while to write it).
_START_S = 0.5


class LandedBytes:
    """Copies the landed bytes of the shard file at ``local`` (``size`` bytes) from the
    temporary file of its download, wherever one publishes them under a version ``pin``
    accepts (the reader's own GETs' pin)."""

    def __init__(self, local: str, size: int, pin: ObjectPin) -> None:
        self._local, self._size, self._pin = local, size, pin
        self._record: str | None = None
        self._looked = -_LOOK_S
        # The record last seen by wait (path, epoch, spans), and when it last changed.
        self._seen: tuple[str, bytes, tuple[tuple[int, int], ...]] | None = None
        self._changed = 0.0

    def copy(
        self, fd: int, starts: NDArray[np.int64], ends: NDArray[np.int64]
    ) -> NDArray[np.bool_]:
        """Copies each range ``[starts[i], ends[i])`` that has landed to the same offsets
        of ``fd``; returns which were copied (their bytes in ``fd`` are final)."""
        copied = np.zeros(len(starts), bool)
        path = self._find()
        before = None if path is None else read_record(path)
        if path is None or before is None or before.size != self._size:
            self._record = None
            return copied
        if not self._pin.accepts(before.version):
            return copied  # another version's bytes: never mixed with the reader's
        covered = _covered(before, starts, ends)
        if not covered.any():
            return copied
        tmp = path[: -len(".parts")] + ".tmp"
        if not _copy_from(tmp, before, fd, starts[covered], ends[covered]):
            return copied
        after = read_record(path)
        if after is None or after.epoch != before.epoch:
            return copied  # the attempt ended or restarted meanwhile: the bytes may not be final
        if not self._pin.join(before.version):
            return copied  # a GET of the reader's pinned another version meanwhile
        copied[covered] = True
        return copied

    def wait(
        self, fd: int, starts: NDArray[np.int64], ends: NDArray[np.int64], coming: bool = False
    ) -> tuple[NDArray[np.bool_], bool]:
        """Copies the ranges as a download of the shard lands them, while it progresses:
        returns which were copied, and whether the shard's file is in place (the download
        ended; the rest are read from it, even beside a record its download did not live to
        remove). Returns at once where no download publishes its parts, or one publishes
        another version's, and once none has landed for ``STALL_S`` (stopped, or slowed);
        where a download of the shard is ``coming`` (started, its record not yet written),
        it first waits up to ``_START_S`` for a record or the file."""
        copied = np.zeros(len(starts), bool)
        self._looked = -_LOOK_S  # a download begun since the last look counts
        began = time.monotonic()
        while not copied.all():
            if os.path.exists(self._local):
                return copied, True
            path = self._find()
            record = None if path is None else read_record(path)
            if record is not None and record.version and not self._pin.accepts(record.version):
                # Another version's download: its parts are never copied; the reader's GETs
                # find the rewrite (a 412) rather than waiting for them.
                return copied, os.path.exists(self._local)
            if path is None or record is None:
                if not (coming and time.monotonic() - began < _START_S):
                    return copied, os.path.exists(self._local)
                time.sleep(_POLL_S)
                continue
            seen = (path, record.epoch, record.spans)
            if seen != self._seen:  # remembered: a stalled download is not waited on again
                self._seen, self._changed = seen, time.monotonic()
            elif time.monotonic() - self._changed > STALL_S:
                break
            left = ~copied
            copied[left] = self.copy(fd, starts[left], ends[left])
            if not copied.all():
                time.sleep(_POLL_S)
        return copied, False

    def _find(self) -> str | None:
        """The record of a download of the shard, if one is there (looked for at most every
        ``_LOOK_S`` while there is none)."""
        if self._record is not None and os.path.lexists(self._record):
            return self._record
        now = time.monotonic()
        if now - self._looked < _LOOK_S:
            return None
        self._looked = now
        self._record = _newest_record(self._local)
        return self._record


def _covered(
    record: Landed, starts: NDArray[np.int64], ends: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Which ranges lie wholly inside one of the record's spans."""
    if not record.spans:
        return np.zeros(len(starts), bool)
    span_starts = np.array([s for s, _ in record.spans], np.int64)
    span_ends = np.array([e for _, e in record.spans], np.int64)
    at = np.searchsorted(span_starts, starts, side="right") - 1
    inside = at >= 0
    inside[inside] = ends[inside] <= span_ends[at[inside]]
    return inside


def _copy_from(
    tmp: str, record: Landed, fd: int, starts: NDArray[np.int64], ends: NDArray[np.int64]
) -> bool:
    """Copies the ranges from ``tmp``, if it is the file ``record`` describes."""
    try:
        src = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False  # renamed into place or removed: the caller reads the file, or GETs
    try:
        meta = os.fstat(src)
        if not _is_described(meta, record):
            return False
        for start, end in zip(starts.tolist(), ends.tolist()):
            copy_between(src, fd, end - start, start, start, tmp)
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.close(src)


def _is_described(meta: os.stat_result, record: Landed) -> bool:
    return (
        stat.S_ISREG(meta.st_mode)
        and meta.st_uid == os.geteuid()
        and (meta.st_dev, meta.st_ino) == (record.device, record.inode)
        and meta.st_size == record.size
    )


def _newest_record(local: str) -> str | None:
    """The most recently written record of a download of ``local``, if any."""
    head, tail = os.path.split(local)
    prefix = f".{tail}."
    newest: tuple[float, str] | None = None
    try:
        entries = os.scandir(head or ".")
    except OSError:
        return None
    with entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(".parts"):
                with contextlib.suppress(OSError):
                    stamp = entry.stat(follow_symlinks=False).st_mtime
                    if newest is None or stamp > newest[0]:
                        newest = (stamp, entry.path)
    return None if newest is None else newest[1]

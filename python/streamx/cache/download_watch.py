"""Whether another process's download of a shard is still making progress (for
:mod:`range_reads`).

The processes of a node share each shard's download: the ledger gives it to one of them.
A reader in another process reads the shard's samples by range only once that download has
*stalled* (no byte of it written for ``STALL_S``, or its owner gone); while it progresses,
the reader waits for the shard, so its bytes are not fetched twice.

A download writes its temporary file (``.<name>.<pid>.<tag>.tmp`` beside the shard, see
:func:`streamx.storage.download.temp_path_for`) every few milliseconds while any of its GETs
receives, so the file's modification time says when it last progressed, with nothing for the
owner to publish. The owner holds a shared ``flock`` on that file until it exits, so a lock
this process can take says the owner is gone (killed mid-download). A claim whose temporary
file does not appear (its owner stopped before creating it) stalls in the same bound, counted
from when this process first saw the claim.

Which parts have landed the owner publishes beside the file
(:mod:`streamx.storage.landed_parts`): the file is preallocated, so a region not yet written
reads as zeros, as a sample of zeros would. A reader of samples already read by range copies
those parts instead of fetching them (:mod:`landed_reads`); one that waits here waits for
the whole shard, which its parallel parts bring about when they bring the part holding a
sample. A wait on a download that stays stalled has a bound too (:class:`StallBound`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from dataclasses import dataclass

__all__ = ["STALL_S", "DownloadWatch", "StallBound"]

# A download that wrote nothing for this long has stalled. A part under way writes every few
# milliseconds; the longest quiet spell of a live download is its parts' wait for a free
# connection and their first byte (a part's time at tens of MB/s: well under a second).
STALL_S = 2.0
# How often a temporary file that was not there is looked for again, and a quiet one's
# owner checked: each costs a directory listing or an open.
_LOOK_S = 0.25


@dataclass
class _Seen:
    """What this process knows of one shard's download by another process."""

    first: float  # wall time this process first saw the claim
    tmp: str | None = None  # the download's temporary file, once found
    looked: float = 0.0  # monotonic time of the last listing or owner check


class DownloadWatch:
    """Tells, per shard file, whether another process's download of it has stalled."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}

    def stalled(self, local: str) -> bool:
        """Whether the download of ``local`` (the shard file's cache path), which another
        process claimed, wrote nothing for ``STALL_S`` or lost its owner."""
        now = time.time()
        seen = self._seen.setdefault(local, _Seen(first=now))
        looked = time.monotonic() - seen.looked >= _LOOK_S
        if seen.tmp is None and looked:
            seen.tmp, seen.looked = _newest_temp(local), time.monotonic()
            looked = False
        if seen.tmp is None:
            return now - seen.first > STALL_S
        try:
            quiet = now - os.stat(seen.tmp).st_mtime
        except FileNotFoundError:  # renamed into place, or removed by a failed download
            seen.tmp, seen.first = None, now
            return False
        if quiet > STALL_S:
            return True
        if quiet > _LOOK_S and looked:
            seen.looked = time.monotonic()
            return _owner_gone(seen.tmp)
        return False

    def forget(self, local: str) -> None:
        """Drops what is known of ``local``'s download (it landed, or stopped being one)."""
        self._seen.pop(local, None)


class StallBound:
    """Bounds a wait for another process's download of one file: a download stalled (its
    owner stopped, say by SIGSTOP) for longer than ``bound`` seconds without a break fails
    the wait, where nothing else would end it (a live owner keeps its claim)."""

    def __init__(self, local: str, bound: float) -> None:
        self._local, self._bound = local, bound
        self._watch = DownloadWatch()
        self._since: float | None = None

    def check(self, shown: str) -> None:
        """Called between polls of the wait.

        Raises:
            TimeoutError: If the download has stalled for longer than the bound, naming
                ``shown`` (the shard).
        """
        if not self._watch.stalled(self._local):
            self._since = None
            return
        now = time.monotonic()
        if self._since is None:
            self._since = now
        elif now - self._since > self._bound:
            raise TimeoutError(
                f"Another process of this node claimed the download of {shown} and has "
                f"written nothing of it for over {self._bound:.0f} s (stopped, or hung) "
                "while alive: resume or end that process, or delete its temporary file "
                f"beside {self._local}"
            )


# What follows ``.<name>.`` in a download's temporary file (storage.download.temp_path_for):
# not a hedge's scratch file (``…<tag>.h<start>.<pid>.<hex>.tmp``, unlocked: its lock says
# nothing of the owner, and a hedge waiting for its first byte is quiet while the download
# progresses), nor another file's temporary whose name only starts like this one's.
_TEMP_TAIL = re.compile(r"\d+\.[0-9a-f]{8}\.tmp")


def _newest_temp(local: str) -> str | None:
    """The most recently written temporary file of a download of ``local``, if any."""
    head, tail = os.path.split(local)
    prefix = f".{tail}."
    newest: tuple[float, str] | None = None
    try:
        entries = os.scandir(head or ".")
    except FileNotFoundError:
        return None
    with entries:
        for entry in entries:
            rest = entry.name[len(prefix) :]
            if entry.name.startswith(prefix) and _TEMP_TAIL.fullmatch(rest):
                with contextlib.suppress(FileNotFoundError):
                    stamp = entry.stat().st_mtime
                    if newest is None or stamp > newest[0]:
                        newest = (stamp, entry.path)
    return None if newest is None else newest[1]


def _owner_gone(tmp: str) -> bool:
    """Whether no live process holds ``tmp``'s lock (its owner died mid-download). Where
    the file system has no locks, the owner is taken to be alive: only quiet says stalled."""
    try:
        fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held (the owner lives), or no locks here
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)

"""A unit's file held open while its reader lives: a cached copy, or the user's own file
read where it lies.

Held, a copy evicted or replaced under the reader still reads whole (the dataset drops the
reader when it evicts the unit); the size is checked once against what the index says.

The user's own file (a local tar, never copied) carries the version (mtime) its metadata
was read at, and is checked after every read: a file rewritten or resized since raises
``StaleIndexError`` naming it, so samples never pair old metadata with new bytes. The check
follows the read (an ``fstat`` of the held descriptor), because a write moves the mtime as
it begins: a read that overlapped one sees it. Such a file is read, never mapped: a file
truncated under a map kills the process (``SIGBUS``), a short read is an error named here.
A process holds at most ``MAX_OPEN`` of the user's files open (a dataset of thousands of
local tars read at random would otherwise hold a descriptor per tar, past the process's
limit): the least recently read one is closed, and opens again, checked again, at its next
read. Their reads and closes take one lock, so no descriptor is closed under a read.

A descriptor means nothing in another process (a spawned DataLoader worker gets readers by
pickle): a pickled ``HeldFile`` carries its path, size and version, and the copy opens the
file again at its first read, checking them again.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

from streamx.exceptions import CorruptShardError, StaleIndexError

__all__ = ["MAX_OPEN", "HeldFile", "local_version"]

T = TypeVar("T")

MAX_OPEN = 128
# The user's files open in this process; each stamps its reads from one clock.
_OPEN: dict[int, weakref.ref[HeldFile]] = {}
_CLOCK = itertools.count()
_LOCK = threading.RLock()  # re-entered where a collection closes a file under it


def _fresh_lock() -> None:
    global _LOCK
    _LOCK = threading.RLock()  # a thread of the parent may have held it as it forked


os.register_at_fork(after_in_child=_fresh_lock)


def _as_mtime(version: str | None) -> float | None:
    """The mtime a local version names (compared as a float on every read)."""
    try:
        return None if version is None else float(version)
    except ValueError:
        return None  # compared as text instead


def local_version(stat: os.stat_result) -> str:
    """A local file's version as its listing gives it (``remote_files.list_files``: the
    mtime in seconds, as ``str`` of a float)."""
    return str(stat.st_mtime)


class HeldFile:
    """``path`` opened for reading, refused unless it is ``size`` bytes (naming ``shown``).

    ``version``: the path is the user's own file, which must keep ``size`` bytes and this
    version (:func:`local_version`) at every read.
    """

    def __init__(self, path: str, size: int, shown: str, version: str | None = None) -> None:
        self.path = path
        self.size = size
        self.version = version
        self._shown = shown
        self._closed = False
        self._fd: int | None = None
        self._mtime = _as_mtime(version)
        self._used = 0
        if version is None:
            self._open()  # FileNotFoundError, CorruptShardError
            return
        with _LOCK:
            self._open()  # FileNotFoundError, StaleIndexError

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._check(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        if self.version is not None:
            self._hold()
        return fd

    def _check(self, fd: int) -> None:
        found = os.fstat(fd)
        if self.version is not None:
            same = found.st_mtime == self._mtime or local_version(found) == self.version
            if found.st_size != self.size or not same:
                raise StaleIndexError(
                    f"{self._shown}: the file changed since its metadata was read (size "
                    f"{self.size} -> {found.st_size}, mtime {self.version} -> "
                    f"{local_version(found)}); construct the dataset again to read the new data"
                )
        elif found.st_size != self.size:
            raise CorruptShardError(
                f"{self._shown}: its cached copy {self.path} is {found.st_size} bytes, the "
                f"index says {self.size}"
            )

    def pread(self, length: int, offset: int) -> bytes:
        """Up to ``length`` bytes at ``offset``.

        Raises:
            StaleIndexError: If the user's own file changed (checked after the read).
        """
        return self.read_with(lambda fd: os.pread(fd, length, offset))

    def read_with(self, read: Callable[[int], T]) -> T:
        """``read(fd)`` on the held descriptor (a read into a reused buffer, say), checked as
        :meth:`pread` is.

        Raises:
            StaleIndexError: If the user's own file changed (checked after the read).
        """
        if self._closed:
            raise ValueError(f"{self.path} was closed")
        if self.version is None:
            fd = self._fd if self._fd is not None else self._open()
            return read(fd)
        with _LOCK:
            fd = self._fd if self._fd is not None else self._open()
            self._used = next(_CLOCK)
            data = read(fd)
            self._check(fd)
            return data

    def _hold(self) -> None:
        """Counts this user's file as open; past ``MAX_OPEN``, closes the least recently
        read other one (under ``_LOCK``; only opens pay for the search)."""
        self._used = next(_CLOCK)
        _OPEN[id(self)] = weakref.ref(self)
        while len(_OPEN) > MAX_OPEN:
            # Walked as a copy: a collection during the walk may close a file (its
            # ``__del__``), which takes it out of ``_OPEN``.
            entries = _OPEN.copy()
            held = [(f._used, key, f) for key, ref in entries.items() if (f := ref()) is not None]
            if len(held) < len(entries):  # collected without a close: forgotten here
                live = {key for _, key, _ in held}
                for key in [key for key in entries if key not in live]:
                    _OPEN.pop(key, None)
                continue
            _, key, victim = min(
                (entry for entry in held if entry[2] is not self), default=(0, 0, None)
            )
            if victim is None:
                break
            _OPEN.pop(key, None)
            if victim._fd is not None:
                os.close(victim._fd)
                victim._fd = None  # opened again, and checked, at its next read

    def close(self) -> None:
        with _LOCK:
            self._closed = True
            _OPEN.pop(id(self), None)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __getstate__(self) -> dict[str, object]:
        return {
            "path": self.path,
            "size": self.size,
            "version": self.version,
            "_shown": self._shown,
        }

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update({"version": None, **state})
        self._closed = False
        self._fd = None  # opened at the first read, in this process

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

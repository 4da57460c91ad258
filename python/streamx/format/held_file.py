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

import os
import threading
import weakref
from collections import OrderedDict

from streamx.exceptions import CorruptShardError, StaleIndexError

__all__ = ["MAX_OPEN", "HeldFile", "local_version"]

MAX_OPEN = 128
# The user's files open in this process, least recently read first.
_OPEN: OrderedDict[int, weakref.ref[HeldFile]] = OrderedDict()
_LOCK = threading.RLock()  # re-entered where a collection closes a file under it


def _fresh_lock() -> None:
    global _LOCK
    _LOCK = threading.RLock()  # a thread of the parent may have held it as it forked


os.register_at_fork(after_in_child=_fresh_lock)


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
        if version is None:
            self._open()  # FileNotFoundError, CorruptShardError
            return
        with _LOCK:
            self._open()  # FileNotFoundError, StaleIndexError
            self._held()

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._check(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd

    def _check(self, fd: int) -> None:
        found = os.fstat(fd)
        if self.version is not None:
            if found.st_size != self.size or local_version(found) != self.version:
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
        if self._closed:
            raise ValueError(f"{self.path} was closed")
        if self.version is None:
            fd = self._fd if self._fd is not None else self._open()
            return os.pread(fd, length, offset)
        with _LOCK:
            fd = self._fd if self._fd is not None else self._open()
            self._held()
            data = os.pread(fd, length, offset)
            self._check(fd)
            return data

    def _held(self) -> None:
        """Marks this user's file as just read; closes the least recently read ones past
        ``MAX_OPEN`` (under ``_LOCK``)."""
        key = id(self)
        found = _OPEN.get(key)
        if found is not None and found() is self:
            _OPEN.move_to_end(key)
            return
        _OPEN[key] = weakref.ref(self)
        while len(_OPEN) > MAX_OPEN:
            _, ref = _OPEN.popitem(last=False)
            other = ref()
            if other is not None and other._fd is not None:
                os.close(other._fd)
                other._fd = None  # opened again, and checked, at its next read

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

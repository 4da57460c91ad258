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

A descriptor means nothing in another process (a spawned DataLoader worker gets readers by
pickle): a pickled ``HeldFile`` carries its path, size and version, and the copy opens the
file again at its first read, checking them again.
"""

from __future__ import annotations

import os

from streamx.exceptions import CorruptShardError, StaleIndexError

__all__ = ["HeldFile", "local_version"]


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
        self._open()  # FileNotFoundError, CorruptShardError, StaleIndexError

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
        fd = self._fd if self._fd is not None else self._open()
        data = os.pread(fd, length, offset)
        if self.version is not None:
            self._check(fd)
        return data

    def close(self) -> None:
        self._closed = True
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
        if getattr(self, "_fd", None) is not None:
            self.close()

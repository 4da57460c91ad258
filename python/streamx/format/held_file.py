"""A cached unit's file held open while its reader lives.

Held, a copy evicted or replaced under the reader still reads whole (the dataset drops the
reader when it evicts the unit); the size is checked once against what the index says.

A descriptor means nothing in another process (a spawned DataLoader worker gets readers by
pickle): a pickled ``HeldFile`` carries its path and size, and the copy opens the file again
at its first read, checking the size again.
"""

from __future__ import annotations

import os

from streamx.exceptions import CorruptShardError

__all__ = ["HeldFile"]


class HeldFile:
    """``path`` opened for reading, refused unless it is ``size`` bytes (naming ``shown``)."""

    def __init__(self, path: str, size: int, shown: str) -> None:
        self.path = path
        self.size = size
        self._shown = shown
        self._closed = False
        self._fd: int | None = None
        self._open()  # FileNotFoundError, CorruptShardError

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        found = os.fstat(fd).st_size
        if found != self.size:
            os.close(fd)
            raise CorruptShardError(
                f"{self._shown}: its cached copy {self.path} is {found} bytes, the index says "
                f"{self.size}"
            )
        self._fd = fd
        return fd

    def pread(self, length: int, offset: int) -> bytes:
        """Up to ``length`` bytes at ``offset``."""
        if self._closed:
            raise ValueError(f"{self.path} was closed")
        fd = self._fd if self._fd is not None else self._open()
        return os.pread(fd, length, offset)

    def close(self) -> None:
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size, "_shown": self._shown}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._closed = False
        self._fd = None  # opened at the first read, in this process

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            self.close()

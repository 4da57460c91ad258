"""A cached unit's file held open while its reader lives.

Held, a copy evicted or replaced under the reader still reads whole (the dataset drops the
reader when it evicts the unit); the size is checked once against what the index says.
"""

from __future__ import annotations

import os

from streamx.exceptions import CorruptShardError

__all__ = ["HeldFile"]


class HeldFile:
    """``path`` opened for reading, refused unless it is ``size`` bytes (naming ``shown``)."""

    def __init__(self, path: str, size: int, shown: str) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # FileNotFoundError
        found = os.fstat(self._fd).st_size
        if found != size:
            self.close()
            raise CorruptShardError(
                f"{shown}: its cached copy {path} is {found} bytes, the index says {size}"
            )
        self.size = size

    def pread(self, length: int, offset: int) -> bytes:
        """Up to ``length`` bytes at ``offset``."""
        if self._fd is None:
            raise ValueError(f"{self.path} was closed")
        return os.pread(self._fd, length, offset)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            self.close()

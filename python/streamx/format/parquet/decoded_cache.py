"""The row groups decoded in this process, kept up to a number of bytes, least recently
used first out.

A random ``dataset[i]`` lands in a row group already decoded only if enough of them stay
decoded: decoding one costs milliseconds, reading a row of one microseconds. The bound is in
bytes, not in row groups, so memory does not grow with the input's row group size; a single
row group larger than the bound is still kept, alone, while it is the one in use. The bound
is ``STREAMX_PARQUET_DECODED_BYTES`` (a size such as ``'512mb'``; ``0`` keeps only the row
group in use), 512 MiB by default, read once per process on first use; each process (each
DataLoader worker) keeps its own.

A row group every row of which has been read is dropped at once: a pass over the data reads
each row once, so it will not be read again this epoch, and a pass keeps no more row groups
than it is reading.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from streamx.sizes import bytes_to_int

__all__ = ["DEFAULT_DECODED_BYTES", "DecodedCache", "Sized", "decoded_bytes_limit", "env_bytes"]

DEFAULT_DECODED_BYTES = 512 << 20
# What an entry costs beyond its buffers (its objects and dicts): many tiny row groups
# cannot add up past the bound unseen.
_ENTRY_BYTES = 4096


class Sized(Protocol):
    @property
    def nbytes(self) -> int:
        """The bytes it holds now (it may grow as values are converted)."""
        ...


S = TypeVar("S", bound=Sized)


def decoded_bytes_limit() -> int:
    """``STREAMX_PARQUET_DECODED_BYTES``, or the default.

    Raises:
        ValueError: If the variable is not a size of zero or more.
    """
    return env_bytes("STREAMX_PARQUET_DECODED_BYTES", DEFAULT_DECODED_BYTES)


def env_bytes(name: str, default: int) -> int:
    """The size in the environment variable ``name``, or ``default`` where it is unset.

    Raises:
        ValueError: Naming the variable, if it is not a size of zero or more.
    """
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = bytes_to_int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(
            f"{name} must be a size such as {default} or '{default >> 20}mb', got {raw!r}"
        )
    return value


# This process's id, kept current by a fork hook: the cache is guarded at every batch of a
# pass, and ``os.getpid`` is a system call (0.35 µs on a small VM).
_PID = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))


class DecodedCache(Generic[S]):
    """Entries by key, least recently used first out once their bytes pass ``limit``.

    Args:
        limit: The bytes kept (the entry in use is kept even when it alone is larger);
            ``None`` reads ``read_limit`` on first use.
        read_limit: Where the bound comes from when ``limit`` is ``None``.
    """

    def __init__(
        self, limit: int | None = None, read_limit: Callable[[], int] = decoded_bytes_limit
    ) -> None:
        self._limit = limit
        self._read_limit = read_limit
        self._entries: OrderedDict[str, S] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.total = 0  # bytes of the entries kept, as last measured
        # Readers and the download threads that evict files use the cache at once; a lock
        # of the parent's, held by one of its threads at a fork, is never released here.
        self._lock = threading.Lock()
        self._pid = _PID[0]

    @property
    def limit(self) -> int:
        if self._limit is None:
            self._limit = self._read_limit()
        return self._limit

    def _guard(self) -> threading.Lock:
        if self._pid != _PID[0]:
            self._lock, self._pid = threading.Lock(), _PID[0]
        return self._lock

    def get(self, key: str, make: Callable[[], S]) -> S:
        """The entry of ``key``, made by ``make`` if it is not kept; it becomes the most
        recently used, and a new one sends older entries out until the rest fit the bound
        (one that grows says so through :meth:`measure`). ``make`` runs outside the lock,
        so threads decode different row groups side by side."""
        if self._pid != _PID[0]:  # `_guard`, inline: a kept row group's hit is a few µs
            self._guard()
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        made = make()
        with self._guard():
            found = self._entries.setdefault(key, made)
            if found is made:
                self._measure(key)
            else:
                self._entries.move_to_end(key)  # another thread made it meanwhile
            return found

    def measure(self, key: str) -> None:
        """Counts the entry's bytes again (it grew), then evicts the oldest beyond the bound."""
        with self._guard():
            self._measure(key)

    def _measure(self, key: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return
        size = entry.nbytes + _ENTRY_BYTES
        self.total += size - self._sizes.get(key, 0)
        self._sizes[key] = size
        while self.total > self.limit and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            if oldest == key:  # the entry in use stays; the next oldest goes
                self._entries.move_to_end(key)
                continue
            self._drop(oldest)

    def drop(self, key: str) -> None:
        """Forgets ``key`` (its file left the disk, or every row of it was read)."""
        with self._guard():
            self._drop(key)

    def _drop(self, key: str) -> None:
        if self._entries.pop(key, None) is not None:
            self.total -= self._sizes.pop(key, 0)

    def keys(self) -> list[str]:
        """The keys kept, least recently used first."""
        with self._guard():
            return list(self._entries)

    def clear(self) -> None:
        with self._guard():
            self._entries.clear()
            self._sizes.clear()
            self.total = 0

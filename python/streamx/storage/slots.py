"""Connection slots: how many GETs a node's processes have open at once.

Every rank and DataLoader worker of a node downloads into the same cache directory, so the
slots are files there, ``.streamx/connections/slot-<i>``: a GET holds an exclusive
``flock`` on one of them. flock works across PID namespaces (containers sharing a volume)
and is released by the kernel when a process dies, so a crash leaks no slot. Each hold
opens the file anew: flock belongs to the open file, so two threads of one process holding
two opens of the same file exclude each other as two processes do.

A process that a host throttles publishes its lowered limit in ``.streamx/connections/limit``
(:mod:`~streamx.storage.throttle`): every process of the node then takes only the first
``limit`` slots, so the node as a whole sends fewer requests at once. A published limit
lapses after :data:`LIMIT_LAPSES_S` seconds unless published again (a throttled process
republishes as its limit recovers), so one that died throttled holds nobody back.

The hosts' request paces are kept beside the slots, ``pace-<digest>``
(:mod:`~streamx.storage.pace_file`): the node's processes start requests from one clock.

A slot file is opened with ``O_NOFOLLOW`` (created 0600) and used only when it is a regular
file of this user, as the pace file is: a symlink or a file planted by another local user is
never opened through nor locked. Such a slot is skipped; with none usable, the process bounds
its own threads (:class:`LocalSlots`) and warns once.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import logging
import os
import random
import stat
import threading
import time
from collections.abc import Iterator
from typing import Protocol

from streamx.runtime.atomic_write import write_atomic
from streamx.storage.request_pace import share_paces

__all__ = [
    "LIMIT_LAPSES_S",
    "ConnectionSlots",
    "LocalSlots",
    "Slots",
    "current_slots",
    "using_slots",
]

logger = logging.getLogger(__name__)

LIMIT_LAPSES_S = 60.0


class Slots(Protocol):
    """A bound on concurrent connections; ``hold()`` is held for the whole of one GET."""

    count: int

    def hold(self) -> contextlib.AbstractContextManager[None]: ...


class LocalSlots:
    """A bound shared by the threads of this process only (downloads outside a cache)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._semaphore = threading.BoundedSemaphore(count)

    def __getstate__(self) -> dict[str, int]:
        return {"count": self.count}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(state["count"])  # type: ignore[misc]

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._semaphore:
            yield


class ConnectionSlots:
    """``count`` slot files under ``directory``, shared by every process that uses it.

    Args:
        directory: Where the slot files live (created if missing).
        count: Connections allowed at once across the processes using ``directory``.

    Examples:
        >>> slots = ConnectionSlots("/tmp/cache/.streamx/connections", 32)  # doctest: +SKIP
        >>> with slots.hold():  # doctest: +SKIP
        ...     pass  # one GET
    """

    def __init__(self, directory: str, count: int) -> None:
        if count < 1:
            raise ValueError(f"the connection count must be at least 1, got {count}")
        self.directory = directory
        self.count = count
        self._refused: set[str] = set()  # slot files warned about, once each
        self._local = LocalSlots(count)  # the bound when no slot file is usable
        os.makedirs(directory, exist_ok=True)
        share_paces(directory)  # the node's request paces live beside its slots

    def __getstate__(self) -> dict[str, object]:
        return {"directory": self.directory, "count": self.count}

    def __setstate__(self, state: dict[str, object]) -> None:
        directory, count = state["directory"], state["count"]
        assert isinstance(directory, str) and isinstance(count, int)
        self.directory, self.count = directory, count
        self._refused, self._local = set(), LocalSlots(count)
        share_paces(self.directory)  # a spawned worker paces with the node too

    def _path(self, index: int) -> str:
        return os.path.join(self.directory, f"slot-{index}")

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        fd = self._acquire()
        if fd is None:  # no slot file is usable: this process bounds its own threads
            with self._local.hold():
                yield
            return
        try:
            yield
        finally:
            os.close(fd)  # closing the last descriptor of the open file releases the lock

    def publish_limit(self, limit: int) -> None:
        """Caps the node's connections at ``limit`` (a throttled host) for a while."""
        write_atomic(os.path.join(self.directory, "limit"), f"{limit} {time.time()}")

    def limit(self) -> int:
        """Slots the node may use now: the published limit while it holds, else all."""
        try:
            with open(os.path.join(self.directory, "limit")) as file:
                limit, _, when = file.read().partition(" ")
            if time.time() - float(when) < LIMIT_LAPSES_S:
                return min(max(int(limit), 1), self.count)
        except (OSError, ValueError):
            pass
        return self.count

    def _acquire(self) -> int | None:
        """A locked slot file's descriptor, or None when no slot file can be used."""
        count = self.limit()
        start = random.randrange(count)
        usable: list[int] = []
        for index in ((start + i) % count for i in range(count)):
            fd = self._open(index)
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                os.close(fd)
                usable.append(index)
        # All busy: wait on one (the GIL is released while blocked). Every holder's GET has
        # a timeout, so the wait is bounded.
        fd = self._open(usable[0]) if usable else None
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open(self, index: int) -> int | None:
        """Slot ``index``'s file, opened; None (warned once) when it is not ours to lock."""
        path = self._path(index)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as err:  # a symlink (ELOOP), a full disk, a directory in its place
            self._refuse(path, str(err))
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            os.close(fd)
            self._refuse(path, "not a regular file of this user")
            return None
        return fd

    def _refuse(self, path: str, why: str) -> None:
        if path not in self._refused:
            self._refused.add(path)
            logger.warning("%s: not used as a connection slot (%s)", path, why)

    def busy(self) -> int:
        """How many slots are held right now (by any process); unusable ones are not."""
        held = 0
        for index in range(self.count):
            fd = self._open(index)
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held += 1
            finally:
                os.close(fd)
        return held


# The slots a download in this thread holds by default: the shard cache sets its node-wide
# ones around a shard's preparation, which runs through the Stream's overridable hooks.
_CURRENT: contextvars.ContextVar[Slots | None] = contextvars.ContextVar(
    "streamx_slots", default=None
)


@contextlib.contextmanager
def using_slots(slots: Slots) -> Iterator[None]:
    """Makes ``slots`` the default of downloads started in this context."""
    token = _CURRENT.set(slots)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_slots() -> Slots | None:
    """The slots set by the innermost :func:`using_slots`, if any."""
    return _CURRENT.get()

"""Cancelling a GET that another thread runs: a lost hedge race (:mod:`~streamx.storage.hedge`).

A GET's thread attaches its socket to the thread's current :class:`Scope` while it reads
an answer. :meth:`Scope.cancel` shuts that socket down from any thread: the reader then
sees the connection end, stops within one read, and closes the connection (it is never
reused). A GET that attaches after the cancel fails at once, before it sends anything.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

__all__ = ["Cancelled", "Scope", "attach", "detach", "scope"]


class Cancelled(ConnectionAbortedError):
    """The GET was cancelled: another request for the same bytes won."""


class Scope:
    """The sockets one part's GET reads from; :meth:`cancel` ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.cancelled = False

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            if self.cancelled:
                raise Cancelled("the GET was cancelled: another request for its bytes won")
            self._sockets.append(sock)

    def detach(self, sock: socket.socket) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._sockets.remove(sock)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


_LOCAL = threading.local()


@contextlib.contextmanager
def scope(current: Scope) -> Iterator[None]:
    """Makes ``current`` the scope of GETs this thread runs inside the block."""
    before = getattr(_LOCAL, "scope", None)
    _LOCAL.scope = current
    try:
        yield
    finally:
        _LOCAL.scope = before


def attach(sock: socket.socket | None) -> None:
    """Attaches ``sock`` to this thread's scope, if any.

    Raises:
        Cancelled: The scope was cancelled already.
    """
    current: Scope | None = getattr(_LOCAL, "scope", None)
    if current is not None and sock is not None:
        current.attach(sock)


def detach(sock: socket.socket | None) -> None:
    """Detaches ``sock`` from this thread's scope, if any."""
    current: Scope | None = getattr(_LOCAL, "scope", None)
    if current is not None and sock is not None:
        current.detach(sock)

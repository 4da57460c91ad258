"""The end of a DataLoader pass: its worker processes joined, then what they held released.

DataLoader workers end by ``os._exit``, so the ledger files they made in the node's cache
outlive them until someone sweeps (``end_loader_pass``). torch joins a pass's workers when
its iterator runs out or is collected; a pass left early (a ``break`` in the training loop,
an error, an iterator kept until the process exits) would leave its workers' files to the
next process that opens the ledger. :class:`PassEnd` ends the pass exactly once: from the
loader's ``finally`` (exhausted, broken out of, closed or collected), or at interpreter exit
for a pass still open then, before torch's exit hook turns its shutdown into a no-op and
multiprocessing's kills the workers.

Persistent workers outlive the pass that started them: once it ends they are kept for the
next one, and stopped (then their files released) at interpreter exit if they still live
then. The next process would judge their files dead by their locks and sweep them anyway,
but only once it opens the ledger.
"""

from __future__ import annotations

import atexit
import inspect
import os
import weakref
from collections.abc import Callable

__all__ = ["PassEnd", "stop_workers"]


def stop_workers(iterator: object) -> None:
    """Shuts down and joins the workers of torch's DataLoader iterator `iterator`, if it has
    any (a single-process iterator, or ``None``, has none); a second call does nothing."""
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if callable(shutdown):
        shutdown()


class PassEnd:
    """Ends one loader pass once: stops the workers of `workers` (torch's iterator; kept
    alive by a pass that ends normally when `keep_workers`, as persistent workers are), then
    calls `release`.

    Registered with :mod:`atexit` while the pass is open, and there stops the workers
    whatever `keep_workers` says (in the process that opened the pass only: a forked
    child's exit is not this pass's end) and closes `reading` (the pass's batches read in
    this process), whose ``finally`` would otherwise run while modules are torn down.
    Workers kept at the pass's end stay registered until exit (:func:`_stop_kept`).

    Examples:
        >>> ended = []
        >>> end = PassEnd(None, lambda: ended.append(1))
        >>> end(); end()
        >>> ended
        [1]
    """

    def __init__(
        self,
        workers: object,
        release: Callable[[], None] | None,
        keep_workers: bool = False,
        reading: object = None,
    ) -> None:
        self._workers = workers
        self._release = release
        self._reading = reading
        self._keep = keep_workers
        self._pid = os.getpid()
        self._done = False
        atexit.register(self._at_exit)

    def __call__(self) -> None:
        self._end(stop=not self._keep)

    def _at_exit(self) -> None:
        reading, self._reading = self._reading, None
        if inspect.isgenerator(reading) and os.getpid() == self._pid:
            reading.close()  # ends the pass through the loader's own `finally` too
        self._end(stop=True)

    def _end(self, stop: bool) -> None:
        # First, before any module global: a pass collected while the interpreter shuts
        # down, already ended by the exit hook, must touch nothing.
        if self._done:
            return
        self._done = True
        atexit.unregister(self._at_exit)
        workers, release = self._workers, self._release
        self._workers = self._release = self._reading = None
        if os.getpid() != self._pid:
            return
        if stop:
            stop_workers(workers)
        elif workers is not None:
            _keep_until_exit(workers, release)
        if release is not None:
            release()


# Persistent workers kept past their pass: id of torch's iterator -> (the iterator, the
# release of its pass), both weak (a loader collected meanwhile joins its own workers).
_KEPT: dict[int, tuple[weakref.ref[object], Callable[[], Callable[[], None] | None]]] = {}
_KEPT_PID = [0]


def _keep_until_exit(workers: object, release: Callable[[], None] | None) -> None:
    if _KEPT_PID[0] != os.getpid():  # a forked child's exit stops none of its parent's
        _KEPT.clear()
        _KEPT_PID[0] = os.getpid()
    if not _KEPT:
        atexit.register(_stop_kept)  # after torch's and multiprocessing's hooks: runs first
    _KEPT[id(workers)] = (weakref.ref(workers), _weak(release))


def _weak(release: Callable[[], None] | None) -> Callable[[], Callable[[], None] | None]:
    if inspect.ismethod(release):  # a dataset's method: kept alive by its loader, not here
        return weakref.WeakMethod(release)
    return lambda: release


def _stop_kept() -> None:
    """At exit: stops the persistent workers still alive, then releases their files."""
    kept = list(_KEPT.values()) if _KEPT_PID[0] == os.getpid() else []
    _KEPT.clear()
    for workers, release in kept:
        stop_workers(workers())
        done = release()
        if done is not None:
            done()

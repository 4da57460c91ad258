"""Iteration metrics: samples/s, stall time, cache hits and misses, bytes and download queue.

Every process that reads (the main one and each DataLoader worker) counts into its own small
memory-mapped table, one row per epoch, in a directory named by ``STREAMX_METRICS_DIR``.
The first process to count creates the directory and sets the variable, so workers it
starts later (fork or spawn) inherit it and the main process can sum everyone's rows:
:func:`snapshot` and :func:`epoch_totals` see the whole node's reading. Counting is a few
adds into a memory map per chunk of samples, far below 1% of iteration time; set
``STREAMX_METRICS=0`` to turn it off. Worker files outlive the workers (which may exit at
the end of each epoch); the process that created the directory removes it at exit.

Examples:
    >>> from streamx.runtime import metrics
    >>> metrics.add_samples(3)
    >>> metrics.snapshot()["samples"] >= 3
    True
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import logging
import mmap
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

from streamx.runtime import run_dirs

__all__ = [
    "Snapshot",
    "add_download",
    "add_hedged",
    "add_request",
    "add_samples",
    "add_throttled",
    "begin_epoch",
    "dequeued",
    "enable_logging",
    "epoch_totals",
    "queued",
    "snapshot",
    "stalled",
]

logger = logging.getLogger("streamx.metrics")

_ENV_DIR, _ENV_OFF = "STREAMX_METRICS_DIR", "STREAMX_METRICS"
_FIELDS = (
    "samples",
    "stall_s",
    "misses",
    "bytes",
    "queued",
    "dequeued",
    "first",
    "last",
    "throttled",
    "hedged",
    "GET",
    "RANGED_GET",
    "HEAD",
    "LIST",
    "PUT",
    "received",
    "sent",
)
_COL = {name: i for i, name in enumerate(_FIELDS)}
_EPOCHS = 1024  # rows per process; epochs beyond wrap around


class Snapshot(TypedDict):
    """Totals over every reading process of this node (one epoch or all of them).

    ``samples_per_s`` is samples over the span from the first to the last sample counted;
    ``cache_hits``/``cache_misses`` count samples whose shard was / was not local when
    read; ``stall_s`` is the time readers blocked waiting for shards; ``download_queue``
    is how many shard downloads are started but not finished. ``throttled`` counts answers
    a store throttled (503, 429; each was waited out and asked again), ``hedged_parts`` the
    parts asked for a second time because they ran far slower than their peers. The
    ``requests_*`` keys count the requests this node's readers sent, by the kind stores bill
    (:mod:`streamx.storage.accounting`), and ``bytes_received``/``bytes_sent`` their bodies.
    """

    samples: int
    samples_per_s: float
    stall_s: float
    cache_hits: int
    cache_misses: int
    bytes_downloaded: int
    download_queue: int
    throttled: int
    hedged_parts: int
    requests_get: int
    requests_ranged_get: int
    requests_head: int
    requests_list: int
    requests_put: int
    bytes_received: int
    bytes_sent: int


class _Table:
    """This process's rows, mapped from its file in the shared directory."""

    def __init__(self) -> None:
        inherited = os.environ.get(_ENV_DIR)
        directory = inherited if inherited is not None and _ours(inherited) else _new_directory()
        self.directory = directory
        self._map = _map_file(os.path.join(directory, f"{os.getpid()}.f64"))
        # A memoryview of doubles: an add costs tens of nanoseconds (numpy scalars cost more).
        self.cells = memoryview(self._map).cast("d")
        self.row: memoryview[float] | None = self.cells[: len(_FIELDS)]


# This process's maps, by path: a second table over the same file (the directory set back
# by a test) shares the map. Truncating a file this process maps would make every thread
# still adding into the old map die of SIGBUS.
_maps: dict[str, mmap.mmap] = {}
_maps_pid = os.getpid()


def _map_file(path: str) -> mmap.mmap:
    global _maps, _maps_pid
    if _maps_pid != os.getpid():  # a forked child: its parent's maps are not its own
        _maps, _maps_pid = {}, os.getpid()
    if path in _maps:
        return _maps[path]
    size = _EPOCHS * len(_FIELDS) * 8
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            # Not mapped by this process yet, so zeroing it is safe: counts left by a dead
            # process that had this pid must not add into ours.
            os.ftruncate(fd, 0)
            os.ftruncate(fd, size)
            mapped = mmap.mmap(fd, size)
        finally:
            os.close(fd)
    except OSError as err:
        # Metrics must never fail a run: count in this process's memory only.
        logger.warning("streamx metrics: cannot share counts through %s (%s)", path, err)
        return mmap.mmap(-1, size)
    _maps[path] = mapped
    return mapped


def _ours(directory: str) -> bool:
    """Whether ``directory`` is a metrics directory of this user (an inherited variable may
    name another user's, or one that is gone)."""
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _new_directory() -> str:
    """A fresh directory under the user's private state root (not /dev/shm: nothing a
    crash leaves there outlives the next start), after removing those of dead creators."""
    root = os.path.join(run_dirs.user_root(), "metrics")
    os.makedirs(root, mode=0o700, exist_ok=True)
    for entry in os.listdir(root):
        creator = entry.partition("-")[0]
        if creator.isdigit() and not _alive(int(creator)):
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
    directory = tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root)
    os.environ[_ENV_DIR] = directory
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_table: _Table | None = None
_creating = threading.Lock()
_log_every: float | None = None
_logged_at = 0.0


def _forget_table() -> None:
    """A forked child counts into a file of its own, never into its parent's."""
    global _table, _creating
    _table = None
    _creating = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_forget_table)


def _row() -> memoryview[float] | None:
    """This process's current row, or None while counting is off."""
    table = _table
    if table is None:
        with _creating:  # threads counting their first request at once make one table
            if _table is None:
                begin_epoch(0)
        table = _table
        assert table is not None
    return table.row


def begin_epoch(epoch: int) -> None:
    """Counts what follows into ``epoch``'s row (and re-reads ``STREAMX_METRICS``)."""
    table = _table
    if table is None or table.directory != os.environ.get(_ENV_DIR):
        table = _Table()  # first use, or the directory was changed (e.g. by a test)
    globals()["_table"] = table
    if os.environ.get(_ENV_OFF) == "0":
        table.row = None
        return
    base = (epoch % _EPOCHS) * len(_FIELDS)
    table.row = table.cells[base : base + len(_FIELDS)]


def add_samples(count: int) -> None:
    """Counts ``count`` samples handed out just now."""
    row = _row()
    if row is None:
        return
    now = time.time()
    if not row[6]:
        row[6] = now
    row[0] += count
    row[7] = now
    if _log_every is not None and now - _logged_at >= _log_every:
        _log(now)


@contextlib.contextmanager
def stalled() -> Iterator[None]:
    """Times a reader blocked on a shard that was not local (one cache miss)."""
    began = time.perf_counter()
    try:
        yield
    finally:
        row = _row()
        if row is not None:
            row[1] += time.perf_counter() - began
            row[2] += 1


def add_download(nbytes: int) -> None:
    """Counts a finished shard download of ``nbytes``."""
    row = _row()
    if row is not None:
        row[3] += nbytes


def queued(count: int) -> None:
    """Counts ``count`` shard downloads started in the background."""
    row = _row()
    if row is not None and count:
        row[4] += count


def dequeued() -> None:
    """Counts one background shard download finished (or given up)."""
    row = _row()
    if row is not None:
        row[5] += 1


def add_throttled() -> None:
    """Counts one throttled answer (503 or 429) that was waited out."""
    row = _row()
    if row is not None:
        row[_COL["throttled"]] += 1


def add_hedged() -> None:
    """Counts one part asked for again on another connection."""
    row = _row()
    if row is not None:
        row[_COL["hedged"]] += 1


def add_request(kind: str | None, received: int, sent: int) -> None:
    """Counts one request of ``kind`` (None: only bytes of one counted before)."""
    row = _row()
    if row is None:
        return
    if kind is not None:
        row[_COL[kind]] += 1
    row[_COL["received"]] += received
    row[_COL["sent"]] += sent


def _rows() -> NDArray[np.float64]:
    """Every process's table of this node, stacked: (processes, epochs, fields)."""
    _row()
    directory = os.environ.get(_ENV_DIR, "")
    tables = []
    for path in sorted(glob.glob(os.path.join(directory, "*.f64"))):
        with contextlib.suppress(OSError, ValueError):
            tables.append(np.fromfile(path, np.float64).reshape(_EPOCHS, len(_FIELDS)))
    return np.stack(tables) if tables else np.zeros((0, _EPOCHS, len(_FIELDS)))


def _summarise(rows: NDArray[np.float64]) -> Snapshot:
    """One Snapshot from rows of (any, fields)."""
    total = rows.sum(axis=0)
    started = rows[:, 6][rows[:, 6] > 0]
    span = float(rows[:, 7].max() - started.min()) if len(started) else 0.0
    samples, misses = int(total[0]), int(total[2])
    return {
        "samples": samples,
        "samples_per_s": samples / span if span > 0 else 0.0,
        "stall_s": float(total[1]),
        "cache_hits": max(samples - misses, 0),
        "cache_misses": misses,
        "bytes_downloaded": int(total[3]),
        "download_queue": int(total[4] - total[5]),
        "throttled": int(total[_COL["throttled"]]),
        "hedged_parts": int(total[_COL["hedged"]]),
        "requests_get": int(total[_COL["GET"]]),
        "requests_ranged_get": int(total[_COL["RANGED_GET"]]),
        "requests_head": int(total[_COL["HEAD"]]),
        "requests_list": int(total[_COL["LIST"]]),
        "requests_put": int(total[_COL["PUT"]]),
        "bytes_received": int(total[_COL["received"]]),
        "bytes_sent": int(total[_COL["sent"]]),
    }


def snapshot() -> Snapshot:
    """Totals of every epoch so far, over this node's reading processes.

    Examples:
        >>> sorted(snapshot())[:3]
        ['bytes_downloaded', 'cache_hits', 'cache_misses']
    """
    return _summarise(_rows().reshape(-1, len(_FIELDS)))


def epoch_totals() -> dict[int, Snapshot]:
    """Per-epoch totals (epochs with any activity), over this node's reading processes."""
    rows = _rows()
    counted = [_COL[name] for name in ("samples", "bytes", "queued", "GET", "RANGED_GET", "PUT")]
    active = np.flatnonzero(rows[:, :, counted].sum(axis=(0, 2)) > 0)
    return {int(e): _summarise(rows[:, e, :]) for e in active}


def enable_logging(every_s: float | None = 60.0) -> None:
    """Logs a snapshot to the ``streamx.metrics`` logger at most every ``every_s`` seconds
    while samples flow (``None`` stops)."""
    global _log_every
    _log_every = every_s


def _log(now: float) -> None:
    global _logged_at
    _logged_at = now
    logger.info("streamx metrics: %s", snapshot())

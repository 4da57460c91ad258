"""Local staging directories of writers to a remote, and collecting those of dead writers.

A writer whose ``out`` is a remote URL writes each shard into a temporary directory and
uploads it from there. A writer killed with ``kill -9`` cannot remove that directory, and it
can hold gigabytes. So each staging directory carries a lock file its writer holds with
``flock`` for as long as it lives, and a marker naming the remote. The kernel drops the lock
when the process dies, however it dies, and in any container that shares the file system:
a staging directory whose lock can be taken has no live owner (a pid could be reused or
belong to another pid namespace, a lock cannot). The next writer to the same remote, or
``streamx cache clean``, removes such directories.

A writer that finished normally removes the marker, so a staging directory it was asked to
keep (``keep_local``) is never collected.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile

from streamx.runtime.atomic_write import write_atomic

__all__ = ["PREFIX", "Staging", "collect_dead_staging"]

PREFIX = "streamx-upload-"
_MARK = ".streamx-staging.json"
_LOCK = ".streamx-staging.lock"


class Staging:
    """A fresh staging directory for a writer to ``remote``, locked by this process."""

    def __init__(self, remote: str) -> None:
        self.path = tempfile.mkdtemp(prefix=PREFIX)
        self._fd: int | None = os.open(
            os.path.join(self.path, _LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        # The marker comes only once the lock is held: a collector never sees an unlocked,
        # marked directory of a live writer.
        mark = json.dumps({"remote": remote, "pid": os.getpid()})
        write_atomic(os.path.join(self.path, _MARK), mark)

    def release(self) -> None:
        """The writer finished: the directory is no longer collectable (it may be kept)."""
        for name in (_MARK, _LOCK):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.path, name))
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        # A writer that failed and was dropped: its directory stays marked, and collectable
        # once nothing holds the lock.
        self._close()


def collect_dead_staging(remote: str | None = None, root: str | None = None) -> list[str]:
    """Removes the staging directories of dead writers (to ``remote``, or to any remote).

    Only this user's directories are considered, and only those whose lock can be taken.

    Args:
        remote: Collect only directories staged for this remote URL.
        root: Where staging directories live (default: the temporary directory).

    Returns:
        The directories removed.
    """
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = sorted(n for n in os.listdir(root) if n.startswith(PREFIX))
    except OSError:
        return []
    for name in names:
        path = os.path.join(root, name)
        if _collect_one(path, remote):
            removed.append(path)
    return removed


def _collect_one(path: str, remote: str | None) -> bool:
    try:
        info = os.lstat(path)
        if not os.path.isdir(path) or os.path.islink(path) or info.st_uid != os.getuid():
            return False
        with open(os.path.join(path, _MARK), encoding="utf-8") as file:
            marked = json.load(file)
        if remote is not None and marked.get("remote") != remote:
            return False
        fd = os.open(os.path.join(path, _LOCK), os.O_RDWR | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return False  # no marker (finished, or not ours), unreadable, or gone meanwhile
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its writer lives
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.exists(path)
    finally:
        os.close(fd)

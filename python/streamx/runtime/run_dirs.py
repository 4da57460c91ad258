"""Where each dataset instance keeps its state directory, and how dead ones are collected.

The directories live under ``<tempdir>/streamx-<uid>/<digest>/runs``, where ``<digest>``
names the dataset's local directories, never inside those directories. That holds for every
dataset, not only local-only ones (whose directory is the user's own data, possibly
read-only, shared or under version control): the state is read only by the creating
process and its DataLoader workers, all on this host, so a cache directory adds nothing
and may sit on a network file system that is shared between hosts or lacks ``flock``.

An instance holds a shared ``flock`` on its own directory for its lifetime. The kernel drops
it when the process dies, however it dies, so any later instance can tell a dead directory
from a live one and remove it; the same lock keeps ``systemd-tmpfiles`` from ageing a live
directory away.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import secrets
import shutil
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence

__all__ = ["collect_dead", "collect_empty", "create_locked", "release", "runs_base", "user_root"]

# Directories still under their pending name (being set up right now, or abandoned by a
# creator that died within those few system calls) are left alone for this long.
_PENDING_GRACE_S = 60.0
_PENDING = ".pending-"
# An empty ``<digest>/runs`` base is collected once unused this long, a few per call.
_EMPTY_GRACE_S = 600.0
_MOST_COLLECTED = 4
_LOCKS_UNSUPPORTED = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


def _private(path: str) -> bool:
    """Whether ``path`` is a directory of this user that nobody else may write into (the
    temp directory is shared: whatever holds our names may have been planted there)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


@functools.cache
def _fallback_root() -> str:
    """The user's fallback root: the first private ``streamx-<uid>-*`` directory already in
    the temp directory, else a fresh one (random, 0o700, by mkdtemp). Reused by every later
    process, so a planted root costs one directory, not one per process, and state its
    crashed runs leave there is collected as under the usual root."""
    tmp = tempfile.gettempdir()
    prefix = f"streamx-{os.getuid()}-"
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(tmp)):
            path = os.path.join(tmp, name)
            if name.startswith(prefix) and _private(path):
                return path
    return tempfile.mkdtemp(prefix=prefix)


def user_root() -> str:
    """``<tempdir>/streamx-<uid>``, private to this user, created if missing."""
    root = os.path.join(tempfile.gettempdir(), f"streamx-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(root, 0o700)
    if not _private(root):
        fallback = _fallback_root()
        warnings.warn(
            f"{root} is not a private directory of this user; keeping dataset state in "
            f"{fallback} instead",
            UserWarning,
            stacklevel=5,
        )
        return fallback
    info = os.lstat(root)
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(root, 0o700)
    return root


def runs_base(local_dirs: Sequence[str]) -> str:
    """The directory holding the state directories of datasets over ``local_dirs``."""
    key = "\0".join(os.path.abspath(d) for d in local_dirs)
    digest = hashlib.blake2s(key.encode(), digest_size=8).hexdigest()
    root = user_root()
    collect_empty(root, keep=digest)
    base = os.path.join(root, digest, "runs")
    _retry_while_collected(lambda: _make_base(base))
    return base


def _make_base(base: str) -> None:
    """Makes ``<digest>/runs`` under the (existing) user root. Not ``os.makedirs``: with
    ``exist_ok`` it still raises when a directory it found existing is gone by the time it
    checks again, which a collector's ``rmdir`` can do."""
    for path in (os.path.dirname(base), base):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)


def _retry_while_collected(make: Callable[[], None]) -> None:
    """Runs ``make`` (which creates a directory under a ``<digest>/runs`` base) again while
    it fails because another process's :func:`collect_empty` found the base empty for an
    instant and removed it: between making ``<digest>`` and ``runs``, or between making
    the base and making a directory inside it. A collector removes only empty directories,
    so this repeats only while collectors keep winning that instant."""
    for attempt in range(100):
        try:
            make()
            return
        except FileNotFoundError:
            if attempt == 99:
                raise


def collect_empty(root: str, keep: str) -> None:
    """Removes ``<digest>/runs`` directories left empty under the user root (one per set of
    local directories ever used; they add up), other than ``keep``'s.

    ``rmdir`` removes only an empty directory, so a live instance's state is never lost;
    a creator racing with the removal recreates its base (see :func:`create_locked`).

    Removing an empty directory costs milliseconds on ext4 (its block is freed), a stat
    microseconds: a base used within :data:`_EMPTY_GRACE_S` is kept (its dataset is likely
    built again soon, and a burst of builds over many directories would otherwise remove
    and remake each other's bases), and one call removes at most :data:`_MOST_COLLECTED`.
    """
    try:
        names = os.listdir(root)
    except OSError:
        return
    old = time.time() - _EMPTY_GRACE_S
    removed = 0
    for name in names:
        if name == keep or len(name) != 16:
            continue
        runs = os.path.join(root, name, "runs")
        with contextlib.suppress(OSError):
            if os.lstat(runs).st_mtime > old:
                continue
            os.rmdir(runs)
            os.rmdir(os.path.join(root, name))
            removed += 1
            if removed == _MOST_COLLECTED:
                return


def _lock_shared(path: str) -> int | None:
    """Holds a shared flock on directory ``path``; ``None`` if locks are unsupported."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError as err:
        os.close(fd)
        if err.errno in _LOCKS_UNSUPPORTED:
            return None
        raise
    return fd


def create_locked(base: str) -> tuple[str, int | None]:
    """A new state directory under ``base`` and the descriptor holding its lock."""
    name = f"{os.getpid()}-{secrets.token_hex(6)}"
    # Set up under a pending name, so no collector sees the directory before it is locked.
    pending = os.path.join(base, _PENDING + name)

    def make() -> None:
        _make_base(base)
        os.mkdir(pending, 0o700)

    _retry_while_collected(make)
    fd = _lock_shared(pending)
    root = os.path.join(base, name)
    os.rename(pending, root)
    return root, fd


def release(root: str, fd: int | None, pid: int) -> None:
    """Finaliser of an instance: only its creating process removes the directory."""
    if os.getpid() != pid:
        return
    shutil.rmtree(root, ignore_errors=True)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _remove_if_unlocked(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # gone already, or not a directory of ours
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # its owner is alive (or locks are unsupported: keep everything)
    else:
        shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def collect_dead(base: str) -> None:
    """Removes the state directories under ``base`` whose owner is gone (lock free)."""
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return
    now = time.time()
    for name in names:
        path = os.path.join(base, name)
        if not name.startswith(_PENDING):
            _remove_if_unlocked(path)
            continue
        with contextlib.suppress(OSError):
            if now - os.stat(path).st_mtime > _PENDING_GRACE_S:
                shutil.rmtree(path, ignore_errors=True)

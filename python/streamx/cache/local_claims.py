"""Which remote each local cache directory serves, among the live streams of this host.

Two streams that cache different remotes into one directory would mix (or overwrite) each
other's ``index.json`` and shards, so that is refused, as mosaicml-streaming refuses it.
Unlike there, streams over the *same* remote may share a directory, so a Stream object (or
its cache) can be reused by the next dataset.

A stream with a remote holds a *claim* on its directory: a small file naming the remote,
under ``<tempdir>/streamx-<uid>/claims/<digest of the directory>/``, on which it holds a
shared ``flock`` while it lives (forked DataLoader workers inherit it). A claim whose lock
can be taken exclusively belongs to a dead owner and is removed. A process removes its own
claims when it exits, and the claims directory of a local directory once it is empty:
fresh local directories (one per run) would otherwise leave one directory each for good.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import weakref
from dataclasses import dataclass, field
from typing import IO
from urllib.parse import urlsplit

from streamx.runtime.run_dirs import user_root

__all__ = ["Claim", "claim_local", "same_remote", "tie_to_remote"]


def same_remote(a: str, b: str) -> bool:
    """Whether two remote URLs name the same data: an http(s) remote is its path (bucket
    and key, path-style), whichever endpoint serves it, so a moved or renamed server (a
    new port, a proxy) keeps its cache. An ``s3://`` remote names no endpoint at all."""
    return a == b or _identity(a) == _identity(b)


def _identity(remote: str) -> str:
    parsed = urlsplit(remote)
    if parsed.scheme in ("http", "https"):
        return "http:" + parsed.path.strip("/")
    return remote


@dataclass(eq=False)
class Claim:
    """A held claim: the locked file and its path. Closing (or losing) it releases it."""

    handle: IO[bytes]
    path: str
    pid: int
    closed: bool = field(default=False)

    def __post_init__(self) -> None:
        # Run when the claim is collected or at exit. Unlike a ``__del__``, it runs before
        # the collector finalizes the handle of a claim caught in a reference cycle (the
        # handle would otherwise warn that it was never closed).
        self._finalizer = weakref.finalize(self, _release, self.handle, self.path, self.pid)

    def close(self) -> None:
        """Releases the claim now (only its creating process removes the file, and then its
        directory if no other claim is left in it)."""
        self.closed = True
        self._finalizer()


def _release(handle: IO[bytes], path: str, pid: int) -> None:
    if os.getpid() == pid:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        with contextlib.suppress(OSError):  # another claim is there: it stays
            os.rmdir(os.path.dirname(path))
    handle.close()


def claim_local(local_dir: str, remote: str) -> Claim | None:
    """Records that ``local_dir`` caches ``remote`` for as long as the returned file is open.

    Returns:
        The open claim (keep it referenced), or ``None`` where the file system offers no
        locks (nothing is checked then).

    Raises:
        ValueError: If a live stream caches another remote in ``local_dir``.
    """
    key = os.path.abspath(local_dir)
    base = os.path.join(
        user_root(), "claims", hashlib.blake2s(key.encode(), digest_size=12).hexdigest()
    )
    mine = _create_in(base, remote)
    if mine is None:
        return None
    others = {
        other
        for other in _live_remotes(base, exclude=os.path.basename(mine.path))
        if not same_remote(other, remote)
    }
    if others:
        mine.close()
        raise ValueError(
            f"Reused local directory: {key} already caches {sorted(others)[0]!r} for a live "
            f"dataset, but this stream's remote is {remote!r}. Provide a different `local` "
            "for each remote."
        )
    return mine


def _create_in(base: str, remote: str) -> Claim | None:
    """:func:`_create` in ``base``, made again if a claimer that closed the last claim
    there removed it meanwhile."""
    for _ in range(_TRIES - 1):
        os.makedirs(base, 0o700, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            return _create(base, remote)
    os.makedirs(base, 0o700, exist_ok=True)
    return _create(base, remote)


_TRIES = 8


def _create(base: str, remote: str) -> Claim | None:
    """A locked claim file, renamed into place only once locked (never seen unlocked)."""
    name = f"{os.getpid()}-{secrets.token_hex(6)}"
    pending = os.path.join(base, f".pending-{name}")
    handle = open(pending, "w+b")  # noqa: SIM115 (held open for the stream's lifetime)
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
    except OSError:
        handle.close()
        os.remove(pending)
        return None
    final = os.path.join(base, name)
    try:
        handle.write(remote.encode())
        handle.flush()
        os.rename(pending, final)
    except BaseException:
        handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(pending)
        raise
    return Claim(handle, final, os.getpid())


def _live_remotes(base: str, exclude: str) -> set[str]:
    remotes = set()
    for name in os.listdir(base):
        if name.startswith(".") or name == exclude:
            continue
        path = os.path.join(base, name)
        try:
            with open(path, "rb") as other:
                try:
                    fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    remotes.add(other.read().decode())  # its owner lives
                else:
                    os.remove(path)  # its owner is gone
        except FileNotFoundError:
            continue  # removed by another checker meanwhile
    return remotes


_TIE = os.path.join(".streamx", "remote")


def tie_to_remote(local_dir: str, remote: str) -> None:
    """Records, once and for good, which remote ``local_dir`` caches, and refuses another.

    Claims only see live streams; this catches a second dataset pointed at a cache another
    (finished) one filled, whose ``index.json`` and shards would otherwise be read as its own.

    Raises:
        ValueError: If ``local_dir`` already caches a different remote.
    """
    path = os.path.join(local_dir, _TIE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as tie:
            cached = tie.read(1 << 16).decode("utf-8", "replace")
        if cached and not same_remote(cached, remote):
            raise ValueError(
                f"Reused local directory: {local_dir} holds a cache of {cached!r}, but this "
                f"stream's remote is {remote!r}. Provide a different `local` for each remote, "
                "or delete that directory first."
            ) from None
        return
    with os.fdopen(fd, "wb") as tie:
        tie.write(remote.encode())

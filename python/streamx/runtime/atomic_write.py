"""Replacing a file whole: a reader (or a process that outlives a ``kill -9``) sees the old
content or the new, never part of it.

Every writer goes through a temporary file in the destination's own directory (a rename
across file systems is not atomic) and :func:`os.replace`; any exception removes the
temporary. The temporary's name is the caller's choice where cleanup code recognises a
form, e.g. ``streamx.storage.download.temp_path_for``, which ``streamx cache clean``
collects; :func:`temp_beside` is the name otherwise.

The temporary is created with ``O_EXCL | O_NOFOLLOW``: in a directory others can write to
(a shared cache), a link planted at its name is refused rather than written through.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from typing import BinaryIO

__all__ = ["TempName", "atomic_file", "replacing", "temp_beside", "write_atomic"]

# The temporary's path for a destination path; it must be in the same directory.
TempName = Callable[[str], str]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def temp_beside(path: str) -> str:
    """``<path>.tmp.<pid>-<8 hex>``: unique, and its ``-`` keeps it off the core's
    decompression form ``<name>.tmp.<n>.<n>``, which stale-temp removal deletes."""
    return f"{path}.tmp.{os.getpid()}-{secrets.token_hex(4)}"


def _discard(tmp: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)


@contextlib.contextmanager
def replacing(path: str, *, temp: TempName = temp_beside) -> Iterator[str]:
    """Yields a temporary path for a writer that creates the file itself (a download, a
    copy); a clean exit renames it onto ``path``, an exception removes it."""
    tmp = temp(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


@contextlib.contextmanager
def atomic_file(
    path: str, *, temp: TempName = temp_beside, mode: int = 0o666, fsync: bool = False
) -> Iterator[BinaryIO]:
    """Yields a new binary file to stream ``path``'s content into; a clean exit renames it
    onto ``path``, an exception removes it.

    Args:
        path: The destination.
        temp: Names the temporary (see :data:`TempName`).
        mode: Permission bits of the new file, less the umask (``0o600``: private).
        fsync: Flush the content to the disk before the rename.
    """
    tmp = temp(path)
    # Opened outside the removal below: a name already taken is someone else's file.
    fd = os.open(tmp, _CREATE, mode)
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            if fsync:
                file.flush()
                os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def write_atomic(
    path: str,
    data: bytes | str,
    *,
    temp: TempName = temp_beside,
    mode: int = 0o666,
    fsync: bool = False,
) -> None:
    """Replaces ``path`` with ``data`` (a ``str`` is written as UTF-8); the arguments are
    :func:`atomic_file`'s."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_file(path, temp=temp, mode=mode, fsync=fsync) as file:
        file.write(payload)

"""Which parts of a download in progress are in place in its temporary file, published for
the readers of the node (:mod:`streamx.cache.landed_reads`).

A file fetched in parts is preallocated, so a region no part has written yet reads as zeros,
as a sample of zeros would: only the owner knows which bytes are final. It publishes them in
a *record* beside the temporary file (``.<name>.<pid>.<tag>.parts`` for
``.<name>.<pid>.<tag>.tmp``), replaced atomically (write, then rename) each time a part is
complete: its bytes all written and its length checked by its GET.

A record also carries the version its download pinned (:class:`ObjectPin`'s ``ETag``, or
``Last-Modified`` without one): a reader that read other bytes of the object under its own pin
copies landed bytes only of the same version (an object rewritten between its first GET and
the download's would otherwise mix two versions' bytes). A record of an older streamx (no
version: the ``SXLP`` form) reads as nothing landed: it cannot say which version it holds.

A record carries an *epoch*, random per attempt, and the temporary file's inode. Before an
attempt truncates the file (a retry of an object rewritten meanwhile), a record of a new epoch
with nothing landed replaces the old one; an attempt that fails removes its record before
anything else writes the file, and one that completes it removes the record once the file is
renamed into place (:func:`~streamx.storage.download.download_file`), so a reader finds the
record or the file at every moment. A process killed between the rename and the removal
leaves a record beside the complete file: readers take the file, and the next run removes the
record with the other leftovers of dead downloads. So a reader that copied bytes the record
listed, then finds the record of the same epoch again, copied final bytes: nothing rewrote
them in between. A record that is not a regular file of this user's, mode 0600, of the exact
form (torn, foreign, a symlink) reads as nothing landed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import struct
import threading
from dataclasses import dataclass

from streamx.storage.object_pin import Version

__all__ = ["Landed", "LandedRecord", "read_record", "record_path"]

# "SXLP" was the form without a version, which older streamx processes still write.
_MAGIC = b"SXLV"
# magic, epoch, device, inode, file size, spans, the version's bytes (after the spans)
_HEAD = struct.Struct("<4s8sQQQIH")
_SPAN = struct.Struct("<QQ")
# The version as recorded: its kind's letter, then its value (UTF-8); empty where the
# download pinned none. A value longer than this is not recorded: the record then reads as
# nothing landed (ETags are tens of bytes).
_KINDS = {"ETag": b"E", "Last-Modified": b"M"}
_NAMES = {letter: name for name, letter in _KINDS.items()}
_MAX_VERSION = 1024
# A record never lists more spans than this (parts that land out of order stay merged into
# fewer runs); a larger file reads as nothing landed rather than allocating what it says.
_MAX_SPANS = 4096


def record_path(tmp: str) -> str:
    """The record of the download whose temporary file is ``tmp`` (``…tmp`` -> ``…parts``)."""
    stem = tmp[: -len(".tmp")] if tmp.endswith(".tmp") else tmp
    return f"{stem}.parts"


@dataclass(frozen=True)
class Landed:
    """A record as read: its epoch, the temporary file it describes, and the byte spans
    ``[start, end)`` final in it, sorted and disjoint."""

    epoch: bytes
    device: int
    inode: int
    size: int
    spans: tuple[tuple[int, int], ...]
    # The version the download pinned; None where it pinned none (a server without ETag
    # or Last-Modified, or no answer yet).
    version: Version | None = None

    def covers(self, start: int, end: int) -> bool:
        """Whether bytes ``[start, end)`` are all final."""
        return any(s <= start and end <= e for s, e in self.spans)


class LandedRecord:
    """The owner's side: publishes the parts of one attempt as they complete.

    Args:
        tmp: The download's temporary file (created already, not yet truncated).
        size: The file's size once complete.
        ends: Each part's end, by its start.
    """

    def __init__(self, tmp: str, size: int, ends: dict[int, int]) -> None:
        self._path = record_path(tmp)
        meta = os.stat(tmp)
        self._head = (os.urandom(8), meta.st_dev, meta.st_ino, size)
        self._ends = ends
        self._spans: list[tuple[int, int]] = []
        self._version = b""
        self._lock = threading.Lock()
        self._closed = False
        self._write()  # nothing landed, of a new epoch: before the file is truncated

    def done(self, start: int, version: Version | None) -> None:
        """The part at ``start`` is in place, of the ``version`` its download pinned (None:
        none): publishes it."""
        with self._lock:
            if self._closed:
                return
            self._spans = _merge([*self._spans, (start, self._ends[start])])
            self._version = _encoded(version)
            self._write()

    def close(self) -> None:
        """Removes the record: the attempt is over (the file is renamed, removed or about
        to be written again)."""
        with self._lock:
            self._closed = True
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)

    def _write(self) -> None:
        if len(self._spans) > _MAX_SPANS or len(self._version) > _MAX_VERSION:
            return  # readers go on with the last record: it lists only final bytes too
        epoch, device, inode, size = self._head
        version = self._version
        data = _HEAD.pack(_MAGIC, epoch, device, inode, size, len(self._spans), len(version))
        data += b"".join(_SPAN.pack(s, e) for s, e in self._spans) + version
        staging = f"{self._path}.new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)  # a write of ours cut short: ours alone to remove
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(staging, flags, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(staging, self._path)


def _encoded(version: Version | None) -> bytes:
    return b"" if version is None else _KINDS[version[0]] + version[1].encode()


def _decoded(data: bytes) -> Version:
    """The version ``_encoded`` wrote (``data`` not empty).

    Raises:
        ValueError: ``data`` is not one (a UnicodeDecodeError among them).
    """
    name = _NAMES.get(data[:1])
    if name is None:
        raise ValueError(f"not a kind of version: {data[:1]!r}")
    return name, data[1:].decode()


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def read_record(path: str) -> Landed | None:
    """The record at ``path``, or None when there is none or it is not one this user's
    download wrote whole (a symlink, another user's, loose permissions, torn)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        meta = os.fstat(fd)
        most = _HEAD.size + _MAX_SPANS * _SPAN.size + _MAX_VERSION
        if not _trusted(meta) or meta.st_size > most:
            return None
        data = os.read(fd, most + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return _parse(data)


def _trusted(meta: os.stat_result) -> bool:
    return (
        stat.S_ISREG(meta.st_mode)
        and meta.st_uid == os.geteuid()
        and stat.S_IMODE(meta.st_mode) & 0o077 == 0
    )


def _parse(data: bytes) -> Landed | None:
    if len(data) < _HEAD.size:
        return None
    magic, epoch, device, inode, size, count, length = _HEAD.unpack_from(data)
    end = _HEAD.size + count * _SPAN.size
    if magic != _MAGIC or count > _MAX_SPANS or len(data) != end + length:
        return None  # an older streamx's record ("SXLP") among them: no version
    spans = tuple(_SPAN.unpack_from(data, _HEAD.size + i * _SPAN.size) for i in range(count))
    ordered = all(s < e for s, e in spans) and all(
        a[1] < b[0] for a, b in itertools.pairwise(spans)
    )
    if not ordered or (spans and spans[-1][1] > size):
        return None
    try:
        version = _decoded(data[end:]) if length else None
    except ValueError:
        return None
    return Landed(epoch, device, inode, size, spans, version)

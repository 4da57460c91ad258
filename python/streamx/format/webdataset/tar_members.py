"""The regular files of a tar archive, found by reading its headers only.

A tar is a run of 512-byte headers, each followed by its member's data padded to 512 bytes.
Reading the headers alone gives every member's name, offset and size, so samples can later
be read by range without unpacking the archive. The scan runs in the Rust core
(``streamx._core``): :func:`scan_file` reads a local tar in place, :func:`iter_members`
asks ``read(start, length)`` for windows of the archive. A round trip costs about what a
few MiB of transfer does, so the scan reads on through bodies smaller than ``SKIP``, in
windows that double while it does (one round trip covers the headers of many small
members), and jumps over a larger body, starting a small window at the next header (that
body is never read).

Handled: ustar names with a prefix, GNU long names (``L``), pax ``path`` and ``size``
records (``x``), base-256 sizes. Skipped: directories, links, devices and global pax
headers. Anything else that does not parse is a :class:`CorruptShardError` naming the tar
and the offset. Names that are not UTF-8 are decoded with ``surrogateescape``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from streamx import _core

__all__ = [
    "Member",
    "iter_members",
    "iter_rows",
    "scan_file",
    "scan_file_rows",
    "scan_file_table",
    "scan_members",
]

BLOCK = 512
# Bytes per read: from MIN_WINDOW after a skipped body, doubling up to MAX_WINDOW while the
# scan reads on. A gap of more than SKIP bytes to the next header is jumped.
MIN_WINDOW = 64 << 10
MAX_WINDOW = 8 << 20
SKIP = 4 << 20


@dataclass(frozen=True)
class Member:
    """A regular file in the archive: its path and where its bytes lie."""

    name: str
    offset: int
    size: int


def scan_file(path: str | os.PathLike[str], size: int, shown: str) -> list[Member]:
    """The regular files of the local tar at ``path``, read in place (the GIL released).

    Args:
        path: The tar.
        size: Its size in bytes (as listed: a file shorter than that is truncated).
        shown: The archive's name, for errors.

    Raises:
        CorruptShardError: As :func:`iter_members`.
        OSError: If the file cannot be read.
    """
    return [Member(*row) for row in scan_file_rows(path, size, shown)]


def scan_file_rows(
    path: str | os.PathLike[str], size: int, shown: str
) -> list[tuple[str, int, int]]:
    """:func:`scan_file`'s members as ``(name, offset, size)`` rows (no object each)."""
    return _core.scan_tar_file(path, size, shown, MIN_WINDOW, MAX_WINDOW, SKIP)


def scan_file_table(
    path: str | os.PathLike[str], size: int, shown: str
) -> tuple[int, int, int, bytes] | None:
    """The member table body of the local tar at ``path`` (samples, fields, text bytes and
    the body; see :func:`~streamx.format.webdataset.member_table.table_from_body`), grouped
    in the core with the GIL released; ``None`` where its names need the Python grouping
    (:func:`~streamx.format.webdataset.samples.group_columns`).

    Raises:
        CorruptShardError: As :func:`iter_members`.
        OSError: If the file cannot be read.
    """
    return _core.scan_tar_table(path, size, shown, MIN_WINDOW, MAX_WINDOW, SKIP)


def scan_members(read: Callable[[int, int], bytes], size: int, shown: str) -> list[Member]:
    """The archive's regular files in order: all of :func:`iter_members` (same arguments
    and errors)."""
    return list(iter_members(read, size, shown))


def iter_members(read: Callable[[int, int], bytes], size: int, shown: str) -> Iterator[Member]:
    """The archive's regular files in order, each as soon as its header is read (a scan
    that stops early reads only the headers before the members it wanted).

    Args:
        read: ``read(start, length)`` returns the archive's bytes ``[start, start + length)``.
        size: The archive's size in bytes.
        shown: The archive's name, for errors.

    Raises:
        CorruptShardError: If the file is not a tar, a header is corrupt, or a member runs
            past the end of the file (a truncated archive).
        Exception: Whatever ``read`` raises, unchanged (the scan is then over).
    """
    for name, offset, length in iter_rows(read, size, shown):
        yield Member(name, offset, length)


def iter_rows(
    read: Callable[[int, int], bytes], size: int, shown: str
) -> Iterator[tuple[str, int, int]]:
    """:func:`iter_members`'s members as ``(name, offset, size)`` rows."""
    return _core.TarMembers(read, size, shown, MIN_WINDOW, MAX_WINDOW, SKIP)

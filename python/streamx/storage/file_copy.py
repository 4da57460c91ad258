"""Bytes moved between two open files at given offsets, in the kernel where it can."""

from __future__ import annotations

import contextlib
import os

__all__ = ["copy_between"]


def copy_between(src: int, dst: int, length: int, src_at: int, dst_at: int, shown: str) -> None:
    """Copies ``length`` bytes from offset ``src_at`` of ``src`` to offset ``dst_at`` of
    ``dst``: by ``copy_file_range`` (no bytes through Python) where the file systems allow,
    else through a buffer of at most 1 MiB.

    Raises:
        OSError: If ``src`` ends before ``length`` bytes, naming ``shown`` (what it holds).
    """
    done = 0
    with contextlib.suppress(OSError):
        while done < length:
            moved = os.copy_file_range(src, dst, length - done, src_at + done, dst_at + done)
            if not moved:
                break
            done += moved
    while done < length:
        data = os.pread(src, min(length - done, 1 << 20), src_at + done)
        if not data:
            raise OSError(f"{shown} ended at byte {src_at + done}, {length - done} bytes short")
        view = memoryview(data)
        while view:
            written = os.pwrite(dst, view, dst_at + done)
            view, done = view[written:], done + written

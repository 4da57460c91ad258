"""A Parquet file as pyarrow sees it, made of only some of its byte ranges."""

from __future__ import annotations

import io
from typing import Any

__all__ = ["RemappedFile", "read_row_group"]


class RemappedFile(io.RawIOBase):
    """The source file as pyarrow sees it: the cached chunks at their original offsets,
    zeros elsewhere (pyarrow reads only the chunks of the columns asked for)."""

    def __init__(self, data: bytes, chunks: list[list[int]], size: int) -> None:
        self._data, self._size, self._pos = data, size, 0
        self._view = memoryview(data)
        self._spans: list[tuple[int, int, int]] = []
        at = 0
        for start, length in chunks:
            self._spans.append((int(start), int(length), at))
            at += int(length)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = base + offset
        return self._pos

    def read(self, n: int = -1) -> bytes | memoryview:  # type: ignore[override]
        n = self._size - self._pos if n < 0 else min(n, max(self._size - self._pos, 0))
        for start, length, at in self._spans:
            if start <= self._pos and self._pos + n <= start + length:
                # Within one cached chunk (pyarrow reads a column chunk at a time): a view,
                # no copy (pyarrow takes any buffer; a 6 MB chunk decodes a quarter faster).
                begin = at + self._pos - start
                self._pos += n
                return self._view[begin : begin + n]
        out = bytearray(n)
        for start, length, at in self._spans:
            lo, hi = max(start, self._pos), min(start + length, self._pos + n)
            if lo < hi:
                out[lo - self._pos : hi - self._pos] = self._data[at + lo - start : at + hi - start]
        self._pos += n
        return bytes(out)


def read_row_group(
    source: io.IOBase, md: Any, number: int, columns: list[str] | None = None
) -> Any:
    """Row group ``number``'s ``columns`` (all if ``None``) of ``source``, a Python file
    object (a :class:`RemappedFile`, or the converter's fsspec file), as an Arrow table read
    and decoded on this thread; ``md`` is its footer, or ``None`` to read it.

    pyarrow holds the ``bytes`` that the file's ``read`` returns, and frees them with the
    GIL. With pre-buffering (its I/O threads) or ``use_threads`` (its CPU threads), the last
    reference can drop on one of Arrow's threads just after the read returns; if the
    interpreter is finalizing by then, that thread's GIL request ends it with
    ``pthread_exit``, whose unwinding through Arrow's ``noexcept`` destructors is
    ``std::terminate`` and aborts the process at exit. A ``RemappedFile``'s bytes are
    already in memory, so pre-buffering gains nothing there."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(source, metadata=md, pre_buffer=False)
    return parquet.read_row_group(number, columns=columns, use_threads=False)

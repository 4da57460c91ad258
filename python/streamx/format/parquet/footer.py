"""A Parquet file's footer, fetched by range from its end and cached beside the data."""

from __future__ import annotations

import hashlib
import io
import os
import struct
from typing import Any

from streamx.exceptions import CorruptShardError
from streamx.format.parquet.footer_bounds import check_row_counts
from streamx.format.parquet.footer_cache import KEPT, CachedFooter
from streamx.format.remote_files import RemoteFile, read_range
from streamx.runtime.atomic_write import write_atomic

__all__ = ["CachedFooter", "cached_footer", "footer_name", "load_footer", "parse_footer"]

_MAGIC = b"PAR1"
# One GET usually holds the whole footer; a larger one takes a second GET.
_FIRST_READ = 32 << 10


def footer_name(file: RemoteFile) -> str:
    """The cached footer's basename: a digest of the URL, size and version, so a changed
    source file never reuses an old footer."""
    key = f"{file.url}\0{file.size}\0{file.version}".encode()
    return hashlib.sha1(key).hexdigest()[:20] + ".footer"


def parse_footer(tail: bytes, shown: str) -> Any:
    """The ``pyarrow.parquet.FileMetaData`` in ``tail`` (the file's last bytes).

    Raises:
        CorruptShardError: Naming ``shown``, if the bytes are not a Parquet footer or its
            row counts are out of bounds.
    """
    import pyarrow.parquet as pq

    if tail[-4:] != _MAGIC:
        raise CorruptShardError(f"{shown} is not a Parquet file: it does not end with PAR1")
    if len(tail) < 12:
        raise CorruptShardError(f"{shown}: the Parquet footer is empty")
    try:
        md = pq.read_metadata(io.BytesIO(tail))
    except Exception as err:  # pyarrow raises OSError or ArrowInvalid
        raise CorruptShardError(f"{shown}: the Parquet footer does not parse ({err})") from err
    check_row_counts(md, shown)
    return md


def _fetch_tail(file: RemoteFile, timeout: float, retry: int) -> bytes:
    if file.size < 12:
        raise CorruptShardError(
            f"{file.url} is not a Parquet file: {file.size} bytes, less than a footer"
        )
    first = min(file.size, _FIRST_READ)
    tail = read_range(file.url, file.size - first, first, file.size, timeout, retry)
    if tail[-4:] != _MAGIC:
        raise CorruptShardError(f"{file.url} is not a Parquet file: it does not end with PAR1")
    (length,) = struct.unpack("<I", tail[-8:-4])
    if length + 12 > file.size:
        raise CorruptShardError(
            f"{file.url}: truncated Parquet footer ({length} bytes announced, the file is "
            f"{file.size} bytes)"
        )
    if length + 8 > len(tail):
        more = length + 8 - len(tail)
        start = file.size - len(tail) - more
        tail = read_range(file.url, start, more, file.size, timeout, retry) + tail
    return tail[-(length + 8) :]


def load_footer(
    file: RemoteFile, folder: str, timeout: float, retry: int
) -> tuple[CachedFooter, str]:
    """The file's parsed footer and its cached footer's path, fetched once (atomically
    written) and parsed once per process: the parse is kept for :func:`cached_footer`.

    Raises:
        CorruptShardError: If the file is not Parquet, its footer is truncated, or its row
            counts are out of bounds.
    """
    path = os.path.join(folder, footer_name(file))
    if os.path.exists(path):
        return cached_footer(path, file.url), path
    tail = _fetch_tail(file, timeout, retry)
    found = _parsed(tail, file.url)  # before the write: a bad footer is never cached
    os.makedirs(folder, exist_ok=True)
    write_atomic(path, tail)
    return KEPT.get(path, lambda: found), path


def cached_footer(path: str, shown: str) -> CachedFooter:
    """The footer cached at ``path`` by :func:`load_footer`, parsed once per process while
    it stays in :data:`.footer_cache.KEPT` (read from ``path`` again once sent out: its name
    is a digest of its file's URL, size and version, so a changed file's footer lies at
    another path); ``shown``: its file, as errors name it.

    Raises:
        FileNotFoundError: Naming ``shown``, if the cached footer left the disk.
        CorruptShardError: Naming ``shown``, if the bytes are not a Parquet footer or its
            row counts are out of bounds.
    """
    return KEPT.get(path, lambda: _read(path, shown))


def _read(path: str, shown: str) -> CachedFooter:
    try:
        with open(path, "rb") as f:
            tail = f.read()
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f"{shown}: its cached footer {path} is gone from the cache directory; "
            "build the dataset again"
        ) from err
    return _parsed(tail, shown)


def _parsed(tail: bytes, shown: str) -> CachedFooter:
    # The tail ends with the FileMetaData's length and the magic (checked by the parse).
    return CachedFooter(parse_footer(tail, shown), tail[:-8])

"""A WebDataset source's tars as shard entries, in the columns ``ShardList`` reads.

Each tar is one shard. Its member table (the samples, their fields and byte ranges) is
cached under ``folder/TABLES`` named by a digest of the tar's URL, size and version: a tar
that changed on the server gets a new table and a new cached copy, never a mix of old and
new members. The table is read from the tar's headers (in place where the tar is local,
else by range) when the dataset is built; or, where a wids shard index gives the sample
counts (:mod:`~streamx.format.webdataset.shard_index`), from the tar (or its cached copy)
on first use (or by range from the remote tar, as far as the samples read before that copy
is here: :mod:`~streamx.format.webdataset.tar_ranges`).

Where every tar is a local file, the tars are read where they lie (``in_place``: the
shard's file is the tar itself): nothing but the tables is written to ``folder``, and each
read checks that the tar still has the size and mtime its table was read at.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streamx.exceptions import CorruptShardError
from streamx.format.remote_files import RemoteFile, list_files, read_range
from streamx.format.unit_index import UnitIndex
from streamx.format.webdataset.member_table import (
    MAGIC,
    TableError,
    decode_table,
    encode_columns,
    encode_table,
    read_count,
    table_from_body,
)
from streamx.format.webdataset.samples import (
    Field,
    TableColumns,
    TarSample,
    group_columns,
)
from streamx.format.webdataset.shard_index import read_shard_index
from streamx.format.webdataset.tar_members import iter_rows, scan_file_rows, scan_file_table
from streamx.location import Location
from streamx.runtime.atomic_write import write_atomic

__all__ = [
    "MANIFEST",
    "TABLES",
    "TarShard",
    "WebDatasetIndex",
    "build_index",
    "file_columns",
    "file_table",
    "load_table",
    "save_bytes",
    "save_table",
    "scanned_table",
    "table_count",
]

MANIFEST = "streamx-wds.json"
TABLES = "streamx-wds"
_SCAN_THREADS = 8  # tars whose headers are read at once (each a few ranged GETs)


@dataclass(frozen=True)
class TarShard:
    """One tar: its source, its samples' count, and the names of its cached files."""

    file: RemoteFile
    samples: int
    basename: str
    table: str  # basename under TABLES
    decode: bool
    images: bool
    timeout: float = 60.0  # what each GET of the tar may take (``download_timeout``)
    retry: int = 2  # attempts of each GET (``download_retry``)
    in_place: bool = False  # ``basename`` is the local tar itself, read where it lies

    @property
    def rows(self) -> int:
        return self.samples

    @property
    def nbytes(self) -> int:
        return self.file.size


class WebDatasetIndex(UnitIndex[TarShard]):
    """Tars as shards (format ``wds``); ``in_place``: every tar is a local file, read where
    it lies (nothing to copy into the cache)."""

    format = "wds"

    def __init__(self, units: Sequence[TarShard], in_place: bool = False) -> None:
        super().__init__(units)
        self.in_place = in_place

    def extra(self, unit: TarShard) -> dict[str, Any]:
        return {
            "source": unit.file.url,
            "source_size": unit.file.size,
            "source_version": unit.file.version,
            "table": unit.table,
            "decode": unit.decode,
            "images": unit.images,
            "timeout": unit.timeout,
            "retry": unit.retry,
            "in_place": unit.in_place,
        }


def table_name(file: RemoteFile) -> str:
    """A digest of the URL, size and version: a changed tar never reuses an old table."""
    key = f"{file.url}\0{file.size}\0{file.version}".encode()
    return hashlib.sha1(key).hexdigest()[:20] + ".members"


def _is_local(file: RemoteFile) -> bool:
    return not Location.parse(file.url).is_remote


def _shard_file(file: RemoteFile, name: str, in_place: bool) -> str:
    """The shard's file: the local tar itself (an absolute path, which ``local/split``
    joined to it leaves as it is), or its copy's name in the cache."""
    if in_place:
        return os.path.abspath(Location.parse(file.url).local_path)
    return f"{_stem(file.url)}-{name[:12]}.tar"


def _stem(url: str) -> str:
    name = os.path.basename(url.rstrip("/")).removesuffix(".tar")
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40] or "shard"


def file_columns(path: str, file: RemoteFile) -> TableColumns:
    """The samples of ``file`` from its headers, read in place from the local tar ``path``
    (``file`` itself or its cached copy)."""
    return group_columns(scan_file_rows(path, file.size, file.url), file.url)


def _meta(file: RemoteFile) -> dict[str, object]:
    return {"url": file.url, "size": file.size, "version": file.version}


def file_table(path: str, file: RemoteFile) -> bytes:
    """The member table of ``file`` (its binary form), from the headers of the local tar
    ``path`` (``file`` itself or its cached copy): scanned and grouped in the core, with no
    Python object per member, or by :func:`file_columns` where its names need that."""
    found = scan_file_table(path, file.size, file.url)
    if found is None:
        return encode_columns(file_columns(path, file), _meta(file))
    return table_from_body(*found, _meta(file))


def scanned_table(file: RemoteFile, timeout: float, retry: int) -> bytes:
    """The member table of ``file`` (its binary form) from its headers: read in place where
    it is local, else by range (a few GETs of growing windows; large bodies are jumped)."""
    where = Location.parse(file.url)
    if not where.is_remote:
        return file_table(where.local_path, file)

    def read(start: int, length: int) -> bytes:
        return read_range(file.url, start, length, file.size, timeout, retry)

    columns = group_columns(iter_rows(read, file.size, file.url), file.url)
    return encode_columns(columns, _meta(file))


def save_bytes(path: str, data: bytes) -> None:
    """Writes a member table's bytes (atomically)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, data)


def save_table(path: str, file: RemoteFile, samples: Sequence[TarSample]) -> None:
    """Writes a member table (atomically), in the binary form of
    :mod:`~streamx.format.webdataset.member_table`."""
    save_bytes(path, encode_table(samples, _meta(file)))


def _corrupt(path: str, shown: str, err: Exception) -> CorruptShardError:
    return CorruptShardError(f"The cached member table {path} of {shown} is corrupt: {err}")


def load_table(path: str, shown: str, size: int) -> Sequence[TarSample]:
    """A cached member table of the ``size``-byte tar ``shown`` (binary; a JSON table of
    an older streamx is still read).

    Raises:
        CorruptShardError: If the table does not parse or contradicts the tar (naming it
            and the tar).
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        if data.startswith(MAGIC):
            return decode_table(data, size)
        rows = json.loads(data)["samples"]
        return [
            TarSample(str(key), tuple(Field(str(n), int(o), int(s)) for n, o, s in fields))
            for key, fields in rows
        ]
    except (ValueError, KeyError, TypeError) as err:  # TableError is a ValueError
        raise _corrupt(path, shown, err) from err


def table_count(path: str, shown: str, size: int) -> int:
    """The number of samples of a cached member table (its head alone, where binary).

    Raises:
        CorruptShardError: As :func:`load_table`.
    """
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + 32)
    if not head.startswith(MAGIC):
        return len(load_table(path, shown, size))
    try:
        return read_count(head)
    except TableError as err:
        raise _corrupt(path, shown, err) from err


def _table(file: RemoteFile, folder: str, timeout: float, retry: int) -> tuple[str, int]:
    """The tar's table (read from its headers on first use); returns its name and count."""
    name = table_name(file)
    path = os.path.join(folder, TABLES, name)
    if os.path.exists(path):
        return name, table_count(path, file.url, file.size)
    data = scanned_table(file, timeout, retry)
    save_bytes(path, data)
    return name, read_count(data)


def build_index(
    source: str, folder: str, timeout: float, retry: int, decode: bool, images: bool
) -> WebDatasetIndex:
    """Lists ``source``'s tars and counts each one's samples, one shard per tar.

    ``source`` is a tar, a directory of them, a glob, brace notation, or a wids shard index
    (``.json``), whose counts are taken as given.

    Raises:
        FileNotFoundError: If ``source`` holds no ``.tar`` file.
        CorruptShardError: If a file is not a tar, or is truncated, naming it.
        CorruptIndexError: If a shard index does not parse or contradicts a tar's size.
    """
    listed: list[tuple[RemoteFile, str, int]]
    if source.endswith(".json"):
        shards = read_shard_index(source, timeout, retry)
        listed = [(s.file, table_name(s.file), s.samples) for s in shards]
        files = [s.file for s in shards]
    else:
        files = list_files(source, ".tar", "tar")
        with ThreadPoolExecutor(min(_SCAN_THREADS, len(files))) as pool:
            tables = list(pool.map(lambda f: _table(f, folder, timeout, retry), files))
        listed = [(f, name, count) for f, (name, count) in zip(files, tables)]
    # Local tars are read where they lie, all or none: a stream's shards are either the
    # user's own files (never counted or evicted) or copies the cache owns.
    in_place = all(_is_local(file) for file in files)
    tars = [
        TarShard(
            file,
            count,
            _shard_file(file, name, in_place),
            name,
            decode,
            images,
            timeout,
            retry,
            in_place,
        )
        for file, name, count in listed
        if count > 0
    ]
    _write_manifest(folder, source, files)
    return WebDatasetIndex(tars, in_place)


def _write_manifest(folder: str, source: str, files: Sequence[RemoteFile]) -> None:
    os.makedirs(folder, exist_ok=True)
    body = {
        "source": source,
        "files": [{"url": f.url, "size": f.size, "version": f.version} for f in files],
    }
    write_atomic(os.path.join(folder, MANIFEST), json.dumps(body))

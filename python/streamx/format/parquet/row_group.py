"""One row group: its column chunks fetched by range into one local file, and decoded into
an Arrow table."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo
from streamx.format.parquet.fetch import Fetch, fetch_chunks
from streamx.format.parquet.footer import CachedFooter, cached_footer
from streamx.format.parquet.index import FOOTERS
from streamx.format.parquet.local_source import check_source, read_chunks
from streamx.format.parquet.remapped import RemappedFile, read_row_group
from streamx.format.remote_files import RemoteFile, check_unchanged

__all__ = [
    "decode_table",
    "fetch_row_group",
    "footer",
    "kept_rows",
    "local_bytes",
    "parsed_footer",
    "where",
]


def where(shard: ShardInfo) -> str:
    """The row group as errors name it: its file and number."""
    return f"{shard.extra['source']} row group {shard.extra['row_group']}"


def fetch_row_group(shard: ShardInfo, timeout: float, retry: int) -> int:
    """Writes the row group's projected column chunks, one after the other, to its local
    file (atomically), fetched as parallel ranged parts (:mod:`.fetch`); returns the bytes
    written.

    Raises:
        StaleIndexError: If the source file changed since its footer was read.
    """
    extra = shard.extra
    named = where(shard)
    if extra.get("in_place"):  # a local file read where it lies: nothing to copy
        check_source(shard, named)
        return 0
    file = RemoteFile(extra["source"], int(extra["source_size"]), extra["source_version"])
    check_unchanged(file, named)
    chunks = [(int(start), int(length)) for start, length in extra["chunks"]]
    return fetch_chunks(
        Fetch(file, chunks, shard.local_path(shard.raw_data), named), timeout, retry
    )


def footer(shard: ShardInfo) -> tuple[str, Any]:
    """The row group's file's cached footer: its path and ``FileMetaData``."""
    path, parsed = parsed_footer(shard)
    return path, parsed.metadata


def parsed_footer(shard: ShardInfo) -> tuple[str, CachedFooter]:
    """The row group's file's cached footer: its path and its parse (made once per process:
    :func:`.footer.cached_footer`), with its Arrow schema."""
    extra = shard.extra
    path = os.path.join(shard.dirname, shard.split, FOOTERS, extra["footer"])
    return path, cached_footer(path, extra["source"])


def local_bytes(shard: ShardInfo) -> bytes:
    """The row group's local file: its read column chunks, one after the other (read from
    the source itself where it is read in place: :mod:`.local_source`).

    Raises:
        FileNotFoundError: If it is not on disk.
        CorruptShardError: If it is not as long as the index says.
        StaleIndexError: If a source read in place changed since its footer was read.
    """
    if shard.extra.get("in_place"):
        return read_chunks(shard, where(shard))
    with open(shard.local_path(shard.raw_data), "rb") as f:
        data = f.read()
    if len(data) != shard.raw_data.bytes:
        raise CorruptShardError(
            f"{where(shard)}: its cached copy is {len(data)} bytes, not {shard.raw_data.bytes}"
        )
    return data


def decode_table(shard: ShardInfo, data: bytes | None = None) -> Any:
    """The row group as an Arrow table: its read columns, cast and filtered; ``data``: its
    :func:`local_bytes`, when the caller has them.

    Raises:
        FileNotFoundError: If its local file is not on disk.
        CorruptShardError: If the local file is not the row group's bytes.
    """
    extra = shard.extra
    md = footer(shard)[1]
    data = local_bytes(shard) if data is None else data
    source = RemappedFile(data, extra["chunks"], int(extra["source_size"]))
    try:
        table = read_row_group(source, md, int(extra["row_group"]), list(extra["read_columns"]))
    except Exception as err:  # pyarrow's OSError / ArrowInvalid on bad bytes
        raise CorruptShardError(
            f"{where(shard)} does not decode ({err}); the file may have changed on the server"
        ) from err
    if extra.get("cast"):
        table = _cast(table, extra["cast"], shard)
    if extra.get("kept"):
        table = table.take(kept_rows(shard))
    if table.num_rows != shard.samples:
        raise CorruptShardError(
            f"{where(shard)}: {table.num_rows} rows decoded, the footer says {shard.samples}"
        )
    return table


_KEPT: dict[str, Any] = {}


def kept_rows(shard: ShardInfo) -> Any:
    """The row numbers a row filter keeps in this row group (cached per process)."""
    path = os.path.join(shard.dirname, shard.split, FOOTERS, shard.extra["kept"])
    found = _KEPT.get(path)
    if found is None:
        with np.load(path) as arrays:
            found = _KEPT[path] = {name: arrays[name] for name in arrays.files}
    return found[f"rg{shard.extra['row_group']}"]


def _cast(table: Any, encoded: str, shard: ShardInfo) -> Any:
    """``table`` as the unified schema: columns promoted, a column it lacks all nulls."""
    import base64

    import pyarrow as pa

    target = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))
    try:
        arrays = [
            table.column(f.name).cast(f.type)
            if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type)
            for f in target
        ]
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise CorruptShardError(
            f"{where(shard)} does not cast to the unified schema: {err}"
        ) from err
    return pa.Table.from_arrays(arrays, schema=target)

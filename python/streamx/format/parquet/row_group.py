"""One row group: its column chunks fetched by range into one local file, and decoded."""

from __future__ import annotations

import io
import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo
from streamx.format.parquet.footer import parse_footer
from streamx.format.parquet.index import FOOTERS
from streamx.format.parquet.remapped import RemappedFile
from streamx.format.remote_files import RemoteFile, check_unchanged, read_range
from streamx.runtime.atomic_write import atomic_file

__all__ = ["RowGroupReader", "fetch_row_group"]

_CHUNK_THREADS = 8  # a row group's column chunks fetched at once


def _where(shard: ShardInfo) -> str:
    return f"{shard.extra['source']} row group {shard.extra['row_group']}"


def fetch_row_group(shard: ShardInfo, timeout: float, retry: int) -> int:
    """Writes the row group's projected column chunks, one after the other, to its local
    file (atomically); returns the bytes written.

    Raises:
        StaleIndexError: If the source file changed since its footer was read.
    """
    extra = shard.extra
    url, size, version = extra["source"], int(extra["source_size"]), extra["source_version"]
    check_unchanged(RemoteFile(url, size, version), _where(shard))
    path = shard.local_path(shard.raw_data)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    chunks = [(int(start), int(length)) for start, length in extra["chunks"]]

    def fetch(chunk: tuple[int, int]) -> bytes:
        return read_range(url, chunk[0], chunk[1], size, timeout, retry)

    written = 0
    # The chunks of a projection lie apart: fetched together, one round trip's wait in all.
    threads = min(_CHUNK_THREADS, max(len(chunks), 1))
    with ThreadPoolExecutor(threads) as pool, atomic_file(path) as out:
        for data in pool.map(fetch, chunks):
            out.write(data)
            written += len(data)
    return written


_FOOTERS: dict[str, Any] = {}
_DECODED: OrderedDict[str, list[tuple[str, list[Any]]]] = OrderedDict()
_KEEP_DECODED = 4


def _metadata(path: str, shown: str) -> Any:
    md = _FOOTERS.get(path)
    if md is None:
        with open(path, "rb") as f:
            md = _FOOTERS[path] = parse_footer(f.read(), shown)
    return md


def _python_column(column: Any) -> list[Any]:
    """Numbers and strings as Python values, lists as numpy arrays, binary as bytes."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        inner = kind.value_type
        numeric = pa.types.is_integer(inner) or pa.types.is_floating(inner)
        array = column.combine_chunks()
        if numeric and array.null_count == 0 and array.values.null_count == 0:
            return _numeric_lists(array, pa.types.is_fixed_size_list(kind))
        return [None if v is None else np.asarray(v) for v in column.to_pylist()]
    return list(column.to_pylist())


def _numeric_lists(array: Any, fixed: bool) -> list[Any]:
    """Each row's list as a numpy view into one array of the column's values."""
    if fixed:
        values = np.asarray(array.flatten().to_numpy(zero_copy_only=False))
        return list(values.reshape(len(array), array.type.list_size))
    values = np.asarray(array.values.to_numpy(zero_copy_only=False))
    offsets = array.offsets.to_numpy().tolist()
    return [values[offsets[i] : offsets[i + 1]] for i in range(len(array))]


def _decode(shard: ShardInfo) -> list[tuple[str, list[Any]]]:
    import pyarrow.parquet as pq

    extra = shard.extra
    footer = os.path.join(shard.dirname, shard.split, FOOTERS, extra["footer"])
    md = _metadata(footer, extra["source"])
    with open(shard.local_path(shard.raw_data), "rb") as f:
        data = f.read()
    if len(data) != shard.raw_data.bytes:
        raise CorruptShardError(
            f"{_where(shard)}: its cached copy is {len(data)} bytes, not {shard.raw_data.bytes}"
        )
    source = RemappedFile(data, extra["chunks"], int(extra["source_size"]))
    try:
        table = pq.ParquetFile(source, metadata=md).read_row_group(
            int(extra["row_group"]), columns=list(extra["read_columns"])
        )
    except Exception as err:  # pyarrow's OSError / ArrowInvalid on bad bytes
        raise CorruptShardError(
            f"{_where(shard)} does not decode ({err}); the file may have changed on the server"
        ) from err
    if extra.get("cast"):
        table = _cast(table, extra["cast"], shard)
    if extra.get("kept"):
        table = table.take(_kept(shard))
    if table.num_rows != shard.samples:
        raise CorruptShardError(
            f"{_where(shard)}: {table.num_rows} rows decoded, the footer says {shard.samples}"
        )
    images = set(extra.get("images") or ())
    return [
        (name, _images(values, shard) if name in images else values)
        for name in table.column_names
        for values in [_python_column(table.column(name))]
    ]


_KEPT: dict[str, Any] = {}


def _kept(shard: ShardInfo) -> Any:
    """The row numbers a row filter keeps in this row group (cached per process)."""
    path = os.path.join(shard.dirname, shard.split, FOOTERS, shard.extra["kept"])
    found = _KEPT.get(path)
    if found is None:
        with np.load(path) as arrays:
            found = _KEPT[path] = {name: arrays[name] for name in arrays.files}
    return found[f"rg{shard.extra['row_group']}"]


def _images(values: list[Any], shard: ShardInfo) -> list[Any]:
    """Encoded image bytes as PIL images (decoded lazily by PIL, on first pixel access)."""
    from PIL import Image, UnidentifiedImageError

    out: list[Any] = []
    for row, data in enumerate(values):
        try:
            out.append(None if data is None else Image.open(io.BytesIO(data)))
        except UnidentifiedImageError as err:
            raise CorruptShardError(f"{_where(shard)}, row {row}: not an image ({err})") from err
    return out


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
            f"{_where(shard)} does not cast to the unified schema: {err}"
        ) from err
    return pa.Table.from_arrays(arrays, schema=target)


class RowGroupReader:
    """Samples of one row-group shard; the last few decoded row groups are kept."""

    def __init__(self, shard: ShardInfo) -> None:
        self.shard = shard
        path = shard.local_path(shard.raw_data)
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        # Two datasets over one cache may decode the same file differently.
        self._key = f"{path}\0{shard.extra.get('images')}\0{shard.extra.get('cast')}"

    def get(self, index: int) -> dict[str, Any]:
        columns = _DECODED.get(self._key)
        if columns is None:
            columns = _DECODED[self._key] = _decode(self.shard)
            while len(_DECODED) > _KEEP_DECODED:
                _DECODED.popitem(last=False)
        else:
            _DECODED.move_to_end(self._key)
        return {name: values[index] for name, values in columns}

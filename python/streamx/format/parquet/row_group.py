"""One row group: its column chunks fetched by range into one local file, and decoded."""

from __future__ import annotations

import functools
import io
import os
from collections import OrderedDict
from typing import Any

import numpy as np

from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo
from streamx.format.parquet.arrow_numpy import numpy_values
from streamx.format.parquet.fetch import Fetch, fetch_chunks
from streamx.format.parquet.footer import parse_footer
from streamx.format.parquet.index import FOOTERS
from streamx.format.parquet.remapped import RemappedFile, read_row_group
from streamx.format.remote_files import RemoteFile, check_unchanged

__all__ = [
    "DecodedRowGroup",
    "RowGroupReader",
    "decoded",
    "decoded_key",
    "fetch_row_group",
    "numeric_lists",
    "python_column",
]


def _where(shard: ShardInfo) -> str:
    return f"{shard.extra['source']} row group {shard.extra['row_group']}"


def fetch_row_group(shard: ShardInfo, timeout: float, retry: int) -> int:
    """Writes the row group's projected column chunks, one after the other, to its local
    file (atomically), fetched as parallel ranged parts (:mod:`.fetch`); returns the bytes
    written.

    Raises:
        StaleIndexError: If the source file changed since its footer was read.
    """
    extra = shard.extra
    file = RemoteFile(extra["source"], int(extra["source_size"]), extra["source_version"])
    where = _where(shard)
    check_unchanged(file, where)
    chunks = [(int(start), int(length)) for start, length in extra["chunks"]]
    return fetch_chunks(
        Fetch(file, chunks, shard.local_path(shard.raw_data), where), timeout, retry
    )


_FOOTERS: dict[str, Any] = {}
_DECODED: OrderedDict[str, DecodedRowGroup] = OrderedDict()
_KEEP_DECODED = 4


def _metadata(path: str, shown: str) -> Any:
    md = _FOOTERS.get(path)
    if md is None:
        with open(path, "rb") as f:
            md = _FOOTERS[path] = parse_footer(f.read(), shown)
    return md


def python_column(column: Any) -> list[Any]:
    """Numbers and strings as Python values, lists as numpy arrays, binary as bytes."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        array = column.combine_chunks()
        if numeric_lists(array):
            return _numeric_lists(array, pa.types.is_fixed_size_list(kind))
        return [None if v is None else _as_array(v) for v in column.to_pylist()]
    return list(column.to_pylist())


def _as_array(values: list[Any]) -> Any:
    """A list as numpy makes it; a ragged one (lists of different lengths inside) as an
    object array of its items, each inner list an array in turn."""
    try:
        return np.asarray(values)
    except ValueError:
        out = np.empty(len(values), dtype=object)
        out[:] = [_as_array(v) if isinstance(v, list) else v for v in values]
        return out


def numeric_lists(array: Any) -> bool:
    """Whether a list array's rows decode as numpy views (numbers, no null anywhere)."""
    import pyarrow as pa

    inner = array.type.value_type
    numeric = pa.types.is_integer(inner) or pa.types.is_floating(inner)
    return bool(numeric and array.null_count == 0 and array.values.null_count == 0)


def _numeric_lists(array: Any, fixed: bool) -> list[Any]:
    """Each row's list as a numpy view into one array of the column's values."""
    if fixed:
        values = numpy_values(array.flatten())
        return list(values.reshape(len(array), array.type.list_size))
    values = numpy_values(array.values)
    offsets = numpy_values(array.offsets).tolist()
    return [values[offsets[i] : offsets[i + 1]] for i in range(len(array))]


def _decode(shard: ShardInfo) -> Any:
    """The row group as an Arrow table: its read columns, cast and filtered."""

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
        table = read_row_group(source, md, int(extra["row_group"]), list(extra["read_columns"]))
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
    return table


class DecodedRowGroup:
    """A row group's table, and each column's Python values once asked for."""

    def __init__(self, shard: ShardInfo) -> None:
        self.shard = shard
        self.table = _decode(shard)
        self.images = frozenset(shard.extra.get("images") or ())
        self.values_of: dict[str, list[Any]] = {}  # the columns decoded to Python so far
        self.arrays: dict[str, Any] = {}  # the batched path's array per column, or None
        self.touched = 0  # rows asked for by the per-sample path

    def values(self, name: str) -> list[Any]:
        """Column ``name`` as the per-sample path hands it out, one value per row."""
        found = self.values_of.get(name)
        if found is None:
            found = python_column(self.table.column(name))
            if name in self.images:
                found = _images(found, self.shard)
            self.values_of[name] = found
        return found

    @functools.cached_property
    def columns(self) -> list[tuple[str, list[Any]]]:
        """Every column's Python values, in the table's order."""
        return [(name, self.values(name)) for name in self.table.column_names]

    def row(self, index: int) -> dict[str, Any]:
        """Row ``index`` as the per-sample path hands it out. The first row asked of a
        row group is converted alone: a random ``dataset[i]`` touches one row of each row
        group it decodes, so turning every row into Python would be wasted. From the second,
        whole columns are converted once, as a walk through the row group wants."""
        self.touched += 1
        if self.touched > 1 or "columns" in self.__dict__:
            return {name: values[index] for name, values in self.columns}
        out: dict[str, Any] = {}
        for name in self.table.column_names:
            value = python_column(self.table.column(name).slice(index, 1))
            out[name] = _images(value, self.shard, index)[0] if name in self.images else value[0]
        return out


def decoded_key(shard: ShardInfo) -> str:
    """What names the row group's decoded table among those of every dataset in this process:
    two datasets over one cache may decode the same file differently."""
    path = shard.local_path(shard.raw_data)
    return f"{path}\0{shard.extra.get('images')}\0{shard.extra.get('cast')}"


def decoded(shard: ShardInfo, key: str | None = None) -> DecodedRowGroup:
    """The row group decoded (the last few are kept, per process); ``key``: its
    :func:`decoded_key`, when the caller has it.

    Raises:
        FileNotFoundError: If its local file is not on disk.
    """
    key = decoded_key(shard) if key is None else key
    found = _DECODED.get(key)
    if found is None:
        found = _DECODED[key] = DecodedRowGroup(shard)
        while len(_DECODED) > _KEEP_DECODED:
            _DECODED.popitem(last=False)
    else:
        _DECODED.move_to_end(key)
    return found


_KEPT: dict[str, Any] = {}


def _kept(shard: ShardInfo) -> Any:
    """The row numbers a row filter keeps in this row group (cached per process)."""
    path = os.path.join(shard.dirname, shard.split, FOOTERS, shard.extra["kept"])
    found = _KEPT.get(path)
    if found is None:
        with np.load(path) as arrays:
            found = _KEPT[path] = {name: arrays[name] for name in arrays.files}
    return found[f"rg{shard.extra['row_group']}"]


def _images(values: list[Any], shard: ShardInfo, first: int = 0) -> list[Any]:
    """Encoded image bytes (rows ``first``, ``first + 1``...) as PIL images (decoded lazily by
    PIL, on first pixel access)."""
    from PIL import Image, UnidentifiedImageError

    out: list[Any] = []
    for row, data in enumerate(values, first):
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
        self._key = decoded_key(shard)

    def get(self, index: int) -> dict[str, Any]:
        return decoded(self.shard, self._key).row(index)

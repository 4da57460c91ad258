"""A row group's pages decoded just enough to hand out one row (``_core.ParquetRows``), for
``dataset[i]``: no Arrow table, no value converted but the row's.

A random ``dataset[i]`` reads a row or two of each row group it meets, so decoding the whole
row group into Arrow arrays (pyarrow copies every string of a dictionary-encoded column
into its own buffer) costs far more than the row. The core decompresses each page once, notes
where each value lies, and maps each row to its value. It covers flat columns of integers,
floats, strings and binary, PLAIN or dictionary-encoded, compressed with nothing, snappy, gzip
or zstd. Anything else (nested or other types, other encodings or codecs, a cast, a row
filter, image columns) returns ``None``, and the caller decodes the row group with pyarrow:
the values are the same either way (tests compare them type for type).
"""

from __future__ import annotations

from typing import Any

from streamx import _core
from streamx.exceptions import CorruptShardError
from streamx.format.index import ShardInfo
from streamx.format.parquet.footer_cache import parquet_schema
from streamx.format.parquet.local_source import read_into_buffer
from streamx.format.parquet.row_group import footer, local_bytes, where

__all__ = ["CODECS", "column_plan", "page_rows", "reworded"]

_PHYSICAL = {"INT32": 1, "INT64": 2, "FLOAT": 4, "DOUBLE": 5, "BYTE_ARRAY": 6}
CODECS = _CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1, "GZIP": 2, "ZSTD": 6}
# The Arrow types whose Python values the core makes as pyarrow's to_pylist does.
_ARROW = frozenset(
    [
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float",
        "double",
        "string",
        "large_string",
        "binary",
        "large_binary",
    ]
)

# Per footer and projection: each read column's (name, index, physical type, max definition
# level, Arrow type), or None when some column is not covered.
_Columns = list[tuple[str, int, int, int, str]]
_PLANS: dict[tuple[str, tuple[str, ...]], _Columns | None] = {}
_MAX_PLANS = 4096


def page_rows(shard: ShardInfo, data: bytes | None = None) -> _core.ParquetRows | None:
    """The row group's rows through the core (a ``_core.ParquetRows``), or ``None`` when
    some part of it is left to pyarrow. ``data``: its :func:`.row_group.local_bytes`; by
    default they are read here (a file read in place: into this thread's reused buffer).

    Raises:
        CorruptShardError: Naming the file, row group and column, if a page contradicts the
            format.
    """
    extra = shard.extra
    if extra.get("cast") or extra.get("kept") or extra.get("images"):
        return None
    path, md = footer(shard)
    columns = _plan(path, md, tuple(extra["read_columns"]))
    if columns is None:
        return None
    spans = []
    at = 0
    for start, length in extra["chunks"]:
        spans.append((int(start), int(length), at))
        at += int(length)
    rg = md.row_group(int(extra["row_group"]))
    chunks = []
    for name, index, physical, max_def, arrow in columns:
        col = rg.column(index)
        codec = _CODECS.get(col.compression)
        if codec is None:
            return None
        start = int(col.data_page_offset)
        if col.has_dictionary_page and col.dictionary_page_offset:
            start = min(start, int(col.dictionary_page_offset))
        length = int(col.total_compressed_size)
        local = _local(spans, start, length)
        if local is None:
            return None
        chunks.append((name, local, length, physical, codec, max_def, arrow))
    shown = where(shard)
    buffer = None
    if data is None and extra.get("in_place"):
        buffer = read_into_buffer(shard, shown)
    elif data is None:
        data = local_bytes(shard)
    try:
        if buffer is not None:
            return _core.ParquetRows.decode_buffer(buffer, chunks, shard.samples, shown)
        return _core.ParquetRows.decode(data or b"", chunks, shard.samples, shown)
    except CorruptShardError as err:
        raise reworded(err, shown) from err


def reworded(err: CorruptShardError, shown: str, detail: str = "") -> CorruptShardError:
    """The core's decoding error ``err`` of ``shown`` (a file and row group), worded as
    pyarrow's failures of a whole row group are (:func:`.row_group.decode_table`);
    ``detail``: what part of the row group failed, after the core's reason."""
    reason = str(err).removeprefix(f"Corrupt shard {shown}: ")
    return CorruptShardError(
        f"{shown} does not decode ({reason}{detail}); the file may have changed on the server"
    )


def _local(spans: list[tuple[int, int, int]], start: int, length: int) -> int | None:
    """Where the source's bytes ``[start, start + length)`` lie in the local file."""
    for first, size, at in spans:
        if first <= start and start + length <= first + size:
            return at + start - first
    return None


def _plan(path: str, md: Any, names: tuple[str, ...]) -> _Columns | None:
    """Each read column's place and types (once per cached footer and projection: a
    footer's name is a digest of its source's URL, size and version)."""
    key = (path, names)
    if key in _PLANS:
        try:
            return _PLANS[key]
        except KeyError:  # cleared by another thread just now
            pass
    plan = _make_plan(md, names)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()  # a dataset of very many files: remade (15 µs each), not kept all
    _PLANS[key] = plan
    return plan


def _make_plan(md: Any, names: tuple[str, ...]) -> _Columns | None:
    schema = parquet_schema(md)
    arrow = schema.to_arrow_schema()
    where = {schema.column(j).path: j for j in range(len(schema))}
    plan: _Columns = []
    for name in names:
        j = where.get(name)
        if j is None or arrow.get_field_index(name) < 0:
            return None
        column = schema.column(j)
        kind = str(arrow.field(name).type)
        physical = _PHYSICAL.get(column.physical_type)
        if kind not in _ARROW or physical is None or column.max_repetition_level != 0:
            return None
        if column.max_definition_level > 1:
            return None
        plan.append((name, j, physical, int(column.max_definition_level), kind))
    return plan


def column_plan(path: str, md: Any, names: tuple[str, ...]) -> _Columns | None:
    """Each read column's ``(name, index, physical type, max definition level, Arrow type)``,
    or ``None`` when some column is not the core's to decode (:mod:`.early_rows`)."""
    return _plan(path, md, names)

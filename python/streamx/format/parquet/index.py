"""A Parquet source's row groups as shard entries, in the columns ``ShardList`` reads."""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.exceptions import CorruptShardError
from streamx.format.parquet.footer import load_footer
from streamx.format.parquet.remote_files import RemoteFile, list_files

__all__ = ["FOOTERS", "MANIFEST", "ParquetIndex", "RowGroup", "build_index"]

MANIFEST = "streamx-parquet.json"
FOOTERS = "streamx-parquet"


@dataclass(frozen=True)
class RowGroup:
    """One row group: where its projected column chunks lie, and its local file's name."""

    file: RemoteFile
    number: int
    rows: int
    chunks: tuple[tuple[int, int], ...]  # (offset, length), merged where adjacent
    basename: str
    footer: str  # basename under FOOTERS
    columns: tuple[str, ...]
    types: tuple[tuple[str, str], ...]
    images: tuple[str, ...] = ()

    @property
    def nbytes(self) -> int:
        return sum(length for _, length in self.chunks)


class ParquetIndex:
    """Row groups in the shape of ``streamx._core.ShardIndex`` (format ``parquet``)."""

    def __init__(self, groups: Sequence[RowGroup]) -> None:
        self.groups = tuple(groups)

    def __len__(self) -> int:
        return len(self.groups)

    def samples(self) -> NDArray[np.int64]:
        return np.array([g.rows for g in self.groups], np.int64)

    def max_sizes(self) -> NDArray[np.int64]:
        return np.array([g.nbytes for g in self.groups], np.int64)

    def raw_sizes(self) -> NDArray[np.int64]:
        return self.max_sizes()

    def schema_ids(self) -> NDArray[np.int64]:
        return np.zeros(len(self.groups), np.int64)

    def schemas(self) -> list[tuple[list[str], list[str], list[int | None]] | None]:
        return [None]

    def formats(self) -> list[str]:
        return ["parquet"]

    def entry(self, shard: int) -> tuple[Any, ...]:
        g = self.groups[shard]
        extra = {
            "source": g.file.url,
            "source_size": g.file.size,
            "source_version": g.file.version,
            "row_group": g.number,
            "chunks": [list(c) for c in g.chunks],
            "footer": g.footer,
            "read_columns": list(g.columns),
            "columns": dict(g.types),
            "images": list(g.images),
        }
        raw: tuple[str, int, list[tuple[str, str]]] = (g.basename, g.nbytes, [])
        return ("parquet", None, [], g.rows, None, raw, None, None, None, 0, json.dumps(extra))


def _column_chunks(md: Any, number: int, wanted: set[str] | None) -> list[list[int]]:
    rg = md.row_group(number)
    chunks: list[list[int]] = []
    for j in range(rg.num_columns):
        col = rg.column(j)
        if wanted is not None and col.path_in_schema.split(".")[0] not in wanted:
            continue
        start = col.data_page_offset
        if col.has_dictionary_page and col.dictionary_page_offset:
            start = min(start, col.dictionary_page_offset)
        chunks.append([int(start), int(col.total_compressed_size)])
    chunks.sort()
    merged: list[list[int]] = []
    for start, length in chunks:
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1][1] += length
        else:
            merged.append([start, length])
    return merged


def _stem(url: str) -> str:
    name = os.path.basename(url.rstrip("/")).removesuffix(".parquet")
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40] or "part"


def _check_schema(first: tuple[RemoteFile, Any], file: RemoteFile, schema: Any) -> None:
    first_file, first_schema = first
    for field in first_schema:
        other = schema.field(field.name) if field.name in schema.names else None
        if other is None or not other.type.equals(field.type):
            found = "missing" if other is None else str(other.type)
            raise ValueError(
                f"Parquet schema differs between {first_file.url} and {file.url}: column "
                f"{field.name!r} is {field.type} in the first and {found} in the second"
            )


def build_index(
    source: str,
    folder: str,
    columns: Sequence[str] | None,
    timeout: float,
    retry: int,
    images: Sequence[str] = (),
) -> ParquetIndex:
    """Lists ``source``, reads (or reuses) each file's footer, and lays out its row groups.

    Footers are cached under ``folder/FOOTERS``, named by each file's size and version, and
    ``folder/MANIFEST`` lists them; a changed file gets a new footer and new row-group names.

    Raises:
        FileNotFoundError: If ``source`` holds no Parquet file.
        CorruptShardError: If a file is not Parquet, its footer is truncated, or a column
            chunk lies outside it.
        ValueError: If files' schemas differ in a read column, or a column is missing.
    """
    import pyarrow as pa

    files = list_files(source)
    projection = "\0".join(columns) if columns is not None else "*"
    tag = hashlib.sha1(projection.encode()).hexdigest()[:6]
    wanted = set(columns) if columns is not None else None
    groups: list[RowGroup] = []
    first: tuple[RemoteFile, Any] | None = None
    footers = os.path.join(folder, FOOTERS)
    for file in files:
        md, footer_path = load_footer(file, footers, timeout, retry)
        schema = md.schema.to_arrow_schema()
        if columns is not None:
            missing = [c for c in columns if c not in schema.names]
            if missing:
                raise ValueError(f"{file.url} has no column {missing[0]!r}")
            schema = pa.schema([schema.field(c) for c in columns])
        if first is None:
            first = (file, schema)
        else:
            _check_schema(first, file, schema)
        types = tuple((f.name, str(f.type)) for f in schema)
        for name in images:
            if name not in schema.names or not _is_binary(schema.field(name).type):
                raise ValueError(f"{file.url}: image column {name!r} is not a binary column")
        version = os.path.basename(footer_path).removesuffix(".footer")[:12]
        data_end = file.size - md.serialized_size - 8
        for number in range(md.num_row_groups):
            chunks = _column_chunks(md, number, wanted)
            for start, length in chunks:
                if start < 4 or length < 0 or start + length > data_end:
                    raise CorruptShardError(
                        f"{file.url} row group {number}: a column chunk [{start}, "
                        f"{start + length}) lies outside the file's data"
                    )
            rows = int(md.row_group(number).num_rows)
            if rows == 0:
                continue
            groups.append(
                RowGroup(
                    file=file,
                    number=number,
                    rows=rows,
                    chunks=tuple((s, n) for s, n in chunks),
                    basename=f"{_stem(file.url)}-{version}-{tag}.rg{number:05d}",
                    footer=os.path.basename(footer_path),
                    columns=tuple(schema.names),
                    types=types,
                    images=tuple(images),
                )
            )
    _write_manifest(folder, source, files)
    return ParquetIndex(groups)


def _is_binary(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_binary(kind) or pa.types.is_large_binary(kind))


def _write_manifest(folder: str, source: str, files: Sequence[RemoteFile]) -> None:
    os.makedirs(folder, exist_ok=True)
    body = {
        "source": source,
        "files": [{"url": f.url, "size": f.size, "version": f.version} for f in files],
    }
    path = os.path.join(folder, MANIFEST)
    tmp = f"{path}.tmp.{uuid.uuid4().hex}"
    with open(tmp, "w") as out:
        json.dump(body, out)
    os.replace(tmp, path)

"""A Parquet source's row groups as shard entries, in the columns ``ShardList`` reads."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streamx.format.parquet.chunks import column_chunks
from streamx.format.parquet.footer import cached_footer, load_footer
from streamx.format.parquet.row_filter import RowFilter
from streamx.format.remote_files import RemoteFile, list_files
from streamx.format.unit_index import UnitIndex
from streamx.runtime.atomic_write import write_atomic

__all__ = ["FOOTERS", "MANIFEST", "ParquetIndex", "RowGroup", "build_index"]

MANIFEST = "streamx-parquet.json"
FOOTERS = "streamx-parquet"
_FOOTER_THREADS = 16  # footers fetched at once (each one or two ranged GETs)


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
    cast: str = ""  # the schema it reads as (base64 Arrow IPC), where the file's differs
    kept: str = ""  # with a row filter: the basename under FOOTERS of the kept row numbers

    @property
    def nbytes(self) -> int:
        return sum(length for _, length in self.chunks)


class ParquetIndex(UnitIndex[RowGroup]):
    """Row groups as shards (format ``parquet``)."""

    format = "parquet"

    def extra(self, unit: RowGroup) -> dict[str, Any]:
        g = unit
        return {
            "source": g.file.url,
            "source_size": g.file.size,
            "source_version": g.file.version,
            "row_group": g.number,
            "chunks": [list(c) for c in g.chunks],
            "footer": g.footer,
            "read_columns": list(g.columns),
            "columns": dict(g.types),
            "images": list(g.images),
            "cast": g.cast,
            "kept": g.kept,
        }


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
    for name in schema.names:
        if name not in first_schema.names:
            raise ValueError(
                f"Parquet schema differs between {first_file.url} and {file.url}: column "
                f"{name!r} is missing in the first and {schema.field(name).type} in the second"
            )


def build_index(
    source: str,
    folder: str,
    columns: Sequence[str] | None,
    timeout: float,
    retry: int,
    images: Sequence[str] = (),
    allow_schema_drift: bool = False,
    row_filter: RowFilter | None = None,
) -> ParquetIndex:
    """Lists ``source``, reads (or reuses) each file's footer, and lays out its row groups.

    Footers are cached under ``folder/FOOTERS``, named by each file's size and version, and
    ``folder/MANIFEST`` lists them; a changed file gets a new footer and new row-group names.
    With ``allow_schema_drift``, the files' schemas are unified as Arrow unifies them (a
    column a file lacks reads as nulls, types are promoted where Arrow can). With a
    ``row_filter``, each row group is a shard of the rows it keeps (found once, from the
    filter's columns only; a row group that keeps none is no shard).

    Raises:
        FileNotFoundError: If ``source`` holds no Parquet file.
        CorruptShardError: If a file is not Parquet, its footer is truncated, its row counts
            are out of bounds, or a column chunk lies outside it.
        ValueError: If files' schemas differ in a read column (and cannot be unified, with
            ``allow_schema_drift``), or a column is missing.
    """
    files = list_files(source)
    footers = os.path.join(folder, FOOTERS)

    def schema_of(file: RemoteFile) -> tuple[RemoteFile, Any, str]:
        found, path = load_footer(file, footers, timeout, retry)
        return file, _projected(file, found.schema, columns, allow_schema_drift), path

    # Side by side: each footer not cached yet is a round trip or two. Only each file's
    # schema is kept from this pass; its footer is parsed again below (from the bounded
    # footer cache, or its file in `local`) one file at a time, so the build's peak memory
    # does not grow with the number of files.
    with ThreadPoolExecutor(max(1, min(_FOOTER_THREADS, len(files)))) as pool:
        read = list(pool.map(schema_of, files))
    target = _target_schema(files, [schema for _, schema, _ in read], allow_schema_drift)
    for name in images:
        if name not in target.names or not _is_binary(target.field(name).type):
            raise ValueError(f"{files[0].url}: image column {name!r} is not a binary column")
    projection = "\0".join(columns) if columns is not None else "*"
    if row_filter is not None:
        projection += "\0" + row_filter.text  # a filter's shards are its own
    layout = _Layout(
        hashlib.sha1(projection.encode()).hexdigest()[:6], target, tuple(images), row_filter
    )
    groups: list[RowGroup] = []
    for file, schema, footer_path in read:
        groups += _file_groups(layout, file, schema, footer_path, timeout, retry)
    _write_manifest(folder, source, files)
    return ParquetIndex(groups)


@dataclass(frozen=True)
class _Layout:
    """What every row group of a build shares: its projection's tag (in each row group's
    name), the schema it reads as, its image columns and row filter."""

    tag: str
    target: Any
    images: tuple[str, ...]
    row_filter: RowFilter | None


def _file_groups(
    layout: _Layout, file: RemoteFile, schema: Any, footer_path: str, timeout: float, retry: int
) -> list[RowGroup]:
    """The row groups of one file (those a row filter keeps rows of), read from its footer."""
    found = cached_footer(footer_path, file.url)
    md, target = found.metadata, layout.target
    cast = "" if schema.equals(target) else base64.b64encode(target.serialize()).decode()
    version = os.path.basename(footer_path).removesuffix(".footer")[:12]
    row_filter = layout.row_filter
    kept = row_filter.kept_rows(file, found, footer_path, timeout, retry) if row_filter else None
    kept_name = "" if row_filter is None else row_filter.kept_name(footer_path)
    groups = []
    for number in range(md.num_row_groups):
        chunks = column_chunks(md, number, set(schema.names), file)
        rows = int(md.row_group(number).num_rows) if kept is None else len(kept[number])
        if rows == 0:
            continue
        groups.append(
            RowGroup(
                file=file,
                number=number,
                rows=rows,
                chunks=tuple((s, n) for s, n in chunks),
                basename=f"{_stem(file.url)}-{version}-{layout.tag}.rg{number:05d}",
                footer=os.path.basename(footer_path),
                columns=tuple(schema.names),
                types=tuple((f.name, str(f.type)) for f in target),
                images=layout.images,
                cast=cast,
                kept=kept_name,
            )
        )
    return groups


def _projected(file: RemoteFile, schema: Any, columns: Sequence[str] | None, drift: bool) -> Any:
    """The file's Arrow schema, cut to ``columns`` (those it has, with drift allowed)."""
    import pyarrow as pa

    if columns is None:
        return schema
    missing = [c for c in columns if c not in schema.names]
    if missing and not drift:
        raise ValueError(f"{file.url} has no column {missing[0]!r}")
    return pa.schema([schema.field(c) for c in columns if c in schema.names])


def _target_schema(files: Sequence[RemoteFile], schemas: Sequence[Any], drift: bool) -> Any:
    """The schema every row group reads as: the first file's, or all of them unified."""
    import pyarrow as pa

    if not drift:
        for file, schema in zip(files[1:], schemas[1:]):
            _check_schema((files[0], schemas[0]), file, schema)
        return schemas[0]
    try:
        return pa.unify_schemas(list(schemas), promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise ValueError(
            f"The Parquet schemas of {files[0].url} ... {files[-1].url} cannot be unified: {err}"
        ) from err


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
    write_atomic(path, json.dumps(body))

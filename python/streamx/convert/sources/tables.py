"""Tabular inputs read through pyarrow: Parquet (one part per row group), Arrow IPC, JSONL
and CSV (one part per file). Columns come from the first file's Arrow schema.

No Python object is left for Arrow's own threads to free: such a free needs the GIL, and
asked for while the interpreter finalizes it aborts the process at exit (see
:func:`~streamx.format.parquet.remapped.read_row_group`). Parquet row groups are read from
the fsspec file on this thread; the readers that want threads (CSV, JSON, Arrow IPC) get
the file's bytes copied into Arrow's memory."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from streamx.convert.errors import ConvertError
from streamx.convert.infer import infer_columns
from streamx.convert.sources.base import Part, Row
from streamx.convert.sources.files import list_files, open_fs
from streamx.convert.sources.wide_ints import check_csv_ints, jsonl_wide_ints
from streamx.convert.values import arrow_rows, to_arrays
from streamx.format.parquet.footer_bounds import check_row_counts
from streamx.format.parquet.remapped import read_row_group

__all__ = ["SUFFIXES", "TableSource"]

TableFormat = Literal["parquet", "arrow", "jsonl", "csv"]
SUFFIXES: dict[str, tuple[str, ...]] = {
    "parquet": (".parquet", ".pq"),
    "arrow": (".arrow", ".feather", ".ipc"),
    "jsonl": (".jsonl", ".json", ".ndjson"),
    "csv": (".csv",),
}
_SCHEMA_SAMPLE_LINES = 1000  # JSONL lines read to infer the schema


@dataclass(frozen=True)
class TableSource:
    """Parquet, Arrow, JSONL or CSV files at a local path or fsspec URL."""

    url: str
    format: TableFormat
    files: tuple[str, ...]
    schema: pa.Schema
    # Columns pyarrow read as float64 only because an integer exceeds int64 (JSONL).
    widened: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, url: str, format: TableFormat) -> TableSource:
        """Lists the input's files (sorted) and reads the first one's schema."""
        files = tuple(list_files(url, SUFFIXES[format]))
        schema = _schema(files[0], format)
        widened: dict[str, str] = {}
        if format in ("jsonl", "csv"):
            with _reading(files[0]):
                head = _head(files[0])
            if format == "jsonl":
                widened = jsonl_wide_ints(schema, head.splitlines())
            else:
                check_csv_ints(files[0], schema, head)
        return cls(url, format, files, schema, widened)

    def describe(self) -> Mapping[str, Any]:
        return {"kind": self.format, "files": list(self.files)}

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        return infer_columns(self.schema, {**self.widened, **overrides})

    def parts(self) -> list[Part]:
        if self.format != "parquet":
            return [Part(i, f, (f,)) for i, f in enumerate(self.files)]
        parts: list[Part] = []
        for name in self.files:
            fs, path = open_fs(name)
            with _reading(name), fs.open(path, "rb") as f:
                meta = pq.ParquetFile(f).metadata
                # pyarrow reads a row group whose count was lowered as that many rows,
                # dropping the rest: the footer's counts are checked before any is read.
                check_row_counts(meta, name)
                groups = meta.num_row_groups
            for group in range(groups):
                parts.append(Part(len(parts), f"{name} (row group {group})", (name, group)))
        return parts

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        name = part.spec[0]
        if self.format == "jsonl":
            yield from _jsonl_rows(name, columns)
            return
        with _reading(name):
            table = self._read(part)
        for row, sample in enumerate(arrow_rows(table, columns), self._first_row(part)):
            yield name, row, sample

    def _read(self, part: Part) -> pa.Table:
        name = part.spec[0]
        if self.format == "parquet":
            fs, path = open_fs(name)
            with fs.open(path, "rb") as f:
                return read_row_group(f, None, part.spec[1])
        if self.format == "arrow":
            return _read_arrow(name)
        return _read_csv(name, self.schema)

    def _first_row(self, part: Part) -> int:
        """The row number, within its file, of the part's first row (row groups)."""
        if self.format != "parquet" or not part.spec[1]:
            return 0
        fs, path = open_fs(part.spec[0])
        with fs.open(path, "rb") as f:
            meta = pq.ParquetFile(f).metadata
        return sum(meta.row_group(g).num_rows for g in range(part.spec[1]))


def _schema(first: str, format: TableFormat) -> pa.Schema:
    """The first file's schema: every other file is read as if it had the same."""
    with _reading(first):
        if format == "parquet":
            fs, path = open_fs(first)
            with fs.open(path, "rb") as f:
                return pq.ParquetFile(f).schema_arrow
        if format == "arrow":
            return _read_arrow(first).schema
        if format == "csv":
            return _read_csv(first, None).schema
        return _jsonl_schema(first)


class _reading:
    """Turns any failure to read ``name`` into a ConvertError naming it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: Any
    ) -> None:
        if err is not None and not isinstance(err, ConvertError) and isinstance(err, Exception):
            raise ConvertError(f"Cannot read {self.name}: {err}") from err


def _arrow_owned(data: bytes) -> pa.Buffer:
    """``data`` copied into Arrow's memory: Arrow's threads may then hold and free it (the
    Python ``bytes`` go here, on this thread). A copy costs far less than the parse."""
    sink = pa.BufferOutputStream()
    sink.write(data)
    return sink.getvalue()


def _read_arrow(name: str) -> pa.Table:
    fs, path = open_fs(name)
    with fs.open(path, "rb") as f:
        data = _arrow_owned(f.read())
    try:
        return pa.ipc.open_file(pa.BufferReader(data)).read_all()
    except pa.ArrowInvalid:
        return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def _read_csv(name: str, schema: pa.Schema | None) -> pa.Table:
    fs, path = open_fs(name)
    convert = pacsv.ConvertOptions(
        column_types=dict(zip(schema.names, schema.types)) if schema is not None else None
    )
    with fs.open(path, "rb") as f:
        data = _arrow_owned(f.read())
    return pacsv.read_csv(pa.BufferReader(data), convert_options=convert)


def _head(name: str) -> bytes:
    """The first lines of a text file: what its schema is inferred from."""
    fs, path = open_fs(name)
    with fs.open(path, "rb") as f:
        return b"".join(itertools.islice(f, _SCHEMA_SAMPLE_LINES))


def _jsonl_schema(name: str) -> pa.Schema:
    return pajson.read_json(pa.BufferReader(_arrow_owned(_head(name)))).schema


def _jsonl_rows(name: str, columns: Mapping[str, str]) -> Iterator[Row]:
    fs, path = open_fs(name)
    with _reading(name), fs.open(path, "rb") as f:
        lines = list(f)
    for row, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except json.JSONDecodeError as err:
            raise ConvertError(f"{name}, row {row} (line {row + 1}): invalid JSON: {err}") from err
        if not isinstance(sample, dict):
            raise ConvertError(f"{name}, row {row} (line {row + 1}): not a JSON object.")
        yield name, row, to_arrays(sample, columns)

"""A tar's member table as a compact binary file, read without parsing.

The samples are columns of little-endian ``int64`` (each sample's first field, its key's
end in the text, each field's name end, offset and size) and one text of the keys and
field names (UTF-8, ``surrogateescape``), after a fixed head. Opening one checks every
column against the others and against the tar's size (a corrupt or hostile file is an
error, never wrong data), then builds a sample only when it is asked for, so a process
that opens a table of 4,096 samples pays for the samples it reads. The count is in the
head: counting samples reads 40 bytes.

Layout: ``MAGIC``, then samples, fields, text bytes and meta bytes (``uint64``); the
columns ``first[samples + 1]``, ``key_end[samples]``, ``name_end[fields]``,
``offset[fields]``, ``size[fields]``; the text; the meta (JSON: the tar's URL, size and
version, for people reading the cache).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from streamx.format.webdataset.samples import Field, TableColumns, TarSample

__all__ = [
    "MAGIC",
    "MemberTable",
    "TableError",
    "decode_table",
    "encode_columns",
    "encode_table",
    "read_count",
    "table_from_body",
]

MAGIC = b"SXWDSMT1"
_HEAD = struct.Struct("<8sQQQQ")
_I64 = np.dtype("<i8")


class TableError(ValueError):
    """The bytes are not a well-formed member table (the caller names the file)."""


class MemberTable(Sequence[TarSample]):
    """The samples of one tar, each built when it is asked for."""

    def __init__(
        self,
        first: NDArray[np.int64],
        ends: NDArray[np.int64],
        offsets: NDArray[np.int64],
        sizes: NDArray[np.int64],
        text: bytes,
    ) -> None:
        self._first, self._ends = first.tolist(), ends.tolist()
        self._offsets, self._sizes = offsets.tolist(), sizes.tolist()
        self._text = text
        self._count = len(first) - 1
        self._names: dict[bytes, str] = {}  # field names repeat: decoded once

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> TarSample: ...
    @overload
    def __getitem__(self, index: slice) -> list[TarSample]: ...
    def __getitem__(self, index: int | slice) -> TarSample | list[TarSample]:
        if isinstance(index, slice):
            return [self._sample(i) for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(f"sample {index} of a table of {self._count}")
        return self._sample(index)

    def _sample(self, i: int) -> TarSample:
        ends, text, count = self._ends, self._text, self._count
        key = text[ends[i - 1] if i else 0 : ends[i]].decode("utf-8", "surrogateescape")
        fields = []
        for f in range(self._first[i], self._first[i + 1]):
            raw = text[ends[count + f - 1] if count + f else 0 : ends[count + f]]
            name = self._names.get(raw)
            if name is None:
                name = self._names[raw] = raw.decode("utf-8", "surrogateescape")
            fields.append(Field(name, self._offsets[f], self._sizes[f]))
        return TarSample(key, tuple(fields))


def encode_table(samples: Sequence[TarSample], meta: dict[str, object]) -> bytes:
    """The binary table of ``samples``; ``meta`` (JSON) describes the tar."""
    columns = TableColumns()
    for sample in samples:
        columns.keys.append(sample.key)
        columns.names.extend(f.name for f in sample.fields)
        columns.offsets.extend(f.offset for f in sample.fields)
        columns.sizes.extend(f.size for f in sample.fields)
        columns.first.append(len(columns.names))
    return encode_columns(columns, meta)


def encode_columns(columns: TableColumns, meta: dict[str, object]) -> bytes:
    """The binary table of samples held as ``columns``; ``meta`` (JSON) describes the tar."""
    keys = [key.encode("utf-8", "surrogateescape") for key in columns.keys]
    names = [name.encode("utf-8", "surrogateescape") for name in columns.names]
    ends = np.cumsum([len(raw) for raw in keys + names], dtype=_I64)
    text = b"".join(keys) + b"".join(names)
    parts = [columns.first, ends, columns.offsets, columns.sizes]
    body = b"".join(np.asarray(part, dtype=_I64).tobytes() for part in parts)
    return table_from_body(len(keys), len(names), len(text), body + text, meta)


def table_from_body(
    samples: int, fields: int, text: int, body: bytes, meta: dict[str, object]
) -> bytes:
    """The binary table whose columns and text are ``body`` (as the core's
    ``scan_tar_table`` lays them out); ``meta`` (JSON) describes the tar."""
    extra = json.dumps(meta).encode()
    return _HEAD.pack(MAGIC, samples, fields, text, len(extra)) + body + extra


def _head(data: bytes) -> tuple[int, int, int, int]:
    if len(data) < _HEAD.size:
        raise TableError(f"{len(data)} bytes, less than its head")
    magic, samples, fields, text, extra = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise TableError("not a member table (its magic differs)")
    return samples, fields, text, extra


def read_count(head: bytes) -> int:
    """The number of samples, from the table's first 40 bytes.

    Raises:
        TableError: If they are not a member table's head.
    """
    return _head(head)[0]


def decode_table(data: bytes, tar_size: int) -> MemberTable:
    """The table in ``data``, checked whole against itself and the tar's ``tar_size``.

    Raises:
        TableError: If anything is inconsistent (what, in words).
    """
    samples, fields, text, extra = _head(data)
    words = 2 * samples + 1 + 3 * fields
    if _HEAD.size + 8 * words + text + extra != len(data):
        raise TableError(f"{len(data)} bytes, not the size its head gives")
    columns = np.frombuffer(data, _I64, words, _HEAD.size)
    first = columns[: samples + 1]
    ends = columns[samples + 1 : 2 * samples + 1 + fields]
    offsets = columns[2 * samples + 1 + fields : 2 * samples + 1 + 2 * fields]
    sizes = columns[2 * samples + 1 + 2 * fields :]
    if first[0] != 0 or first[-1] != fields or (np.diff(first) < 0).any():
        raise TableError("its samples' fields are out of order")
    if not len(ends) and text:
        raise TableError("it holds text but no keys")
    if len(ends) and (ends[0] < 0 or ends[-1] != text or (np.diff(ends) < 0).any()):
        raise TableError("its keys and names run past its text")
    if fields and ((offsets < 0).any() or (sizes < 0).any() or (sizes > tar_size - offsets).any()):
        raise TableError(f"a field lies past the end of the tar ({tar_size} bytes)")
    start = _HEAD.size + 8 * words
    return MemberTable(first, ends, offsets, sizes, data[start : start + text])

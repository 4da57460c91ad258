"""LitData's ``json`` leaf: a list or dict in LitData's compact tagged encoding.

A leaf whose first byte is above ``0x20`` (or that is empty) is plain JSON text, as older
LitData wrote. Otherwise it is one tagged value: a tag byte, then its payload, little-endian,
counts and string lengths as ``uint32``:

======  ==========  =================================================================
tag     value       payload
======  ==========  =================================================================
0       any         length, that many bytes of JSON text
1       list[str]   count, then each string (length, UTF-8)
2       list[int]   count, then ``int64`` each
3       list[float] count, then ``float64`` each
4       list[bool]  count, then one byte each
5       dict        count, then each key (length, UTF-8) and its tagged value
6       list[dict]  rows, keys, each key (length, UTF-8), then row by row, key by key, a
                    kind byte (``0x10`` None, ``0x11`` string, ``0x12`` ``int64``,
                    ``0x13`` ``float64``, ``0x14`` bool) and its payload
7       str         length, UTF-8
8/9/10  scalar      ``int64`` / ``float64`` / one bool byte
11      None        nothing
======  ==========  =================================================================

Every count is checked against the bytes left before anything is allocated for it, so a
damaged leaf raises ``ValueError`` (the chunk reader names the chunk and sample), never a
large allocation or a crash.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

__all__ = ["decode_nested"]

_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_MAX_DEPTH = 64  # dicts in dicts: a damaged leaf must not exhaust the stack


class _Reader:
    """A cursor over one leaf's bytes that never reads past its end."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, size: int) -> bytes:
        end = self.at + size
        if size < 0 or end > len(self.data):
            raise ValueError(f"the nested value needs {size} bytes at {self.at}, past its end")
        out = self.data[self.at : end]
        self.at = end
        return out

    def byte(self) -> int:
        return self.take(1)[0]

    def count(self, item_bytes: int) -> int:
        """A count of items of at least ``item_bytes`` each, bounded by the bytes left."""
        n: int = _U32.unpack(self.take(4))[0]
        if n * item_bytes > len(self.data) - self.at:
            raise ValueError(f"the nested value counts {n} items, more than its bytes hold")
        return n

    def text(self) -> str:
        return self.take(self.count(1)).decode("utf-8")

    def i64(self) -> int:
        value: int = _I64.unpack(self.take(8))[0]
        return value

    def f64(self) -> float:
        value: float = _F64.unpack(self.take(8))[0]
        return value


def _record_value(reader: _Reader) -> Any:
    kind = reader.byte()
    if kind == 0x10:
        return None
    if kind == 0x11:
        return reader.text()
    if kind == 0x12:
        return reader.i64()
    if kind == 0x13:
        return reader.f64()
    if kind == 0x14:
        return bool(reader.byte())
    raise ValueError(f"unknown record value kind {kind:#x}")


def _records(reader: _Reader) -> list[dict[str, Any]]:
    rows = reader.count(0)
    keys = [reader.text() for _ in range(reader.count(4))]
    if rows and not keys:  # LitData writes records with keys only
        raise ValueError(f"{rows} records without keys")
    if rows * len(keys) > len(reader.data) - reader.at:
        raise ValueError(f"{rows} records of {len(keys)} keys cannot fit in the value")
    return [{key: _record_value(reader) for key in keys} for _ in range(rows)]


def _value(reader: _Reader, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError(f"the nested value is more than {_MAX_DEPTH} levels deep")
    tag = reader.byte()
    if tag == 0:
        return json.loads(reader.take(reader.count(1)))
    if tag == 1:
        return [reader.text() for _ in range(reader.count(4))]
    if tag in (2, 3):
        n = reader.count(8)
        return np.frombuffer(reader.take(8 * n), "<i8" if tag == 2 else "<f8").tolist()
    if tag == 4:
        return [bool(b) for b in reader.take(reader.count(1))]
    if tag == 5:
        n = reader.count(5)
        return {reader.text(): _value(reader, depth + 1) for _ in range(n)}
    if tag == 6:
        return _records(reader)
    if tag == 7:
        return reader.text()
    if tag == 8:
        return reader.i64()
    if tag == 9:
        return reader.f64()
    if tag == 10:
        return bool(reader.byte())
    if tag == 11:
        return None
    raise ValueError(f"unknown nested value tag {tag}")


def decode_nested(data: bytes) -> Any:
    """The list or dict LitData encoded in one ``json`` leaf.

    Raises:
        ValueError: If the bytes are not such a value (damaged, or JSON that does not parse).
    """
    if not data or data[0] > 0x20:
        return json.loads(data)
    reader = _Reader(bytes(data))
    value = _value(reader, 0)
    if reader.at != len(reader.data):
        raise ValueError(f"{len(reader.data) - reader.at} bytes follow the nested value")
    return value

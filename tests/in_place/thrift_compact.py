"""A tiny Thrift compact-protocol codec, enough to rewrite a Parquet footer's fields.

pyarrow writes only honest footers, so the hostile-footer tests decode a real one, change a
field (a row count, a chunk offset) and encode it back. Structs keep their fields in order
with their wire types, so an untouched footer encodes to the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET = range(11)
_STRUCT = 12
_MAGIC = b"PAR1"


@dataclass
class TList:
    kind: int
    items: list[Value]


@dataclass
class Struct:
    fields: list[tuple[int, int, Value]] = field(default_factory=list)  # (id, type, value)

    def get(self, fid: int) -> Value:
        return next(v for i, _, v in self.fields if i == fid)

    def put(self, fid: int, value: Value) -> None:
        """Replaces field ``fid``'s value (the field must be there)."""
        assert any(i == fid for i, _, _ in self.fields), f"no field {fid}"
        self.fields = [(i, k, value if i == fid else v) for i, k, v in self.fields]

    def struct(self, fid: int) -> Struct:
        found = self.get(fid)
        assert isinstance(found, Struct)
        return found

    def structs(self, fid: int) -> list[Struct]:
        found = self.get(fid)
        assert isinstance(found, TList)
        return [s for s in found.items if isinstance(s, Struct)]


Value = bool | int | float | bytes | TList | Struct


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        out, shift = 0, 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return out

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> Value:
        if kind in (_TRUE, _FALSE):  # in a list: one byte, 1 for true
            return self.byte() == _TRUE
        if kind == _BYTE:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            self.pos += 8
            return float(struct.unpack("<d", self.data[self.pos - 8 : self.pos])[0])
        if kind == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if kind in (_LIST, _SET):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            return TList(head & 15, [self.value(head & 15) for _ in range(size)])
        if kind == _STRUCT:
            return self.struct()
        raise ValueError(f"Thrift compact type {kind} is not supported here")

    def struct(self) -> Struct:
        out, last = Struct(), 0
        while (head := self.byte()) != _STOP:
            delta, kind = head >> 4, head & 15
            fid = last + delta if delta else self.zigzag()
            value = kind == _TRUE if kind in (_TRUE, _FALSE) else self.value(kind)
            out.fields.append((fid, kind, value))
            last = fid
        return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _value(kind: int, v: Value) -> bytes:
    if kind in (_TRUE, _FALSE):
        return bytes([_TRUE if v else _FALSE])
    if kind == _BYTE:
        assert isinstance(v, int)
        return bytes([v])
    if kind in (_I16, _I32, _I64):
        assert isinstance(v, int) and not isinstance(v, bool)
        return _zigzag(v)
    if kind == _DOUBLE:
        assert isinstance(v, float)
        return struct.pack("<d", v)
    if kind == _BINARY:
        assert isinstance(v, bytes)
        return _varint(len(v)) + v
    if isinstance(v, TList):
        n = len(v.items)
        head = bytes([n << 4 | v.kind]) if n < 15 else bytes([0xF0 | v.kind]) + _varint(n)
        return head + b"".join(_value(v.kind, item) for item in v.items)
    assert isinstance(v, Struct)
    return encode(v)


def encode(s: Struct) -> bytes:
    """``s`` in the compact protocol, with its stop byte."""
    out, last = bytearray(), 0
    for fid, kind, v in s.fields:
        wire = (_TRUE if v else _FALSE) if kind in (_TRUE, _FALSE) else kind
        delta = fid - last
        out += bytes([delta << 4 | wire]) if 0 < delta < 16 else bytes([wire]) + _zigzag(fid)
        if kind not in (_TRUE, _FALSE):
            out += _value(kind, v)
        last = fid
    return bytes(out + bytes([_STOP]))


def decode(data: bytes) -> Struct:
    """The struct at the start of ``data``."""
    return _Reader(data).struct()


def patch_footer(data: bytes, edit: Callable[[Struct], None]) -> bytes:
    """The Parquet file ``data`` with its FileMetaData changed by ``edit`` (its length
    field rewritten to match)."""
    assert data[-4:] == _MAGIC
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    meta = decode(data[start : len(data) - 8])
    edit(meta)
    body = encode(meta)
    return data[:start] + body + len(body).to_bytes(4, "little") + _MAGIC

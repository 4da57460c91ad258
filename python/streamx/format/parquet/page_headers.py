"""The page headers at the start of a column chunk's bytes: how many of its first pages are
whole in a prefix, and the rows they hold (:mod:`.early_rows`).

A page header is a Thrift compact-protocol struct; only the page's kind, its compressed size
and its value count are read, every other field is skipped by its type. A flat column's
value count is its row count (nulls included), in v1 and v2 data pages alike.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BadHeader", "Pages", "whole_pages"]

_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 2, 3
# The count fields of the page kinds' own headers: DataPageHeader(1), DictionaryPageHeader
# (1), DataPageHeaderV2 (1: num_values).
_KIND_HEADERS = {5: _DATA_PAGE, 7: _DICTIONARY_PAGE, 8: _DATA_PAGE_V2}
_MAX_DEPTH = 16  # nested structs a header may hold before it is refused


class BadHeader(ValueError):
    """Bytes that are not a page header."""


@dataclass(frozen=True)
class Pages:
    """The whole pages at the start of a chunk prefix: ``ends[k]`` is where page ``k`` ends
    in the chunk and ``rows[k]`` the rows of the data pages up to it."""

    ends: list[int]
    rows: list[int]
    next_end: int | None  # where the first page not whole ends, if its header is whole

    def covering(self, row: int) -> tuple[int, int] | None:
        """``(bytes, rows)`` of the shortest run of first pages that holds ``row``."""
        for end, rows in zip(self.ends, self.rows):
            if row < rows:
                return end, rows
        return None


def whole_pages(prefix: bytes, chunk_length: int) -> Pages:
    """The pages of ``prefix`` (the first bytes of a chunk of ``chunk_length``) whose header
    and body it holds whole.

    Raises:
        BadHeader: If a header contradicts the format or a page runs past the chunk.
    """
    ends: list[int] = []
    rows: list[int] = []
    at, seen = 0, 0
    while at < min(len(prefix), chunk_length):
        try:
            kind, size, count, header = _header(prefix, at)
        except IndexError:  # the header itself is cut off by the prefix's end
            break
        end = at + header + size
        if size < 0 or count < 0 or end > chunk_length:
            raise BadHeader(f"a page of {size} bytes and {count} values at {at}")
        if end > len(prefix):
            return Pages(ends, rows, end)
        if kind in (_DATA_PAGE, _DATA_PAGE_V2):
            seen += count
        ends.append(end)
        rows.append(seen)
        at = end
    return Pages(ends, rows, None)


def _header(data: bytes, at: int) -> tuple[int, int, int, int]:
    """``(kind, compressed size, values, header length)`` of the header at ``at``."""
    reader = _Reader(data, at)
    kind, size, count = -1, -1, 0
    for field, kind_of in reader.fields():
        if field == 1 and kind_of == 5:
            kind = reader.varint_signed()
        elif field == 3 and kind_of == 5:
            size = reader.varint_signed()
        elif field in _KIND_HEADERS and kind_of == 12:
            for inner, inner_kind in reader.fields():
                if inner == 1 and inner_kind == 5:
                    count = reader.varint_signed()
                else:
                    reader.skip(inner_kind, 1)
        else:
            reader.skip(kind_of, 0)
    if kind < 0 or size < 0:
        raise BadHeader(f"a page header without its type or size at {at}")
    return kind, size, count, reader.at - at


class _Reader:
    """Thrift's compact protocol over ``data`` from ``at`` (``IndexError`` at its end)."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at = data, at

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        value, shift = 0, 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise BadHeader("a varint longer than 64 bits")

    def varint_signed(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def fields(self) -> _Fields:
        return _Fields(self)

    def skip(self, kind: int, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise BadHeader("page header structs nested too deep")
        if kind in (1, 2):  # booleans: the value is the type
            return
        if kind == 3:
            self.at += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.at += 8
        elif kind == 8:
            length = self.varint()  # read before `at` is: the varint moves it
            self.at += length
        elif kind in (9, 10):
            head = self.byte()
            count = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(count):
                self.skip_element(head & 0x0F, depth + 1)
        elif kind == 11:
            count = self.varint()
            if count:
                types = self.byte()
                for _ in range(count):
                    self.skip_element(types >> 4, depth + 1)
                    self.skip_element(types & 0x0F, depth + 1)
        elif kind == 12:
            for _, inner in _Fields(self):
                self.skip(inner, depth + 1)
        else:
            raise BadHeader(f"a field of unknown type {kind}")
        if self.at > len(self.data):
            raise IndexError(self.at)

    def skip_element(self, kind: int, depth: int) -> None:
        """A list or map element: a boolean takes a byte there."""
        if kind in (1, 2):
            self.at += 1
        else:
            self.skip(kind, depth)


class _Fields:
    """The ``(field id, type)`` of each field of a struct, up to its stop byte."""

    def __init__(self, reader: _Reader) -> None:
        self.reader, self.last = reader, 0

    def __iter__(self) -> _Fields:
        return self

    def __next__(self) -> tuple[int, int]:
        head = self.reader.byte()
        if head == 0:
            raise StopIteration
        delta = head >> 4
        self.last = self.last + delta if delta else self.reader.varint_signed()
        return self.last, head & 0x0F

"""The Python tar header parser streamx used before the scan moved to the Rust core, kept
as the oracle its replacement must agree with (members and error messages): see
``test_tar_scan_parity.py``.

Handled: ustar names with a prefix, GNU long names (``L``), pax ``path`` and ``size``
records (``x``), base-256 sizes. Skipped: directories, links, devices and global pax
headers. Anything else that does not parse is a :class:`CorruptShardError` naming the tar
and the offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from streamx.exceptions import CorruptShardError

__all__ = ["Member", "iter_members", "scan_members"]

BLOCK = 512
# Bytes per remote read: from MIN_WINDOW after a skipped body, doubling up to MAX_WINDOW
# while the scan reads on. A gap of more than SKIP bytes to the next header is jumped.
MIN_WINDOW = 64 << 10
MAX_WINDOW = 8 << 20
SKIP = 4 << 20
# Long names and pax records come from the input: bounded so they cannot exhaust memory.
_MAX_META = 1 << 20
_REGULAR = (b"0", b"\0", b"7")
_SKIPPED = (b"1", b"2", b"3", b"4", b"5", b"6", b"g", b"K", b"V", b"D", b"M", b"S")


@dataclass(frozen=True)
class Member:
    """A regular file in the archive: its path and where its bytes lie."""

    name: str
    offset: int
    size: int


class _Windows:
    """Byte ranges of the archive, read a window at a time."""

    def __init__(self, read: Callable[[int, int], bytes], size: int) -> None:
        self._read, self._size = read, size
        self._start, self._data = 0, b""
        self._window = MIN_WINDOW

    def get(self, start: int, length: int, after: int = 0) -> bytes:
        """Bytes ``[start, start + length)``; ``after`` is the size of the body before them."""
        end = start + length
        held_to = self._start + len(self._data)
        if not (self._start <= start and end <= held_to):
            if after > SKIP or not self._data:
                begin, self._window = start, MIN_WINDOW  # jump: the body is not read
            else:
                begin = min(start, held_to)  # read on
                self._window = min(2 * self._window, MAX_WINDOW)
            want = min(max(end - begin, self._window), self._size - begin)
            self._start, self._data = begin, self._read(begin, want)
        return self._data[start - self._start : end - self._start]


def _number(field: bytes, what: str, shown: str, at: int) -> int:
    if field[:1] and field[0] & 0x80:  # base-256, for sizes past 8 GiB
        value = int.from_bytes(field[1:], "big")
        return -value if field[0] & 0x40 else value
    text = field.split(b"\0", 1)[0].strip(b" \0")
    try:
        return int(text, 8) if text else 0
    except ValueError:
        if at == 0:
            raise CorruptShardError(
                f"{shown} is not a tar file: no tar header at its start"
            ) from None
        raise CorruptShardError(
            f"{shown}: the tar header at offset {at} has a bad {what} field {text[:20]!r}"
        ) from None


def _checked(header: bytes, shown: str, at: int) -> None:
    stored = _number(header[148:156], "checksum", shown, at)
    unsigned = sum(header) - sum(header[148:156]) + 8 * 0x20  # the field counts as spaces
    if stored != unsigned:
        # Some old writers summed signed bytes: worth computing only when the usual fails.
        high = sum(1 for b in header[:148] + header[156:] if b > 127)
        if stored != unsigned - 256 * high:
            if at == 0:
                raise CorruptShardError(f"{shown} is not a tar file: no tar header at its start")
            raise CorruptShardError(f"{shown}: the tar header at offset {at} is corrupt (checksum)")


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _pax(data: bytes, shown: str, at: int) -> dict[str, str]:
    """Records ``LEN key=value\\n`` of a pax extended header."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos : pos + 1] != b"\0":
        space = data.find(b" ", pos)
        try:
            length = int(data[pos:space]) if space > pos else 0
        except ValueError:
            length = 0
        record = data[space + 1 : pos + length]
        if length <= 0 or pos + length > len(data) or b"=" not in record:
            raise CorruptShardError(f"{shown}: bad pax record in the header at offset {at}")
        key, _, value = record.rstrip(b"\n").partition(b"=")
        records[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return records


def scan_members(read: Callable[[int, int], bytes], size: int, shown: str) -> list[Member]:
    """The archive's regular files in order: all of :func:`iter_members` (same arguments
    and errors)."""
    return list(iter_members(read, size, shown))


def iter_members(read: Callable[[int, int], bytes], size: int, shown: str) -> Iterator[Member]:
    """The archive's regular files in order, each as soon as its header is read (a scan
    that stops early reads only the headers before the members it wanted).

    Args:
        read: ``read(start, length)`` returns the archive's bytes ``[start, start + length)``.
        size: The archive's size in bytes.
        shown: The archive's name, for errors.

    Raises:
        CorruptShardError: If the file is not a tar, a header is corrupt, or a member runs
            past the end of the file (a truncated archive).
    """
    if size < BLOCK:
        raise CorruptShardError(f"{shown} is not a tar file: {size} bytes, less than a header")
    windows = _Windows(read, size)
    at = 0
    body = 0  # the size of the body before the header at `at`
    long_name: str | None = None
    pax: dict[str, str] = {}
    while at + BLOCK <= size:
        header = windows.get(at, BLOCK, body)
        if header == bytes(BLOCK):
            return  # the end-of-archive blocks
        _checked(header, shown, at)
        kind = header[156:157]
        length = _number(header[124:136], "size", shown, at)
        data_at = at + BLOCK
        if length < 0 or data_at + length > size:
            raise CorruptShardError(
                f"{shown} is truncated: the member at offset {at} declares {length} bytes, "
                f"past the end of the file ({size} bytes)"
            )
        following = data_at + -(-length // BLOCK) * BLOCK
        if kind in (b"L", b"x"):
            if length > _MAX_META:
                raise CorruptShardError(
                    f"{shown}: the tar header at offset {at} declares {length} bytes of "
                    "metadata, more than a name or pax record can need"
                )
            data = windows.get(data_at, length)
            length = 0  # read, not jumped
            if kind == b"L":
                long_name = _text(data)
            else:
                pax = _pax(data, shown, at)
        elif kind in _REGULAR:
            name = long_name
            if "path" in pax:
                name = pax["path"]
            if name is None:
                name = _text(header[0:100])
                if header[257:262] == b"ustar" and header[345:500].strip(b"\0"):
                    name = _text(header[345:500]) + "/" + name
            if "size" in pax:
                length = int(pax["size"]) if pax["size"].isdigit() else -1
                if length < 0 or data_at + length > size:
                    raise CorruptShardError(
                        f"{shown}: the pax size of the member at offset {at} is past the end"
                    )
                following = data_at + -(-length // BLOCK) * BLOCK
            yield Member(name, data_at, length)
            long_name, pax = None, {}
        elif kind in _SKIPPED:
            long_name, pax = None, {}
        else:
            raise CorruptShardError(
                f"{shown}: the tar header at offset {at} has an unknown type {kind!r}"
            )
        at, body = following, length
    if at < size:
        raise CorruptShardError(f"{shown} is truncated: a header at offset {at} is cut short")
    # No end-of-archive blocks: tolerated, as tar itself does.

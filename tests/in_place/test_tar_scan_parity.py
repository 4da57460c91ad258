"""The Rust tar scan against the Python parser it replaced: the same members on real tars
(written by the ``webdataset`` package and by ``tarfile`` in each format), and the same
error, message for message, on corrupt ones."""

from __future__ import annotations

import io
import random
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tar_members_reference as reference
import webdataset
from wds_data import add, fields

from streamx.exceptions import CorruptShardError
from streamx.format.webdataset import tar_members


def _members(data: bytes) -> list[tar_members.Member]:
    return tar_members.scan_members(lambda s, n: data[s : s + n], len(data), "x")


def _outcome(scan: Callable[[], list[Any]]) -> list[tuple[str, int, int]] | str:
    try:
        found = scan()
    except CorruptShardError as err:
        return f"CorruptShardError: {err}"
    return [(m.name, m.offset, m.size) for m in found]


def _all_three(data: bytes, tmp_path: Path, shown: str = "x.tar") -> list[object]:
    path = tmp_path / "scan.tar"
    path.write_bytes(data)

    def read(start: int, n: int) -> bytes:
        return data[start : start + n]

    return [
        _outcome(lambda: reference.scan_members(read, len(data), shown)),
        _outcome(lambda: tar_members.scan_members(read, len(data), shown)),
        _outcome(lambda: tar_members.scan_file(path, len(data), shown)),
    ]


def _webdataset_tar(path: Path) -> bytes:
    with webdataset.TarWriter(str(path)) as sink:
        for i in range(60):
            sample = {"__key__": f"dir/s{i:04d}", **fields(i)}
            if i % 7 == 0:
                sample["__key__"] = "deep/" + "k" * 120 + f"{i}"  # past a ustar name
            sink.write(sample)
    return path.read_bytes()


def _tarfile_tar(form: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=form) as tar:
        directory = tarfile.TarInfo("dir")
        directory.type = tarfile.DIRTYPE
        tar.addfile(directory)
        add(tar, "p" * 60 + "/" + "q" * 60 + "/n.txt", b"prefix and name")
        add(tar, "big.bin", bytes(range(256)) * 20_000)  # 5 MB: jumped by the windows
        link = tarfile.TarInfo("link.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "n.txt"
        tar.addfile(link)
        if form != tarfile.USTAR_FORMAT:
            add(tar, "/".join(["d" * 40] * 6) + "/long.json", b"{}")
        if form == tarfile.PAX_FORMAT:
            add(tar, "ünïcode-名前.txt", b"pax")
        for i in range(5):
            for ext, data in fields(i).items():
                add(tar, f"sample-{i:05d}.{ext}", data)
    return buf.getvalue()


@pytest.mark.parametrize(
    "form", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT], ids=str
)
def test_same_members_on_tarfile_tars(form: int, tmp_path: Path) -> None:
    data = _tarfile_tar(form)
    old, from_read, from_file = _all_three(data, tmp_path)
    assert isinstance(old, list) and len(old) > 8
    assert from_read == old and from_file == old


def test_same_members_on_webdataset_tars(tmp_path: Path) -> None:
    data = _webdataset_tar(tmp_path / "w.tar")
    old, from_read, from_file = _all_three(data, tmp_path)
    assert isinstance(old, list) and len(old) == 60 * 5
    assert from_read == old and from_file == old


def test_names_that_are_not_utf8_decode_alike(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT, encoding="latin-1") as tar:
        add(tar, "caf\xe9.txt", b"latin-1 name")
        add(tar, "l" * 120 + "\xff.bin", b"long latin-1 name")
    old, from_read, from_file = _all_three(buf.getvalue(), tmp_path)
    assert isinstance(old, list) and old[0][0] == "caf\udce9.txt"
    assert from_read == old and from_file == old


def _header(name: bytes, kind: bytes, size_field: bytes, checksum: bytes | None = None) -> bytes:
    header = bytearray(512)
    header[0 : len(name)] = name
    header[124 : 124 + len(size_field)] = size_field
    header[156:157] = kind
    header[257:263] = b"ustar\0"
    header[148:156] = b" " * 8
    header[148:156] = checksum or f"{sum(header):06o}\0 ".encode()
    return bytes(header)


def _pax(records: bytes) -> bytes:
    body = records + bytes(-len(records) % 512)
    return _header(b"P", b"x", f"{len(records):011o}\0".encode()) + body


_PLAIN = _header(b"a.txt", b"0", b"00000000003\0") + b"abc".ljust(512, b"\0")
_CRAFTED = {
    "bad size text": _PLAIN + _header(b"b", b"0", b"12'9\0"),
    "size with 0o and _": _PLAIN + _header(b"b", b"0", b" 0o_1\0") + bytes(512),
    "negative size": _PLAIN + _header(b"b", b"0", b"-7\0"),
    "base-256 huge": _PLAIN + _header(b"b", b"0", b"\x80" + (1 << 80).to_bytes(11, "big")),
    "base-256 negative": _PLAIN + _header(b"b", b"0", b"\xc0" + bytes(10) + b"\x05"),
    "bad checksum text": _PLAIN + _header(b"b", b"0", b"0\0", b"zz\0     "),
    "bad first checksum": _header(b"b", b"0", b"0\0", b"0000001\0"),
    "unknown kind": _PLAIN + _header(b"b", b"\xfe", b"0\0"),
    "long meta": _header(b"L", b"L", f"{2 << 20:011o}\0".encode()) + bytes(2 << 20),
    "pax no space": _pax(b"12path=x\n"),
    "pax length 0": _pax(b"0 path=x\n"),
    "pax past the end": _pax(b"99 path=x\n"),
    "pax no equals": _pax(b"9 pathx\n\n"),
    "pax leading zero": _pax(b"010 path=x\n"),
    "pax underscores": _pax(b"1_2 path=xy\n") + _header(b"n", b"0", b"0\0"),
    "pax path and size": _pax(b"11 path=xy\n11 size=03\n") + _PLAIN,
    "pax size past the end": _pax(b"16 size=9999999\n") + _PLAIN,
    "pax size not digits": _pax(b"11 size=-3\n") + _PLAIN,
    "pax size empty": _pax(b"9 size=\n\n") + _PLAIN,
    "header cut short": _PLAIN + _header(b"b", b"0", b"0\0")[:300],
    "member cut short": _PLAIN + _header(b"b", b"0", b"00000001000\0") + bytes(100),
    "no end blocks": _PLAIN,
    "not a tar": b"id,text\n" * 200,
    "too small": b"0123456789",
}


@pytest.mark.parametrize("name", sorted(_CRAFTED))
def test_same_outcome_on_crafted_headers(name: str, tmp_path: Path) -> None:
    old, from_read, from_file = _all_three(_CRAFTED[name] + bytes(1024), tmp_path)
    if name in ("header cut short", "member cut short", "not a tar", "too small"):
        old, from_read, from_file = _all_three(_CRAFTED[name], tmp_path)
    assert from_read == old and from_file == old


def test_same_outcome_on_damaged_tars(tmp_path: Path) -> None:
    """Bytes of headers flipped at random, and archives cut at random points."""
    rng = random.Random(23)
    sources = [_tarfile_tar(tarfile.GNU_FORMAT), _tarfile_tar(tarfile.PAX_FORMAT)]
    sources.append(_webdataset_tar(tmp_path / "w.tar"))
    errors = 0
    for case in range(300):
        data = bytearray(rng.choice(sources))
        if case % 3 == 0:
            data = data[: rng.randrange(len(data))]
        else:
            headers = [m.offset - 512 for m in _members(bytes(data))]
            at = rng.choice(headers) + rng.choice([rng.randrange(512), 124, 130, 148, 156, 345])
            data[at] = rng.randrange(256)
            if case % 2:  # the checksum made right again: the field itself is read
                data[at - at % 512 + 148 : at - at % 512 + 156] = b" " * 8
                total = sum(data[at - at % 512 : at - at % 512 + 512])
                data[at - at % 512 + 148 : at - at % 512 + 156] = f"{total:06o}\0 ".encode()
        old, from_read, from_file = _all_three(bytes(data), tmp_path, f"case{case}.tar")
        assert from_read == old, case
        assert from_file == old, case
        errors += isinstance(old, str)
    assert errors > 50


class _Refused(Exception):
    pass


def test_errors_of_read_pass_through_and_end_the_scan() -> None:
    data = _tarfile_tar(tarfile.GNU_FORMAT)
    calls = []

    def read(start: int, n: int) -> bytes:
        calls.append(start)
        if len(calls) > 1:
            raise _Refused(f"no bytes at {start}")
        return data[start : start + n]

    members = tar_members.iter_members(read, len(data), "x.tar")
    first = [next(members) for _ in range(2)]  # the first window holds their headers
    assert [m.name for m in first] == ["p" * 60 + "/" + "q" * 60 + "/n.txt", "big.bin"]
    with pytest.raises(_Refused, match="no bytes at"):
        next(members)  # the next header lies past the first window (big.bin is jumped)
    assert next(members, None) is None

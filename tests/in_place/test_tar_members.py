"""The tar header scan against Python's ``tarfile``, and hostile or broken archives."""

from __future__ import annotations

import io
import tarfile

import pytest
from wds_data import add

from streamx.exceptions import CorruptShardError
from streamx.format.webdataset import tar_members
from streamx.format.webdataset.tar_members import Member, scan_members


def _scan(data: bytes, shown: str = "x.tar") -> list[Member]:
    return scan_members(lambda start, n: data[start : start + n], len(data), shown)


def _archive(form: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=form) as tar:
        deep = "/".join(["d" * 30] * 5)  # 154 characters: past the 100 of a plain name
        directory = tarfile.TarInfo("dir")
        directory.type = tarfile.DIRTYPE
        tar.addfile(directory)
        add(tar, "small.txt", b"hi")
        add(tar, "empty.cls", b"")
        add(tar, f"{deep}/long.json", b"{}")
        add(tar, "big.bin", bytes(range(256)) * 12_000)  # ~3 MB: windows skip over it
        link = tarfile.TarInfo("link.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "small.txt"
        tar.addfile(link)
        if form == tarfile.PAX_FORMAT:
            add(tar, "ünïcode-名前.txt", b"pax names")
        add(tar, "last.txt", b"end")
    return buf.getvalue()


@pytest.mark.parametrize(
    "form", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT], ids=str
)
def test_members_match_tarfile(form: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if form == tarfile.USTAR_FORMAT:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=form) as tar:
            add(tar, "p" * 60 + "/" + "q" * 60 + "/name.txt", b"prefix and name")
            add(tar, "b.txt", b"x" * 1000)
        data = buf.getvalue()
    else:
        data = _archive(form)
    monkeypatch.setattr(tar_members, "MIN_WINDOW", 4096)
    monkeypatch.setattr(tar_members, "MAX_WINDOW", 16384)
    monkeypatch.setattr(tar_members, "SKIP", 65536)
    reads: list[tuple[int, int]] = []

    def read(start: int, n: int) -> bytes:
        reads.append((start, n))
        return data[start : start + n]

    found = scan_members(read, len(data), "x.tar")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        want = [Member(m.name, m.offset_data, m.size) for m in tar.getmembers() if m.isreg()]
    assert found == want
    assert sum(n for _, n in reads) < len(data) / 2, "the large member's bytes are not read"


def test_no_end_blocks_is_tolerated() -> None:
    data = _archive(tarfile.GNU_FORMAT)
    end = max(m.offset + m.size for m in _scan(data))
    cut = data[: -(-end // 512) * 512]
    assert [m.name for m in _scan(cut)] == [m.name for m in _scan(data)]


def test_not_a_tar() -> None:
    with pytest.raises(CorruptShardError, match=r"junk\.tar is not a tar file"):
        _scan(b"id,text\n" * 200, "junk.tar")
    with pytest.raises(CorruptShardError, match=r"tiny\.tar is not a tar file: 10 bytes"):
        _scan(b"0123456789", "tiny.tar")


def test_truncated_member() -> None:
    data = _archive(tarfile.GNU_FORMAT)
    big = next(m for m in _scan(data) if m.name == "big.bin")
    with pytest.raises(CorruptShardError, match=r"cut\.tar is truncated: the member at offset"):
        _scan(data[: big.offset + 1000], "cut.tar")


def test_header_cut_short() -> None:
    data = _archive(tarfile.GNU_FORMAT)
    first = _scan(data)[0]
    after = first.offset + 512  # "small.txt" is 2 bytes: its data block, then a header
    with pytest.raises(CorruptShardError, match=rf"is truncated: a header at offset {after}"):
        _scan(data[: after + 100], "h.tar")


def test_corrupt_header_names_its_offset() -> None:
    data = bytearray(_archive(tarfile.GNU_FORMAT))
    second = _scan(bytes(data))[1].offset - 512
    data[second + 3] ^= 0xFF
    with pytest.raises(CorruptShardError, match=rf"header at offset {second} is corrupt"):
        _scan(bytes(data))


def _raw_header(name: bytes, kind: bytes, size_field: bytes) -> bytes:
    header = bytearray(512)
    header[0 : len(name)] = name
    header[100:108] = b"0000644\0"
    header[124:136] = size_field
    header[156:157] = kind
    header[257:263] = b"ustar\0"
    header[148:156] = b" " * 8
    header[148:156] = f"{sum(header):06o}\0 ".encode()
    return bytes(header)


def test_hostile_sizes_are_errors_not_allocations() -> None:
    # A base-256 size of 2**60 bytes in a 1 KiB file.
    huge = b"\x80" + (1 << 60).to_bytes(11, "big")
    data = _raw_header(b"a.bin", b"0", huge) + bytes(512)
    with pytest.raises(CorruptShardError, match=r"declares 1152921504606846976 bytes"):
        _scan(data)
    # A GNU long name of 2 MiB, present in the file: refused before it is read.
    long_name = _raw_header(b"././@LongLink", b"L", f"{2 << 20:011o}\0".encode())
    data = long_name + bytes(2 << 20) + bytes(1024)
    with pytest.raises(CorruptShardError, match=r"more than a name or pax record can need"):
        _scan(data)


def test_unknown_member_type() -> None:
    data = _raw_header(b"odd", b"Z", b"00000000000\0") + bytes(1024)
    with pytest.raises(CorruptShardError, match=r"unknown type b'Z'"):
        _scan(data)


def test_windows_read_on_over_small_members_and_jump_large_ones() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(4000):  # 4000 members of 100 bytes: 4 MB of headers and bodies
            add(tar, f"s{i:05d}.txt", b"x" * 100)
        for i in range(8):  # then 8 past the jump threshold
            add(tar, f"b{i}.bin", bytes(tar_members.SKIP + 1))
    data = buf.getvalue()
    reads: list[tuple[int, int]] = []

    def read(start: int, n: int) -> bytes:
        reads.append((start, n))
        return data[start : start + n]

    assert len(scan_members(read, len(data), "w.tar")) == 4008
    small_part = 4000 * 1024
    assert len([r for r in reads if r[0] < small_part]) <= 8  # 64 KiB, 128 KiB, ... 4 MiB
    past = [n for start, n in reads if start > small_part + 4096]
    assert len(past) == 8 and max(past) == tar_members.MIN_WINDOW  # bodies never read

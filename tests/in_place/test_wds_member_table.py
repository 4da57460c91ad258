"""The binary member table: the same samples back, every inconsistency refused by name,
and tables of an older streamx (JSON) still read."""

from __future__ import annotations

import json
import struct
import tarfile
from pathlib import Path

import pytest
from wds_data import add

from streamx.exceptions import CorruptShardError
from streamx.format.remote_files import RemoteFile
from streamx.format.webdataset.index import load_table, save_table, table_count
from streamx.format.webdataset.member_table import (
    MAGIC,
    decode_table,
    encode_columns,
    encode_table,
)
from streamx.format.webdataset.samples import Field, TarSample, group_columns, group_samples
from streamx.format.webdataset.tar_members import Member, scan_file_rows

_SAMPLES = [
    TarSample("dir/a", (Field("cls", 512, 1), Field("seg.npy", 1536, 200))),
    TarSample("caf\udce9", (Field("txt", 2560, 0),)),  # a key that was not UTF-8
    TarSample("empty", ()),
    TarSample("名前", (Field("json", 3584, 10), Field("cls", 4608, 2))),
]
_SIZE = 8192


def _saved(tmp_path: Path, samples: list[TarSample] = _SAMPLES) -> str:
    path = str(tmp_path / "t" / "x.members")
    save_table(path, RemoteFile("s3://b/x.tar", _SIZE, "v1"), samples)
    return path


def test_round_trip(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    table = load_table(path, "x.tar", _SIZE)
    assert list(table) == _SAMPLES
    assert table[-1] == _SAMPLES[-1] and table[1:3] == _SAMPLES[1:3]
    assert table_count(path, "x.tar", _SIZE) == 4
    with pytest.raises(IndexError):
        table[4]
    empty = _saved(tmp_path, [])
    assert list(load_table(empty, "x.tar", _SIZE)) == []


def test_json_tables_of_older_versions_are_read(tmp_path: Path) -> None:
    rows = [[s.key, [[f.name, f.offset, f.size] for f in s.fields]] for s in _SAMPLES]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"url": "x", "size": _SIZE, "version": "", "samples": rows}))
    assert list(load_table(str(path), "x.tar", _SIZE)) == _SAMPLES
    assert table_count(str(path), "x.tar", _SIZE) == 4


def _words(data: bytes) -> list[int]:
    return list(struct.unpack_from(f"<{(len(data) - 40) // 8}q", data, 40))


def _damaged() -> dict[str, bytes]:
    good = encode_table(_SAMPLES, {})
    samples, fields = len(_SAMPLES), sum(len(s.fields) for s in _SAMPLES)

    def word(i: int, value: int) -> bytes:
        return good[: 40 + 8 * i] + struct.pack("<q", value) + good[48 + 8 * i :]

    offsets = 2 * samples + 1 + fields
    return {
        "truncated": good[:-3],
        "longer": good + b"x",
        "short head": good[:20],
        "magic": b"SXWDSMT9" + good[8:],
        "huge counts": MAGIC + struct.pack("<QQQQ", 1 << 62, 1 << 62, 0, 0) + good[40:],
        "fields out of order": word(2, 1),
        "first not 0": word(0, 1),
        "text past its end": word(samples, 10**6),
        "negative offset": word(offsets, -1),
        "field past the tar": word(offsets + fields, _SIZE),
        "json": b"{not json",
    }


@pytest.mark.parametrize("case", sorted(_damaged()))
def test_damaged_tables_are_refused_by_name(case: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.members"
    path.write_bytes(_damaged()[case])
    with pytest.raises(CorruptShardError, match=r"cached member table .*bad\.members of x\.tar"):
        list(load_table(str(path), "x.tar", _SIZE))


def test_layout_is_the_documented_one() -> None:
    data = encode_table(_SAMPLES, {"url": "x"})
    assert len(data) == 40 + 8 * (2 * 4 + 1 + 3 * 5) + len(
        "".join(s.key for s in _SAMPLES).encode("utf-8", "surrogateescape")
    ) + len("clsseg.npytxtjsoncls") + len(json.dumps({"url": "x"}))
    assert len(decode_table(data, _SIZE)) == 4


def _rows_tar(tmp_path: Path) -> Path:
    path = tmp_path / "g.tar"
    with tarfile.open(path, "w") as tar:
        for name in [
            "__meta__",
            "a/x.CLS",
            "a/x.seg.npy",
            "README",
            "a/y.cls",
            "a/x.cls",
            "b/.hidden",
            "c.d/e.TXT",
            "f\nline/g.txt",
            "h.txt\n",
            "名.json",
        ]:
            add(tar, name, name.encode())
    return path


def test_columns_group_as_samples_do(tmp_path: Path) -> None:
    path = _rows_tar(tmp_path)
    size = path.stat().st_size
    rows = scan_file_rows(str(path), size, "g.tar")
    want = group_samples((Member(*row) for row in rows), "g.tar")
    table = decode_table(encode_columns(group_columns(rows, "g.tar"), {}), size)
    assert list(table) == want and len(want) == 6


def test_columns_refuse_a_field_twice_as_samples_do(tmp_path: Path) -> None:
    path = tmp_path / "d.tar"
    with tarfile.open(path, "w") as tar:
        for name in ["k.cls", "k.txt", "k.CLS"]:
            add(tar, name, b"1")
    rows = scan_file_rows(str(path), path.stat().st_size, "d.tar")
    with pytest.raises(CorruptShardError) as old:
        group_samples((Member(*row) for row in rows), "d.tar")
    with pytest.raises(CorruptShardError) as new:
        group_columns(rows, "d.tar")
    assert str(new.value) == str(old.value)

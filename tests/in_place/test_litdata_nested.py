"""LitData's compact ``json`` leaves read in place: a list or dict beside array leaves is
one tagged leaf in the sample's bytes (no Arrow footer), decoded as LitData decodes it; a
damaged leaf is a ``CorruptShardError`` naming the chunk and sample."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streamx import LitDataStream, StreamingDataset
from streamx.exceptions import CorruptShardError
from streamx.format.litdata.nested import decode_nested

litdata = pytest.importorskip("litdata")

COUNT = 24


def listed(i: int) -> dict[str, Any]:
    """Arrays beside lists and a dict of lists: LitData writes the lists as json leaves."""
    return {
        "id": i,
        "vec": np.arange(3, dtype=np.int64) * i,
        "tags": [i, i + 1],
        "names": [f"n{i}", "é"],
        "meta": {"w": i / 2, "keys": [True, i % 2 == 0], "deep": {"x": [i], "y": [[i], []]}},
        "rows": [{"a": i, "b": f"{i}"}, {"a": -i, "b": ""}],
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nested") / "ds"
    litdata.optimize(
        fn=listed,
        inputs=list(range(COUNT)),
        output_dir=str(out),
        chunk_size=8,
        num_workers=1,
        mode="overwrite",
        verbose=False,
    )
    return out


def _ours(remote: Path, local: Path) -> StreamingDataset:
    return StreamingDataset(
        streams=[LitDataStream(remote=str(remote), local=str(local))], batch_size=4
    )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.tolist())
    if hasattr(value, "numpy"):
        return _plain(value.numpy())
    return value


def test_json_leaves_read_as_litdata_reads_them(written: Path, tmp_path: Path) -> None:
    import json

    index = json.loads((written / "index.json").read_text())
    assert "json" in index["config"]["data_format"]  # the case under test: json leaves
    ours = _ours(written, tmp_path / "c")
    theirs = litdata.StreamingDataset(str(written))
    for i in range(COUNT):
        assert _plain(ours[i]) == _plain(theirs[i]) == _plain(listed(i)), i


def test_a_damaged_json_leaf_names_the_chunk_and_sample(written: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    chunk = sorted(copy.glob("chunk-*.bin"))[0]
    data = bytearray(chunk.read_bytes())
    count = struct.unpack_from("<I", data)[0]
    offsets = struct.unpack_from(f"<{count + 1}I", data, 4)
    # Sample 5's leaves: their sizes first; find a tagged list leaf (tag 2: int64s) and
    # make its count larger than the chunk.
    start, end = offsets[5], offsets[6]
    at = data.index(bytes([2]) + struct.pack("<I", 2), start, end)
    struct.pack_into("<I", data, at + 1, 1 << 30)
    chunk.write_bytes(bytes(data))
    ds = _ours(copy, tmp_path / "c2")
    assert _plain(ds[4]) == _plain(listed(4))
    with pytest.raises(CorruptShardError, match=rf"{chunk.name}, sample 5.*more than its bytes"):
        ds[5]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (bytes([8]) + b"\0\0", "past its end"),
        (bytes([1]) + struct.pack("<I", 0xFFFFFFFF), "more than its bytes"),
        (bytes([6]) + struct.pack("<II", 1 << 31, 0), "without keys"),
        (bytes([12]), "unknown nested value tag"),
        (bytes([11, 11]), "follow the nested value"),
        (
            bytes([5]) + (struct.pack("<I", 1) + struct.pack("<I", 1) + b"k" + bytes([5])) * 70,
            "levels deep",
        ),
        (bytes([7]) + struct.pack("<I", 2) + b"\xff\xfe", "codec can't decode"),
        (b"[1, 2", "Expecting"),
    ],
)
def test_damaged_values_are_value_errors(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_nested(data)


def _u32(n: int) -> bytes:
    return struct.pack("<I", n)


def _text(t: str) -> bytes:
    raw = t.encode()
    return _u32(len(raw)) + raw


def test_plain_json_text_and_every_tag() -> None:
    """Values built by hand from the format's table, independent of LitData's writer."""
    assert decode_nested(b'{"a": [1, 2]}') == {"a": [1, 2]}  # legacy: JSON text
    assert decode_nested(bytes([0]) + _text('{"x": [null]}')) == {"x": [None]}
    assert decode_nested(bytes([1]) + _u32(2) + _text("a") + _text("é")) == ["a", "é"]
    assert decode_nested(bytes([2]) + _u32(2) + struct.pack("<qq", -1, 2**40)) == [-1, 2**40]
    assert decode_nested(bytes([3]) + _u32(1) + struct.pack("<d", 0.25)) == [0.25]
    assert decode_nested(bytes([4]) + _u32(3) + bytes([1, 0, 1])) == [True, False, True]
    record = (
        bytes([0x10])
        + bytes([0x11])
        + _text("s")
        + bytes([0x12])
        + struct.pack("<q", 7)
        + bytes([0x13])
        + struct.pack("<d", 1.5)
        + bytes([0x14, 1])
    )
    keys = _u32(5) + b"".join(_text(k) for k in "abcde")
    got = decode_nested(bytes([6]) + _u32(2) + keys + record * 2)
    assert got == [{"a": None, "b": "s", "c": 7, "d": 1.5, "e": True}] * 2
    inner = bytes([7]) + _text("v")
    assert decode_nested(bytes([5]) + _u32(2) + _text("k") + inner + _text("n") + bytes([11])) == {
        "k": "v",
        "n": None,
    }
    assert decode_nested(bytes([8]) + struct.pack("<q", -5)) == -5
    assert decode_nested(bytes([9]) + struct.pack("<d", 2.5)) == 2.5
    assert decode_nested(bytes([10, 0])) is False
    assert decode_nested(bytes([11])) is None
    with pytest.raises(ValueError):
        decode_nested(b"")  # not JSON, and no tag

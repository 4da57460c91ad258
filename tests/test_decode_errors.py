"""A value that does not decode names the shard file, the sample and the column (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamx import MDSWriter, StreamingDataset
from streamx.exceptions import CorruptShardError
from streamx.format.encodings import get_coder

GOOD = {"json": b'{"a": 1}', "jpeg": None, "png": None, "pil": None}
BAD = {
    "json": b'{"a": ',
    "jpeg": b"\xff\xd8 not a jpeg at all",
    "png": b"\x89PNG garbage",
    "pil": b"ab",
}


def _dataset(root: Path, encoding: str) -> Path:
    """Three samples whose column ``v`` is declared ``encoding``; sample 1 holds bad bytes."""
    with MDSWriter(out=str(root), columns={"id": "int", "v": "bytes"}) as w:
        for i in range(3):
            value = BAD[encoding] if i == 1 else (GOOD[encoding] or BAD[encoding])
            w.write({"id": i, "v": value})
    index = json.loads((root / "index.json").read_text())
    for shard in index["shards"]:
        shard["column_encodings"] = ["int", encoding]
    (root / "index.json").write_text(json.dumps(index))
    return root


@pytest.mark.parametrize("encoding", ["json", "jpeg", "png", "pil"])
@pytest.mark.parametrize("zero_copy", [False, True])
def test_a_bad_value_names_file_sample_and_column(
    encoding: str, zero_copy: bool, tmp_path: Path
) -> None:
    root = _dataset(tmp_path / "ds", encoding)
    data = StreamingDataset(local=str(root), batch_size=1, zero_copy=zero_copy)
    with pytest.raises(CorruptShardError) as caught:
        data[1]
    text = str(caught.value)
    assert str(root / "shard.00000.mds") in text
    assert "sample 1" in text
    assert "'v'" in text and f"({encoding})" in text


def test_a_short_pil_value_is_a_value_error_naming_it() -> None:
    coder = get_coder("pil")
    for short in (b"", b"ab", b"\x01\x00\x00\x00\x01\x00\x00\x00\x09\x00\x00\x00RG"):
        with pytest.raises(ValueError, match="pil value of"):
            coder.decode(short)


def test_good_values_still_decode(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds", "json")
    data = StreamingDataset(local=str(root), batch_size=1)
    assert data[0]["v"] == {"a": 1}
    assert data[2]["v"] == {"a": 1}

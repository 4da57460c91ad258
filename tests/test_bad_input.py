"""Bad data on disk gets a clear Python exception naming the file, never a panic or a hang."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import streamx
from streamx.exceptions import CorruptShardError


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    with streamx.MDSWriter(
        out=str(tmp_path), columns={"id": "int", "text": "str"}, size_limit=300
    ) as writer:
        for i in range(20):
            writer.write({"id": i, "text": f"text {i}"})
    return tmp_path


def _open(path: Path) -> streamx.StreamingDataset:
    return streamx.StreamingDataset(local=str(path), batch_size=2)


def test_truncated_shard(dataset: Path) -> None:
    shard = dataset / "shard.00000.mds"
    shard.write_bytes(shard.read_bytes()[:-5])
    with pytest.raises(CorruptShardError, match="shard.00000.mds"):
        _open(dataset)[0]


def test_offsets_beyond_end(dataset: Path) -> None:
    shard = dataset / "shard.00000.mds"
    data = bytearray(shard.read_bytes())
    data[8:12] = struct.pack("<I", 10**6)
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptShardError, match="shard.00000.mds"):
        _open(dataset)[0]


def test_garbage_shard(dataset: Path) -> None:
    (dataset / "shard.00001.mds").write_bytes(b"\xff" * 3)
    ds = _open(dataset)
    first_of_shard_1 = ds.samples_per_shard[0]
    with pytest.raises(CorruptShardError, match="shard.00001.mds"):
        ds[int(first_of_shard_1)]


def test_sample_count_disagrees_with_index(dataset: Path) -> None:
    index = json.loads((dataset / "index.json").read_text())
    index["shards"][0]["samples"] += 1
    (dataset / "index.json").write_text(json.dumps(index))
    with pytest.raises(CorruptShardError, match="index says"):
        _open(dataset)[0]


def test_corrupt_utf8_names_sample(dataset: Path) -> None:
    shard = dataset / "shard.00000.mds"
    data = shard.read_bytes()
    shard.write_bytes(data[:-3] + b"\xff\xfe\xfd")
    ds = _open(dataset)
    last = int(ds.samples_per_shard[0]) - 1
    with pytest.raises(CorruptShardError, match=f"sample {last}, column text"):
        ds[last]


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="does not exist either"):
        _open(tmp_path)
    with pytest.raises(FileNotFoundError):
        streamx.LocalDataset(str(tmp_path))


@pytest.mark.parametrize("text", ["", "{not json", "[1, 2"])
def test_empty_or_invalid_index(tmp_path: Path, text: str) -> None:
    (tmp_path / "index.json").write_text(text)
    with pytest.raises(
        json.JSONDecodeError, match="Index file at .*index.json is empty or corrupted"
    ):
        _open(tmp_path)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("column_encodings", ["int", "nope"], "unknown encoding 'nope'"),
        ("compression", "lz4", "Unknown compression 'lz4'"),
        ("format", "parquet", "Unknown shard format"),
    ],
)
def test_index_with_unknown_names(dataset: Path, key: str, value: object, message: str) -> None:
    index = json.loads((dataset / "index.json").read_text())
    index["shards"][0][key] = value
    (dataset / "index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=message):
        _open(dataset)


@pytest.mark.parametrize("basename", ["../escape.mds", "/etc/passwd", "a/../../b.mds"])
def test_basename_escaping_dataset(dataset: Path, basename: str) -> None:
    index = json.loads((dataset / "index.json").read_text())
    index["shards"][0]["raw_data"]["basename"] = basename
    (dataset / "index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="escapes the dataset directory"):
        _open(dataset)


def test_corrupt_compressed_shard(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"id": "int"}, compression="zstd") as writer:
        for i in range(10):
            writer.write({"id": i})
    (tmp_path / "shard.00000.mds.zstd").write_bytes(b"not zstd at all")
    with pytest.raises(CorruptShardError, match="shard.00000.mds.zstd"):
        _open(tmp_path)[0]
    assert not (tmp_path / "shard.00000.mds").exists()  # nothing half-written is visible

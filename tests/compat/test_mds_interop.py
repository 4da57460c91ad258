"""Byte-for-byte MDS interop with mosaicml-streaming 0.13.0, in both directions.

For every encoding and compression (all 17 hashes recorded each time): the uncompressed
shard bytes and ``index.json`` written by the two libraries are identical, and each library
decodes the other's output to the same values and types.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import streamx
from samples import ENCODINGS, assert_same_value, value_for

streaming = pytest.importorskip("streaming")
from streaming.base.compression import decompress as mosaic_decompress  # noqa: E402

pytestmark = pytest.mark.compat

ALL_HASHES = sorted(
    [
        "blake2b",
        "blake2s",
        "md5",
        "sha1",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "sha3_224",
        "sha3_256",
        "sha3_384",
        "sha3_512",
        "xxh32",
        "xxh64",
        "xxh128",
        "xxh3_64",
        "xxh3_128",
    ]
)
COMPRESSIONS = [None, "br", "bz2", "gz", "snappy", "zstd"]
NUM_SAMPLES = 7


def _samples(encoding: str) -> list[dict[str, Any]]:
    return [{"id": i, "value": value_for(encoding, i)} for i in range(NUM_SAMPLES)]


def _write(lib: Any, out: Path, encoding: str, compression: str | None, **kwargs: Any) -> None:
    columns = {"id": "int", "value": encoding}
    size_limit = kwargs.pop("size_limit", 600)
    with lib.MDSWriter(
        out=str(out), columns=columns, compression=compression, hashes=ALL_HASHES,
        size_limit=size_limit, **kwargs,
    ) as writer:  # fmt: skip
        for sample in _samples(encoding):
            writer.write(sample)


def _raw_files(out: Path, index: dict[str, Any]) -> list[bytes]:
    """The uncompressed bytes of every shard, decompressing where only the zip exists."""
    raws = []
    for shard in index["shards"]:
        if shard["zip_data"]:
            data = (out / shard["zip_data"]["basename"]).read_bytes()
            raws.append(mosaic_decompress(shard["compression"], data))
        else:
            raws.append((out / shard["raw_data"]["basename"]).read_bytes())
    return raws


class _MosaicReader:
    """mosaicml-streaming's own shard readers over a directory, after decompressing as its
    StreamingDataset would (its LocalDataset cannot decompress, and each StreamingDataset
    leaks two dozen descriptors, which a long parametrised suite cannot afford)."""

    def __init__(self, out: Path) -> None:
        from streaming.base.format import reader_from_json

        index = json.loads((out / "index.json").read_text())
        self.shards = []
        for entry in index["shards"]:
            if entry["zip_data"] and not (out / entry["raw_data"]["basename"]).exists():
                packed = (out / entry["zip_data"]["basename"]).read_bytes()
                raw = mosaic_decompress(entry["compression"], packed)
                (out / entry["raw_data"]["basename"]).write_bytes(raw)
            self.shards.append(reader_from_json(str(out), None, entry))

    def __len__(self) -> int:
        return sum(shard.samples for shard in self.shards)

    def __getitem__(self, index: int) -> Any:
        for shard in self.shards:
            if index < shard.samples:
                return shard[index]
            index -= shard.samples
        raise IndexError(index)


def _mosaic_reader(out: Path) -> Any:
    return _MosaicReader(out)


def _strip_zip(index: dict[str, Any]) -> dict[str, Any]:
    """Compressed sizes and digests depend on the codec library, so they may differ."""
    for shard in index["shards"]:
        if shard["zip_data"]:
            shard["zip_data"] = {"basename": shard["zip_data"]["basename"]}
    return index


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_same_bytes_and_values_both_ways(
    tmp_path: Path, encoding: str, compression: str | None
) -> None:
    ours, theirs = tmp_path / "streamx", tmp_path / "mosaic"
    _write(streamx, ours, encoding, compression)
    _write(streaming, theirs, encoding, compression)

    our_text = (ours / "index.json").read_text()
    their_text = (theirs / "index.json").read_text()
    our_index, their_index = json.loads(our_text), json.loads(their_text)
    if compression is None:
        assert our_text == their_text
    assert _strip_zip(our_index) == _strip_zip(their_index)
    assert _raw_files(ours, our_index) == _raw_files(theirs, their_index)
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))

    expected = _mosaic_reader(theirs)
    for name, got in (
        ("mosaic reads streamx", _mosaic_reader(ours)),
        ("streamx reads mosaic", streamx.LocalDataset(str(theirs), allow_unsafe_types=True)),
    ):
        assert len(got) == len(expected) == NUM_SAMPLES
        for i in range(NUM_SAMPLES):
            for column in ("id", "value"):
                assert_same_value(
                    got[i][column], expected[i][column], f"{name} sample {i} {column}"
                )


@pytest.mark.slow
@pytest.mark.parametrize("compression", streamx._core.compression_names())
def test_every_compression_level(tmp_path: Path, compression: str) -> None:
    ours, theirs = tmp_path / "streamx", tmp_path / "mosaic"
    _write(streamx, ours, "str", compression)
    _write(streaming, theirs, "str", compression)
    our_index = json.loads((ours / "index.json").read_text())
    their_index = json.loads((theirs / "index.json").read_text())
    assert _strip_zip(our_index) == _strip_zip(their_index)
    assert _raw_files(ours, our_index) == _raw_files(theirs, their_index)
    got, expected = streamx.LocalDataset(str(theirs), allow_unsafe_types=True), _mosaic_reader(ours)
    assert [got[i]["value"] for i in range(NUM_SAMPLES)] == [
        expected[i]["value"] for i in range(NUM_SAMPLES)
    ]


def test_compression_names_match_mosaic() -> None:
    from streaming.base.compression import get_compressions

    assert set(streamx._core.compression_names()) == set(get_compressions())


def test_hash_names_match_mosaic() -> None:
    from streaming.base.hashing import get_hashes

    assert set(streamx._core.hash_names()) == set(get_hashes())


@pytest.mark.parametrize("size_limit", [100, 400, 1 << 20, None])
def test_shard_boundaries_match(tmp_path: Path, size_limit: int | None) -> None:
    """Including the quirk: a header bigger than size_limit gives an empty shard 0."""
    ours, theirs = tmp_path / "streamx", tmp_path / "mosaic"
    _write(streamx, ours, "bytes", None, size_limit=size_limit)
    _write(streaming, theirs, "bytes", None, size_limit=size_limit)
    assert (ours / "index.json").read_text() == (theirs / "index.json").read_text()
    for name in os.listdir(theirs):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name

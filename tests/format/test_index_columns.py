"""index.json read in Rust into columns: the same shards, order and errors as the entries
say, for indexes mosaicml-streaming wrote, hostile ones, and a 650k-shard one."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from big_index import shard_samples, write_big_index

import streamx
from streamx.exceptions import CorruptIndexError, IndexJSONError
from streamx.format.index import FileInfo, ShardInfo, ShardList, parse_index

_POPPED = {"format", "version", "compression", "samples", "raw_data", "zip_data",
           "raw_meta", "zip_meta", "hashes", "size_limit"}  # fmt: skip
_COLUMNS = ("column_names", "column_encodings", "column_sizes")


def _file(obj: dict[str, Any] | None) -> FileInfo | None:
    if obj is None:
        return None
    return FileInfo(obj["basename"], obj["bytes"], dict(obj.get("hashes") or {}))


def _expected(dirname: str, entry: dict[str, Any]) -> ShardInfo:
    """What an entry of a valid index means, read straight off its JSON."""
    mds = entry["format"] == "mds"
    popped = _POPPED | (set(_COLUMNS) if mds else set())
    raw = _file(entry["raw_data"])
    assert raw is not None
    return ShardInfo(
        dirname=dirname,
        split="",
        format=entry["format"],
        compression=entry["compression"],
        hashes=list(entry.get("hashes", [])),
        samples=entry["samples"],
        size_limit=entry.get("size_limit"),
        raw_data=raw,
        zip_data=_file(entry.get("zip_data")),
        column_names=list(entry["column_names"]) if mds else [],
        column_encodings=list(entry["column_encodings"]) if mds else [],
        column_sizes=list(entry["column_sizes"]) if mds else [],
        raw_meta=_file(entry.get("raw_meta")),
        zip_meta=_file(entry.get("zip_meta")),
        extra={k: v for k, v in entry.items() if k not in popped},
    )


def _check_same(out: Path) -> ShardList:
    shards = parse_index(str(out), None, str(out / "index.json"))
    entries = json.loads((out / "index.json").read_text())["shards"]
    assert list(shards) == [_expected(str(out), e) for e in entries]
    assert shards.samples.tolist() == [e["samples"] for e in entries]
    again = pickle.loads(pickle.dumps(shards))
    assert list(again) == list(shards)
    return shards


@pytest.mark.compat
@pytest.mark.parametrize(
    ("compression", "hashes"), [(None, []), ("zstd", ["sha1", "xxh64"]), ("gz:5", ["md5"])]
)
def test_mosaic_written_indexes_read_the_same(
    tmp_path: Path, compression: str | None, hashes: list[str]
) -> None:
    streaming = pytest.importorskip("streaming")
    columns = {"id": "int", "text": "str", "blob": "bytes"}
    with streaming.MDSWriter(
        out=str(tmp_path), columns=columns, compression=compression, hashes=hashes,
        size_limit=1 << 10,
    ) as writer:  # fmt: skip
        for i in range(300):
            writer.write({"id": i, "text": "x" * (i % 40), "blob": bytes(i % 7)})
    shards = _check_same(tmp_path)
    assert len(shards) > 5
    ours = streamx.StreamingDataset(local=str(tmp_path), batch_size=4, shuffle=True)
    theirs = streaming.StreamingDataset(local=str(tmp_path), batch_size=4, shuffle=True)
    assert [s["id"] for s in ours] == [s["id"] for s in theirs]


@pytest.mark.compat
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_mosaic_split_format_indexes_read_the_same(tmp_path: Path, fmt: str) -> None:
    streaming = pytest.importorskip("streaming")
    writer_class = {"json": streaming.JSONWriter, "csv": streaming.CSVWriter}[fmt]
    with writer_class(out=str(tmp_path), columns={"id": "int", "text": "str"}) as writer:
        for i in range(20):
            writer.write({"id": i, "text": f"t{i}"})
    shards = _check_same(tmp_path)
    assert shards[0].raw_meta is not None  # split formats: a data and a meta file
    assert shards[0].extra  # their columns, separators... kept as the entry has them


def _index(tmp_path: Path, text: str) -> str:
    path = tmp_path / "index.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "template",
    [
        '{"version": 2, "shards": %s}',  # skipped over without recursion
        '{"version": 2, "shards": [{"format": %s}]}',  # too deep for both JSON parsers
    ],
)
def test_deep_nesting_is_a_clear_error(tmp_path: Path, template: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    path = _index(tmp_path, template % deep)
    with pytest.raises(CorruptIndexError) as info:  # never a RecursionError
        parse_index(str(tmp_path), None, path)
    assert path in str(info.value)


def test_json_errors_are_mosaics(tmp_path: Path) -> None:
    path = _index(tmp_path, '{"version": 2, "shards": [}')
    with pytest.raises(IndexJSONError) as info:
        parse_index(str(tmp_path), None, path)
    assert isinstance(info.value, json.JSONDecodeError)
    assert (info.value.lineno, info.value.colno) == (1, 27)


def test_huge_counts_are_refused_before_any_allocation(tmp_path: Path) -> None:
    entry = {
        "format": "mds", "version": 2, "compression": None, "hashes": [], "size_limit": None,
        "column_names": ["x"], "column_encodings": ["int"], "column_sizes": [8],
        "raw_data": {"basename": "shard.00000.mds", "bytes": 2**62, "hashes": {}},
        "samples": 2**64 - 1,
    }  # fmt: skip
    path = _index(tmp_path, json.dumps({"version": 2, "shards": [entry]}))
    with pytest.raises(CorruptIndexError, match=r"cannot fit .* shard 0"):
        parse_index(str(tmp_path), None, path)
    entry["samples"] = 2**70  # past u64: Python's json takes it, the index may not
    path = _index(tmp_path, json.dumps({"version": 2, "shards": [entry]}))
    with pytest.raises(CorruptIndexError, match="Invalid sample count"):
        parse_index(str(tmp_path), None, path)


def test_unknown_encoding_names_the_first_shard_using_it(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"}, size_limit=64) as writer:
        for i in range(20):
            writer.write({"x": i})
    index = json.loads((tmp_path / "index.json").read_text())
    for entry in index["shards"][2:]:
        entry["column_encodings"] = ["nonesuch"]
    path = _index(tmp_path, json.dumps(index))
    with pytest.raises(CorruptIndexError, match=r"unknown encoding 'nonesuch' in .*, shard 2\."):
        parse_index(str(tmp_path), None, path)


@pytest.mark.slow
def test_650k_shard_index(tmp_path: Path) -> None:
    count = 650_000
    write_big_index(str(tmp_path), count)
    ds = streamx.StreamingDataset(local=str(tmp_path), batch_size=8)
    expected = np.array([shard_samples(i) for i in range(count)], np.int64)
    assert ds.num_shards == count
    assert ds.samples_per_shard.tolist() == expected.tolist()
    assert ds.size == int(expected.sum())
    last = ds.shards[-1]
    assert (last.raw_data.basename, last.zip_data and last.zip_data.basename) == (
        "shard.649999.mds",
        "shard.649999.mds.zstd",
    )
    assert ds.columns == {"text": "str", "id": "int"}
    assert ds.spanner[ds.size - 1] == (count - 1, int(expected[-1]) - 1)

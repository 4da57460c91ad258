"""The Rust reader over index tables (``_core.MDSReader([(index, dir, first schema)])``):
shards resolved on open read the same samples as shards listed one by one, each shard
knows its schema across parts, and a file name that leaves the dataset is a clean error."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

import streamx
from streamx import _core
from streamx.format.columns import ColumnPlan

_SCHEMAS: list[dict[str, str]] = [{"id": "int", "text": "str"}, {"x": "float64", "b": "bytes"}]


def _write(out: Path, columns: dict[str, str], compression: str | None) -> None:
    with streamx.MDSWriter(
        out=str(out), columns=columns, size_limit=300, compression=compression
    ) as writer:
        for i in range(40):
            if "id" in columns:
                writer.write({"id": i, "text": f"t{i}" * (i % 5)})
            else:
                writer.write({"x": i / 4, "b": bytes([i]) * i})


_Schema = tuple[list[str], list[str], list[int | None]]


def _plan(schema: Any) -> _Schema:
    plan = ColumnPlan.from_index(*schema)
    return (list(plan.names), list(plan.kinds), list(plan.sizes))


def _read(path: Path) -> _core.ShardIndex:
    index = _core.ShardIndex.read(str(path))
    assert isinstance(index, _core.ShardIndex), index
    return index


@pytest.fixture
def two_datasets(tmp_path: Path) -> list[Path]:
    dirs = [tmp_path / "plain", tmp_path / "zipped"]
    _write(dirs[0], _SCHEMAS[0], None)
    _write(dirs[1], _SCHEMAS[1], "zstd")
    return dirs


def _indexed(dirs: list[Path]) -> _core.MDSReader:
    parts: list[tuple[_core.ShardIndex, str, int]] = []
    schemas: list[_Schema] = []
    for d in dirs:
        index = _read(d / "index.json")
        parts.append((index, str(d), len(schemas)))
        schemas += [_plan(s) for s in index.schemas()]
    return _core.MDSReader(parts, schemas)


def _listed(dirs: list[Path]) -> _core.MDSReader:
    shards: list[Any] = []
    schemas: list[_Schema] = []
    for d in dirs:
        index = _read(d / "index.json")
        first = len(schemas)
        schemas += [_plan(s) for s in index.schemas()]
        for shard in range(len(index)):
            entry = index.entry(shard)
            raw, zipped = entry[5], entry[6]
            assert raw is not None
            zip_path = str(d / zipped[0]) if zipped else None
            shards.append((str(d / raw[0]), zip_path, entry[1], entry[3], first + entry[9], raw[1]))
    return _core.MDSReader(shards, schemas)


def test_indexed_shards_read_as_listed_ones(two_datasets: list[Path]) -> None:
    listed = _listed(two_datasets)  # decompresses the zipped shards first
    indexed = _indexed(two_datasets)
    assert indexed.num_samples == listed.num_samples == 80
    assert indexed.schema_ids == listed.schema_ids
    first = _read(two_datasets[0] / "index.json")
    assert set(indexed.schema_ids[: len(first)]) == {0}
    assert set(indexed.schema_ids[len(first) :]) == {1}
    for shard, schema in enumerate(indexed.schema_ids):
        assert indexed.schema_id(shard) == listed.schema_id(shard) == schema
    for i in range(80):
        assert indexed.get(i) == listed.get(i)
        assert indexed.sample_bytes(i) == listed.sample_bytes(i)
    again = pickle.loads(pickle.dumps(indexed))
    assert [again.get(i) for i in range(80)] == [listed.get(i) for i in range(80)]


def test_zipped_shards_are_decompressed_on_open(two_datasets: list[Path]) -> None:
    indexed = _indexed(two_datasets)
    zipped = two_datasets[1]
    assert not list(zipped.glob("*.mds")), "the writer kept only the zstd files"
    assert indexed.get(79)["b"] == bytes([39]) * 39
    assert list(zipped.glob("*.mds")), "the shard of sample 79 was decompressed next to its zip"


def test_schema_id_of_a_shard_out_of_range(two_datasets: list[Path]) -> None:
    indexed = _indexed(two_datasets)
    shards = len(indexed.schema_ids)
    with pytest.raises(IndexError, match=f"Shard {shards} out of range for {shards} shards"):
        indexed.schema_id(shards)


def test_a_layout_missing_for_a_schema_is_refused(two_datasets: list[Path]) -> None:
    index = _read(two_datasets[0] / "index.json")
    with pytest.raises(ValueError, match="No schema 1"):
        _core.MDSReader([(index, str(two_datasets[0]), 1)], [_plan(index.schemas()[0])])


def test_a_name_leaving_the_dataset_is_refused(two_datasets: list[Path]) -> None:
    # The index parse refuses such a name; a pickled table is not parsed again.
    plain = two_datasets[0]
    index = _read(plain / "index.json")
    state = pickle.dumps(index)
    bad = b"../../../x0.mds"  # as long as the name it replaces: the state keeps offsets
    hostile = pickle.loads(state.replace(b"shard.00000.mds", bad, 1))
    reader = _core.MDSReader([(hostile, str(plain), 0)], [_plan(index.schemas()[0])])
    with pytest.raises(ValueError, match=r'"\.\./\.\./\.\./x0\.mds" leaves the dataset directory'):
        reader.get(0)
    assert reader.get(39)["id"] == 39, "the other shards still read"


def test_python_decoded_columns_follow_each_shards_schema(tmp_path: Path) -> None:
    # Two layouts whose Python-decoded columns differ: each sample is decoded by the plan
    # of its own shard's schema (``MDSReader.schema_id``), through the dataset's reader.
    from streamx import Stream, StreamingDataset

    dirs = [tmp_path / "a", tmp_path / "b"]
    with streamx.MDSWriter(out=str(dirs[0]), columns={"id": "int", "meta": "json"}) as w:
        for i in range(6):
            w.write({"id": i, "meta": {"i": i}})
    with streamx.MDSWriter(out=str(dirs[1]), columns={"id": "int", "obj": "pkl"}) as w:
        for i in range(6, 12):
            w.write({"id": i, "obj": ("t", i)})
    streams = [Stream(local=str(d)) for d in dirs]
    ds = StreamingDataset(streams=streams, shuffle=False, batch_size=1, allow_unsafe_types=True)
    got = [ds[i] for i in range(12)]
    assert [s["meta"] for s in got[:6]] == [{"i": i} for i in range(6)]
    assert [s["obj"] for s in got[6:]] == [("t", i) for i in range(6, 12)]

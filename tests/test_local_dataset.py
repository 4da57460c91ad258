"""Writing with streamx.MDSWriter and reading back in one process: values, types, indexing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from samples import assert_same_value, value_for

COLUMNS = {
    "id": "int",
    "text": "str",
    "u16": "uint16",
    "f32": "float32",
    "arr": "ndarray",
    "blob": "bytes",
    "meta": "json",
}


def _sample(i: int) -> dict[str, Any]:
    return {name: (i if name == "id" else value_for(enc, i)) for name, enc in COLUMNS.items()}


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    with streamx.MDSWriter(out=str(out), columns=COLUMNS, size_limit=2000) as writer:
        for i in range(50):
            writer.write(_sample(i))
    return out


def test_types_and_values(dataset_dir: Path) -> None:
    ds = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4)
    assert len(ds) == ds.size == 50
    for i in (0, 17, 49):
        got, want = ds[i], _sample(i)
        assert set(got) == set(COLUMNS)
        assert type(got["id"]) is int
        assert isinstance(got["u16"], np.uint16) and isinstance(got["f32"], np.float32)
        assert not got["arr"].flags.writeable
        for name in COLUMNS:
            assert_same_value(
                got[name], want[name], name
            ) if name != "arr" else np.testing.assert_array_equal(got[name], want[name])


def test_indexing_forms(dataset_dir: Path) -> None:
    ds = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4)

    def ids(items: list[dict[str, Any]]) -> list[int]:
        return [s["id"] for s in items]

    assert ds[-1]["id"] == 49
    assert ds[np.int64(3)]["id"] == 3
    assert ids(ds[5:9]) == [5, 6, 7, 8]
    assert ids(ds[::-10]) == [49, 39, 29, 19, 9]
    assert ids(ds[[1, 3, -2]]) == [1, 3, 48]
    assert ids(ds[np.array([4, 2])]) == [4, 2]
    assert [ids(x) for x in ds[[[0, 1], [2]]]] == [[0, 1], [2]]


def test_natural_order_iteration(dataset_dir: Path) -> None:
    ds = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4)
    assert [s["id"] for s in ds] == list(range(50))
    assert [s["id"] for s in ds] == list(range(50))  # a second epoch, same order unshuffled


def test_local_dataset(dataset_dir: Path) -> None:
    ds = streamx.LocalDataset(str(dataset_dir))
    assert len(ds) == 50
    assert ds[10]["text"] == _sample(10)["text"]


def test_out_of_range_is_index_error(dataset_dir: Path) -> None:
    ds = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4)
    with pytest.raises(IndexError, match="50"):
        ds[50]
    with pytest.raises(IndexError):
        ds[-51]


def test_unsafe_types_need_opt_in(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"obj": "pkl"}) as writer:
        writer.write({"obj": {"a": (1, 2)}})
    with pytest.raises(ValueError, match="Column obj contains an unsafe type: pkl"):
        streamx.StreamingDataset(local=str(tmp_path), batch_size=1)
    ds = streamx.StreamingDataset(local=str(tmp_path), batch_size=1, allow_unsafe_types=True)
    assert ds[0]["obj"] == {"a": (1, 2)}


def test_subclass_getitem_override_applies_to_iteration(dataset_dir: Path) -> None:
    class Doubled(streamx.StreamingDataset):
        def __getitem__(self, at: object) -> object:
            sample = super().__getitem__(at)
            return sample["id"] * 2

    ds = Doubled(local=str(dataset_dir), batch_size=4)
    assert list(ds) == [2 * i for i in range(50)]


def test_compressed_local_dataset_is_decompressed_once(tmp_path: Path) -> None:
    with streamx.MDSWriter(
        out=str(tmp_path), columns={"id": "int"}, compression="zstd:5", size_limit=200
    ) as writer:
        for i in range(40):
            writer.write({"id": i})
    assert not list(tmp_path.glob("*.mds"))
    ds = streamx.StreamingDataset(local=str(tmp_path), batch_size=4)
    assert [s["id"] for s in ds] == list(range(40))
    # Decompressed files now sit beside the zips (which are kept: there is no remote).
    assert len(list(tmp_path.glob("*.mds"))) == len(list(tmp_path.glob("*.mds.zstd")))

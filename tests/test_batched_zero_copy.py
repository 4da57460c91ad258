"""``zero_copy=True``: views over the shard's memory map, equal to the copies, valid after
their shard is evicted and deleted, and refused over a corrupt shard."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from streamx.exceptions import CorruptShardError

COLUMNS = {"id": "int", "data": "bytes", "text": "str", "arr": "ndarray:int32:3", "dyn": "ndarray"}


def _sample(i: int) -> dict[str, Any]:
    return {
        "id": i - 40,
        "data": bytes([i % 256]) * (i % 50 + 1),
        "text": f"t{i}",
        "arr": np.array([i, -i, 7], np.int32),
        "dyn": np.arange(i % 4 + 1, dtype=np.float64),
    }


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("views")
    with streamx.MDSWriter(out=str(out), columns=COLUMNS, size_limit=2000) as writer:
        for i in range(120):
            writer.write(_sample(i))
    return out


def test_views_equal_copies(dataset_dir: Path) -> None:
    copies = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4)
    views = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4, zero_copy=True)
    seen = list(views)
    assert len(seen) == 120
    for i, (view, copy) in enumerate(zip(seen, copies, strict=True)):
        assert isinstance(view["data"], memoryview) and view["data"].readonly
        assert bytes(view["data"]) == copy["data"] == _sample(i)["data"]
        assert not view["arr"].flags.writeable and view["arr"].base is not None
        assert view["arr"].dtype == copy["arr"].dtype
        np.testing.assert_array_equal(view["arr"], copy["arr"])
        np.testing.assert_array_equal(view["dyn"], copy["dyn"])
        assert type(view["id"]) is type(copy["id"]) is int and view["id"] == copy["id"]
        assert view["text"] == copy["text"]
    assert bytes(views[-1]["data"]) == _sample(119)["data"]


def test_view_outlives_eviction(dataset_dir: Path, tmp_path: Path) -> None:
    ds = streamx.StreamingDataset(
        remote=str(dataset_dir), local=str(tmp_path / "cache"), batch_size=4, zero_copy=True
    )
    sample = ds[1]
    shard_file = next((tmp_path / "cache").glob("shard.00000.mds"))
    ds.evict_shard(0)
    assert not shard_file.exists()
    assert bytes(sample["data"]) == _sample(1)["data"]
    np.testing.assert_array_equal(sample["arr"], _sample(1)["arr"])
    assert bytes(ds[1]["data"]) == _sample(1)["data"]  # fetched again


def test_corrupt_shard_is_refused(dataset_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(dataset_dir, copy)
    shard = copy / "shard.00000.mds"
    shard.write_bytes(shard.read_bytes()[:300])
    ds = streamx.StreamingDataset(local=str(copy), batch_size=4, zero_copy=True)
    with pytest.raises(CorruptShardError, match="shard.00000.mds"):
        list(ds)

"""``ds.__getitems__(ids)``: the samples ``[ds[i] for i in ids]`` in one call into Rust (the
way torch's ``DataLoader`` fetches a map-style batch, and the packer a window), for local,
remote and Parquet datasets; a subclass's own ``get_item`` is still used, and a bad index is
named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from torch.utils.data import DataLoader

import streamx

N = 40


def _expected(i: int) -> dict[str, Any]:
    return {"id": i, "t": f"t{i}" * (i % 3 + 1)}


@pytest.fixture
def mds_dir(tmp_path: Path) -> Path:
    out = tmp_path / "mds"
    with streamx.MDSWriter(out=str(out), columns={"id": "int", "t": "str"}, size_limit=300) as w:
        for i in range(N):
            w.write(_expected(i))
    return out


IDS: list[Any] = [5, 0, 39, -1, np.int64(17), 17, 3, -N]


def _check(ds: Any) -> None:
    got = ds.__getitems__(IDS)
    assert got == [ds[i] for i in IDS] == [_expected(int(i) % N) for i in IDS]
    assert ds.__getitems__([]) == []
    for bad in (N, -N - 1, 2**70):
        with pytest.raises(IndexError, match=f"Sample index {bad} out of range for {N} samples"):
            ds.__getitems__([0, bad])


def test_local_and_streaming_read_a_batch_in_one_call(mds_dir: Path) -> None:
    for ds in (streamx.LocalDataset(str(mds_dir)), streamx.StreamingDataset(local=str(mds_dir))):
        _check(ds)
        # Every sample here is local: the batch is one read, never get_item's route.
        ds.get_item = None  # type: ignore[assignment,method-assign]
        assert ds.__getitems__([1, 2, 30]) == [_expected(i) for i in (1, 2, 30)]


def test_a_remote_batch_fetches_what_is_not_local(mds_dir: Path, tmp_path: Path) -> None:
    ds = streamx.StreamingDataset(remote=str(mds_dir), local=str(tmp_path / "cache"))
    assert ds.num_shards > 2
    assert ds._fast_get is not None and ds._fast_get(N - 1) is None  # nothing local yet
    _check(ds)


def test_parquet_rows_come_as_a_batch(tmp_path: Path) -> None:
    rows = [_expected(i) for i in range(N)]
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=7)
    stream = streamx.ParquetStream(remote=str(path), local=str(tmp_path / "cache"))
    ds = streamx.StreamingDataset(streams=[stream])
    _check(ds)


def test_a_subclass_get_item_is_used(mds_dir: Path) -> None:
    class Tagged(streamx.LocalDataset):
        def get_item(self, sample_id: int) -> dict[str, Any]:
            return {"tag": sample_id, **super().get_item(sample_id)}

    class Renamed(streamx.StreamingDataset):
        def __getitem__(self, at: Any) -> Any:
            return {"renamed": super().__getitem__(at)["id"]}

    tagged = Tagged(str(mds_dir))
    assert tagged.__getitems__([3, -1]) == [
        {"tag": 3, **_expected(3)},
        {"tag": N - 1, **_expected(N - 1)},
    ]
    renamed = Renamed(local=str(mds_dir))
    assert renamed.__getitems__([3, -1]) == [{"renamed": 3}, {"renamed": N - 1}]


def test_torch_loader_batches_of_a_map_style_dataset(mds_dir: Path) -> None:
    ds = streamx.LocalDataset(str(mds_dir))
    got = list(DataLoader(ds, batch_size=8, collate_fn=list))
    assert [s for b in got for s in b] == [_expected(i) for i in range(N)]
    assert [len(b) for b in got] == [8] * 5

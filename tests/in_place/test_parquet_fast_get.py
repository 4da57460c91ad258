"""``ds[i]`` over in-place and fetched Parquet takes the one-call route (the reader's fast
get) also when its stream has a remote, and answers as ``get_item`` does: the same rows and
types, the same errors, a row group marked read once per row, and a row group whose file
left the disk fetched again (through the general route) before any row of it is served."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.format.parquet.decoded_row_group import CACHE, DecodedRowGroup

ROWS, GROUP = 120, 40


def _dataset(tmp_path: Path, remote: str | None = None) -> StreamingDataset:
    source = tmp_path / "t.parquet"
    if not source.exists():
        table = pa.table(
            {
                "id": pa.array(range(ROWS), pa.int64()),
                "text": [f"row {i}" if i % 5 else None for i in range(ROWS)],
                "score": [i / 4 for i in range(ROWS)],
            }
        )
        pq.write_table(table, str(source), row_group_size=GROUP)
    stream = ParquetStream(remote=remote or str(source), local=str(tmp_path / "cache"))
    return StreamingDataset(streams=[stream])


def _rows(ds: StreamingDataset) -> list[dict[str, Any]]:
    return [ds.get_item(i) for i in range(ROWS)]


def test_a_stream_with_a_remote_answers_ds_i_as_get_item(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    assert ds.streams[0].remote  # the case the one-call route did not take before
    assert ds._fast_get is not None
    CACHE.clear()
    expected = _rows(ds)
    CACHE.clear()
    for i in (0, 1, GROUP - 1, GROUP, 77, ROWS - 1):
        for at in (i, i - ROWS, np.int64(i)):
            row = ds[at]
            assert row == expected[i]
            assert [type(v) for v in row.values()] == [type(v) for v in expected[i].values()]
    assert ds[[3, -1]] == [expected[3], expected[ROWS - 1]]
    for bad in (ROWS, -ROWS - 1, 2**70, -(2**70)):
        with pytest.raises(IndexError, match=f"Sample index {bad} out of range for {ROWS}"):
            ds[bad]


def test_rows_read_one_at_a_time_and_by_batch_count_once(tmp_path: Path) -> None:
    """The per-row flags ``ds[i]`` sets are the ones a batch reads: a row read both ways
    counts once, and the group is read through at its last unread row."""
    ds = _dataset(tmp_path)
    group = DecodedRowGroup(ds.shards[0], for_rows=True)
    assert not group.read(3) and not group.read(3)
    assert group.left == GROUP - 1
    assert not group.read(np.asarray([2, 3, 4], np.int64))
    assert group.left == GROUP - 3
    for row in range(GROUP):
        done = group.read(row)
    assert done and group.left == 0
    assert not group._unread.any()


def test_a_row_group_read_through_by_ds_i_is_dropped(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    CACHE.clear()
    for i in range(GROUP, 2 * GROUP - 1):
        ds[i]
    assert len(CACHE.keys()) == 1
    ds[2 * GROUP - 1]
    assert CACHE.keys() == []


def test_a_fetched_row_group_evicted_from_disk_is_fetched_again(tmp_path: Path) -> None:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    (tmp_path / "src").mkdir()
    with Nginx(tmp_path / "src") as server:
        ds = _dataset(tmp_path / "src", f"{server.endpoint}/t.parquet")
        assert ds._fast_get is not None
        CACHE.clear()
        assert ds._fast_get(50) is None  # not on local disk yet: the general route fetches
        assert ds[50]["id"] == 50
        assert len(CACHE.keys()) == 1
        ds.evict_shard(1)
        assert CACHE.keys() == [] and ds._fast_get(51) is None
        assert ds[51] == {"id": 51, "text": "row 51", "score": 51 / 4}  # fetched again

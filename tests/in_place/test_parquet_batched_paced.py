"""Batches of Parquet files served over HTTP (nginx), read on the in-process batched path
with its shard cache's look-ahead declared as the pass goes: the per-sample path's batches,
in its order, also when a store starts throttling in the middle of the pass (the look-ahead
then widens; what is read does not change)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from batch_compare import assert_same_batches
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
from streamx.dataset.cache_windows import PACE_LOOK_S
from streamx.storage import throttle
from streamx.storage.request_pace import any_paced, pace_for

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(120)

ROWS = (45, 38)  # two files, row groups of 16


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    folder = tmp_path / "served"
    folder.mkdir()
    start = 0
    for number, rows in enumerate(ROWS):
        i = np.arange(start, start + rows)
        table = pa.table(
            {
                "id": pa.array(i, pa.int64()),
                "score": pa.array(i / 8, pa.float32()),
                "text": [f"row {j} " * (j % 3) for j in i],
                "note": [None if j % 8 == 3 else f"n{j}" for j in i],
            }
        )
        pq.write_table(table, folder / f"part-{number}.parquet", row_group_size=16)
        start += rows
    throttle.forget_hosts()
    with Nginx(folder) as server:
        yield f"{server.endpoint}/part-{{0..{len(ROWS) - 1}}}.parquet"
    throttle.forget_hosts()


def _loader(remote: str, local: Path, shuffle: bool, batched: bool) -> StreamingDataLoader:
    stream = ParquetStream(remote=remote, local=str(local))
    ds = StreamingDataset(streams=[stream], batch_size=8, shuffle=shuffle, shuffle_seed=3)
    assert ds._shard_cache is not None  # copied into the cache: the look-ahead is declared
    return StreamingDataLoader(ds, batch_size=8, num_workers=2, batched=batched)


@pytest.mark.parametrize("shuffle", [False, True])
def test_batches_stay_the_per_sample_ones_when_a_pace_starts_mid_pass(
    served: str, tmp_path: Path, shuffle: bool
) -> None:
    expected = list(_loader(served, tmp_path / "a", shuffle, batched=False))
    loader = _loader(served, tmp_path / "b", shuffle, batched=True)
    assert loader._inline()
    got = []
    for number, batch in enumerate(loader):
        got.append(batch)
        if number == 2:  # the store throttles from here on: the pass sees it and goes on
            pace = pace_for("throttled.invalid")
            assert pace.throttled(pace.take())
            time.sleep(PACE_LOOK_S)
            assert any_paced()
    assert_same_batches(got, expected)
    ids = [i for batch in got for i in batch["id"].tolist()]
    assert sorted(ids) == list(range(sum(ROWS)))
    if not shuffle:
        assert ids == list(range(sum(ROWS)))

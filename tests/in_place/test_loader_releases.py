"""A pass read in the loader's own process (``loader_batches``) lets go of each shard right
after the batch that reads it the last time, once, in shard order within a batch: the same
calls whether the pass is in order or shuffled, over one or several workers' order, with a
short last batch or without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamx import ParquetStream, StreamingDataset
from streamx.dataset.iteration import loader_batches

pytestmark = pytest.mark.timeout(120)


def _dataset(root: Path, shuffle: bool) -> StreamingDataset:
    """Three files of 37, 50 and 21 rows, row groups of 9 (14 shards of uneven size)."""
    folder = root / "src"
    folder.mkdir(parents=True)
    start = 0
    for number, rows in enumerate((37, 50, 21)):
        table = pa.table({"id": pa.array(np.arange(start, start + rows), pa.int64())})
        pq.write_table(table, folder / f"{number}.parquet", row_group_size=9)
        start += rows
    stream = ParquetStream(remote=str(folder), local=str(root / "cache"))
    return StreamingDataset(
        streams=[stream], batch_size=8, shuffle=shuffle, shuffle_seed=3, shuffle_block_size=20
    )


def _expected(batches: list[list[int]], shard_of: list[int]) -> list[tuple[int, int]]:
    """(batch number, shard) for each shard whose last row the pass reads in that batch."""
    last: dict[int, int] = {}
    for number, ids in enumerate(batches):
        for sample in ids:
            last[shard_of[sample]] = number
    return sorted((number, shard) for shard, number in last.items())


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("workers", [0, 1, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_each_shard_is_released_after_its_last_batch(
    tmp_path: Path, shuffle: bool, workers: int, drop_last: bool
) -> None:
    ds = _dataset(tmp_path, shuffle)
    shard_of = [int(s) for s in ds._layout.shards_of(np.arange(len(ds), dtype=np.int64))]
    assert len(set(shard_of)) == 14
    claimed = ds.claim_pass()
    calls: list[tuple[int, int]] = []
    batches: list[list[int]] = []
    walk = loader_batches(
        claimed.start,
        claimed.layout,
        claimed.world,
        claimed.access,
        lambda ids: ids,
        num_workers=workers,
        batch_size=8,
        drop_last=drop_last,
        release=lambda shard: calls.append((len(batches), shard)),
    )
    for parts in walk:
        batches.append([i for part in parts for i in part])
    read = sorted(i for ids in batches for i in ids)
    assert read == list(range(len(ds))) if not drop_last else len(read) < len(ds)
    assert calls == _expected(batches, shard_of)
    assert len({shard for _, shard in calls}) == len(calls)

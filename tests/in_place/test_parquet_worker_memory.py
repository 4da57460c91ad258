"""A DataLoader worker keeps only the decoded Parquet row groups its own pass still reads.

With two workers each reads every other batch, so no worker reads a row group through;
each drops a row group once it has read its own last id of it (it knows its share of the
epoch's order), instead of keeping row groups up to the decoded cache's bound. The workers
are real DataLoader processes; each records, from inside, the most row groups its cache
held at once.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
from streamx.format.parquet.decoded_row_group import CACHE, DecodedRowGroup, decoded_key
from streamx.format.readers.mixed import MixedSampleReader

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(120)

ROWS, BATCH = 6_000, 8


def _record_held(out: Path, worker: int) -> None:
    """In the worker: after each decoded row group is looked up, writes the most row groups
    and bytes the worker's cache has held so far."""
    CACHE.clear()  # what a forked worker inherited from the tests before
    get, most = CACHE.get, {"groups": 0, "bytes": 0}

    def recording(key: str, make: Any) -> DecodedRowGroup:
        found = get(key, make)
        held = {"groups": len(CACHE.keys()), "bytes": CACHE.total}
        if any(held[name] > most[name] for name in most):
            most.update({name: max(most[name], held[name]) for name in most})
            (out / f"worker{worker}.json").write_text(json.dumps(most))
        return found

    CACHE.get = recording  # type: ignore[method-assign]


def _dataset(tmp_path: Path, group: int, **kwargs: Any) -> StreamingDataset:
    ids = np.arange(ROWS)
    table = pa.table({"id": ids, "text": [f"row {i} " * (i % 7) for i in ids]})
    pq.write_table(table, str(tmp_path / "t.parquet"), row_group_size=group)
    stream = ParquetStream(remote=str(tmp_path / "t.parquet"), local=str(tmp_path / "c"))
    return StreamingDataset(streams=[stream], batch_size=BATCH, **kwargs)


def _assert_each_worker_held(
    tmp_path: Path, group: int, shuffle: bool, most_groups: int, **loader_args: Any
) -> None:
    """Reads every row of a file of ``group``-row row groups through two DataLoader workers;
    asserts each worker's cache held 1 to ``most_groups`` row groups at once."""
    settings = {"shuffle": True, "shuffle_block_size": 8 * group} if shuffle else {}
    ds = _dataset(tmp_path, group, **settings)
    out = tmp_path / "held"
    out.mkdir()
    loader = StreamingDataLoader(
        ds,
        batch_size=BATCH,
        num_workers=2,
        worker_init_fn=functools.partial(_record_held, out),
        **loader_args,
    )
    seen = [int(i) for batch in loader for i in batch["id"]]
    assert sorted(seen) == list(range(ROWS))  # every row once: the order is untouched
    for worker in (0, 1):
        held = json.loads((out / f"worker{worker}.json").read_text())
        # Kept up to the bound, each worker would hold every row group it decoded.
        assert 1 <= held["groups"] <= most_groups, (worker, held)


@pytest.mark.parametrize(
    ("group", "shuffle", "most_groups"),
    [
        (50, False, 3),  # the row group being read, the next one (decoded ahead), a spare
        (50, True, 12),  # a shuffle block of 8 row groups is read at once
        # A batch per row group: each worker reads every other row group, and decodes
        # none ahead that only the other worker reads.
        (BATCH, False, 3),
    ],
)
def test_two_workers_hold_few_row_groups(
    tmp_path: Path, group: int, shuffle: bool, most_groups: int
) -> None:
    _assert_each_worker_held(tmp_path, group, shuffle, most_groups)


def _collate(samples: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """A collate_fn of the user's own: the loader keeps torch's per-sample path."""
    return {name: [sample[name] for sample in samples] for name in samples[0]}


@pytest.mark.parametrize(
    ("group", "shuffle", "most_groups"),
    [
        (50, False, 1),  # the row group being read: the one before was dropped at its end
        (50, True, 9),  # a shuffle block of 8 row groups is read at once, and one more
    ],
)
@pytest.mark.parametrize("per_sample", ["batched=False", "collate_fn"])
def test_two_per_sample_workers_hold_few_row_groups(
    tmp_path: Path, group: int, shuffle: bool, most_groups: int, per_sample: str
) -> None:
    """The per-sample path (torch collates each worker's samples) drops a row group after
    the worker's own last id of it too: before, each worker kept every row group it read
    (120 here: the cache's bound is far above this file)."""
    way: dict[str, Any] = {"batched": False} if per_sample == "batched=False" else {}
    if per_sample == "collate_fn":
        way["collate_fn"] = _collate
    _assert_each_worker_held(tmp_path, group, shuffle, most_groups, **way)


def test_a_failed_read_of_many_counts_none_of_its_samples(tmp_path: Path) -> None:
    """A ``get_many`` that fails (the range reads' miss handler then calls it again) counts
    none of its samples: the row group is dropped after the pass's last id of it, not
    before."""
    ds = _dataset(tmp_path, 50)
    reader = ds._reader
    assert isinstance(reader, MixedSampleReader)
    CACHE.clear()
    key = decoded_key(ds.shards[0])
    reader.expect(np.arange(50, dtype=np.int64))  # the pass reads row group 0 through
    with pytest.raises(IndexError):
        reader.get_many([*range(40), ROWS], lambda index: None)  # the last one fails
    reader.get_many(list(range(45)), lambda index: None)
    held = CACHE.keys()
    assert key in held  # 5 of its ids still to read: counted once each, kept
    reader.get_many(list(range(45, 50)), lambda index: None)
    held = CACHE.keys()
    assert key not in held  # its last id read: dropped
    reader.expect(None)

"""A local Parquet source (a path or ``file://``) is read where it lies: ``dataset[i]`` and
iteration read each row group's column chunks from the file itself, copy nothing into the
cache but the footers, and return pyarrow's rows; ``cache_limit`` never counts or evicts
the file. A file rewritten (same size or not) or truncated after its footer was read is
refused with an error naming it and the row group, and its new rows are never served with
the old footer's; a dataset built again reads the new rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamx import StreamingDataLoader, StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.exceptions import StaleIndexError
from streamx.format.parquet.decoded_row_group import CACHE
from streamx.format.parquet.python_values import python_column

ROWS, GROUP = 300, 40


def _table(start: int = 0, rows: int = ROWS) -> pa.Table:
    ids = list(range(start, start + rows))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "text": [f"row {i} " * (1 + i % 4) for i in ids],
            "score": pa.array([i / 8 for i in ids], pa.float64()),
            # A list column: its row groups are decoded by pyarrow, not by the core's pages.
            "tokens": [[i, i + 1] for i in ids],
        }
    )


def _write(path: Path, table: pa.Table) -> None:
    pq.write_table(table, str(path), row_group_size=GROUP)


def _expected(path: Path, columns: list[str] | None = None) -> list[dict[str, Any]]:
    table = pq.read_table(str(path), columns=columns)
    values = {name: python_column(table.column(name)) for name in table.column_names}
    return [{name: v[i] for name, v in values.items()} for i in range(table.num_rows)]


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for name, value in want.items():
        if isinstance(value, np.ndarray):
            assert isinstance(got[name], np.ndarray) and got[name].tolist() == value.tolist()
        else:
            assert type(got[name]) is type(value) and got[name] == value, name


def _dataset(remote: str, cache: Path, **kwargs: Any) -> StreamingDataset:
    columns = kwargs.pop("columns", None)
    stream = ParquetStream(remote=remote, local=str(cache), columns=columns)
    return StreamingDataset(streams=[stream], batch_size=4, **kwargs)


def _cached(cache: Path) -> list[str]:
    """Every file under the cache dir but the footers, their manifest and the ledger's."""
    found = []
    for root, _, files in os.walk(cache):
        found += [
            os.path.join(root, f)
            for f in files
            if "streamx-parquet" not in root and f != "streamx-parquet.json"
        ]
    return [f for f in found if f"{os.sep}.streamx{os.sep}" not in f]


@pytest.mark.parametrize("form", ["path", "file-url", "directory"])
@pytest.mark.parametrize("columns", [None, ["text", "id"], ["tokens"]])
def test_rows_equal_pyarrows_and_nothing_is_copied(
    tmp_path: Path, form: str, columns: list[str] | None
) -> None:
    CACHE.clear()
    path = tmp_path / "data" / "t.parquet"
    path.parent.mkdir()
    _write(path, _table())
    remote = {"path": str(path), "file-url": f"file://{path}", "directory": str(path.parent)}
    cache = tmp_path / "cache"
    ds = _dataset(remote[form], cache, columns=columns)
    expected = _expected(path, columns)
    order = np.random.default_rng(3).permutation(ROWS).tolist()
    for i in order:
        _same(ds[i], expected[i])
    seen: dict[int, dict[str, Any]] = {}
    for row in ds:  # iteration reads the same way
        seen[int(row["id"]) if "id" in row else len(seen)] = row
    assert len(seen) == ROWS
    if columns is None or "id" in columns:
        for i, row in seen.items():
            _same(row, expected[i])
    assert all(s.local_path(s.raw_data) == str(path) for s in ds.shards)
    assert _cached(cache) == []  # no row group copied
    assert sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) < path.stat().st_size


def test_a_cache_limit_never_counts_or_evicts_the_file(tmp_path: Path) -> None:
    CACHE.clear()
    path = tmp_path / "t.parquet"
    _write(path, _table())
    before = path.stat()
    largest = max(s.raw_data.bytes for s in _dataset(str(path), tmp_path / "cache").shards)
    limit = 4 * largest + 4096  # the least a limit may be (four row groups, the footers)
    assert limit < before.st_size  # so the file itself would not fit
    ds = _dataset(str(path), tmp_path / "cache", cache_limit=limit)
    assert sorted(int(row["id"]) for row in ds) == list(range(ROWS))
    assert ds[ROWS - 1]["id"] == ROWS - 1
    with pytest.raises(ValueError, match="never evicted"):
        ds.evict_shard(0)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def test_a_cache_limit_below_four_row_groups_is_taken_in_place(tmp_path: Path) -> None:
    """Nothing of a file read where it lies is counted, so the limit is not weighed against
    its row groups (mosaicml-streaming, which has no Parquet, asks four of the largest shard
    of what it copies); the footers it holds still are."""
    path = tmp_path / "t.parquet"
    _write(path, _table())
    first = _dataset(str(path), tmp_path / "cache")
    largest = max(s.raw_data.bytes for s in first.shards)
    footers = sum(stream.get_index_size() for stream in first.streams)
    limit = footers + largest  # under four row groups
    assert limit < 4 * largest
    ds = _dataset(str(path), tmp_path / "cache", cache_limit=limit)
    assert sorted(int(row["id"]) for row in ds) == list(range(ROWS))
    with pytest.raises(ValueError, match="Minimum cache usage"):
        _dataset(str(path), tmp_path / "cache", cache_limit=footers)


def test_dataloader_workers_read_the_file_in_place(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _write(path, _table())
    ds = _dataset(str(path), tmp_path / "cache", columns=["id", "text"], shuffle=True)
    ids: list[int] = []
    for batch in StreamingDataLoader(ds, batch_size=4, num_workers=2):
        ids += batch["id"].tolist()
    assert sorted(ids) == list(range(ROWS))
    assert _cached(tmp_path / "cache") == []


def _rewrite(path: Path, table: pa.Table) -> None:
    """``table`` written over ``path`` as a new version: the mtime moved past the clock's
    grain (a rewrite within one tick would otherwise keep it)."""
    before = path.stat().st_mtime_ns
    _write(path, table)
    os.utime(path, ns=(before + 5_000_000_000, before + 5_000_000_000))


@pytest.mark.parametrize("size", ["same", "different"])
def test_a_rewritten_file_is_refused_by_name(tmp_path: Path, size: str) -> None:
    CACHE.clear()
    path = tmp_path / "t.parquet"
    old = pa.table({"id": pa.array(range(ROWS), pa.int64())})
    pq.write_table(old, str(path), row_group_size=GROUP, compression="none", use_dictionary=False)
    ds = _dataset(str(path), tmp_path / "cache")
    assert ds[3]["id"] == 3  # row group 0 read (and kept decoded)
    length = path.stat().st_size
    rows = ROWS if size == "same" else ROWS + 7
    new = pa.table({"id": pa.array(range(1000, 1000 + rows), pa.int64())})
    before = path.stat().st_mtime_ns
    pq.write_table(new, str(path), row_group_size=GROUP, compression="none", use_dictionary=False)
    os.utime(path, ns=(before + 5_000_000_000, before + 5_000_000_000))
    assert (path.stat().st_size == length) == (size == "same")
    for i in (GROUP + 1, ROWS - 1):  # row groups not read yet
        with pytest.raises(StaleIndexError, match=r"t\.parquet row group \d+: the file changed"):
            ds[i]
    # Row group 0 was read from the version the index holds: it still reads as that one.
    assert ds[4]["id"] == 4
    with pytest.raises(StaleIndexError, match=r"t\.parquet row group \d+"):
        list(ds)
    again = _dataset(str(path), tmp_path / "cache")  # built again: the new rows
    assert again.num_samples == rows
    assert [again[i]["id"] for i in (0, GROUP + 1, rows - 1)] == [1000, 1041, 1000 + rows - 1]


def test_a_truncated_file_names_the_file_and_row_group(tmp_path: Path) -> None:
    CACHE.clear()
    path = tmp_path / "t.parquet"
    _write(path, _table())
    ds = _dataset(str(path), tmp_path / "cache")
    assert ds[0]["id"] == 0
    last = ds.num_shards - 1
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    with pytest.raises(StaleIndexError, match=rf"t\.parquet row group {last}: .*size"):
        ds[ROWS - 1]


def test_a_deleted_file_is_named(tmp_path: Path) -> None:
    CACHE.clear()
    path = tmp_path / "t.parquet"
    _write(path, _table())
    ds = _dataset(str(path), tmp_path / "cache")
    path.unlink()
    with pytest.raises(FileNotFoundError, match=r"t\.parquet"):
        ds[GROUP * 2]

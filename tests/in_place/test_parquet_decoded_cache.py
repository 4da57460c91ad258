"""Decoded Parquet row groups are kept per process up to ``STREAMX_PARQUET_DECODED_BYTES``,
least recently used first out; a row group read through is dropped; rows read from a kept
table equal a fresh read's; a row group whose file left the disk is fetched again, its source
checked, before any row of it is served."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.exceptions import CorruptShardError
from streamx.format.parquet.decoded_cache import _ENTRY_BYTES, DecodedCache, decoded_bytes_limit
from streamx.format.parquet.decoded_row_group import CACHE, DecodedRowGroup
from streamx.format.parquet.python_values import python_column

ROWS, GROUP = 400, 50


@dataclass
class _Entry:
    nbytes: int


def test_the_bound_is_in_bytes_and_the_least_recently_used_go_first() -> None:
    cache: DecodedCache[_Entry] = DecodedCache(limit=30_000)
    for key in "abc":
        cache.get(key, lambda: _Entry(8_000))
    cache.get("a", lambda: _Entry(0))  # a hit: "a" becomes the most recently used
    cache.get("d", lambda: _Entry(8_000))  # past the bound: "b", the oldest, goes
    assert cache.keys() == ["c", "a", "d"]
    assert cache.total <= 30_000


def test_an_entry_larger_than_the_bound_is_kept_alone_while_in_use() -> None:
    cache: DecodedCache[_Entry] = DecodedCache(limit=10_000)
    cache.get("small", lambda: _Entry(1_000))
    big = cache.get("big", lambda: _Entry(50_000))
    assert cache.keys() == ["big"] and big.nbytes == 50_000
    cache.get("next", lambda: _Entry(1_000))
    assert cache.keys() == ["next"]


def test_threads_getting_and_dropping_at_once_keep_the_count_exact() -> None:
    """Readers get and drop row groups while download threads evict files: no error, one
    entry per key even when two threads make it at once, and the byte count equal to what
    is kept."""
    cache: DecodedCache[_Entry] = DecodedCache(limit=40_000)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(3_000):
                key = f"k{int(rng.integers(12))}"
                if rng.random() < 0.3:
                    cache.drop(key)
                else:
                    cache.get(key, lambda: _Entry(int(rng.integers(1_000, 9_000))))
        except BaseException as err:  # reported below, on the test's thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two bytecodes: races show
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    kept = cache.keys()
    assert len(kept) == len(set(kept))
    assert cache.total == sum(
        cache.get(key, lambda: _Entry(0)).nbytes + _ENTRY_BYTES for key in kept
    )


def test_an_entry_that_grows_is_counted_again() -> None:
    cache: DecodedCache[_Entry] = DecodedCache(limit=20_000)
    first = cache.get("a", lambda: _Entry(1_000))
    cache.get("b", lambda: _Entry(1_000))
    first.nbytes = 30_000  # its columns converted to Python values
    cache.measure("a")
    assert cache.keys() == ["a"]


def test_the_bound_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_PARQUET_DECODED_BYTES", "3mb")
    assert decoded_bytes_limit() == 3 << 20
    monkeypatch.setenv("STREAMX_PARQUET_DECODED_BYTES", "lots")
    with pytest.raises(ValueError, match="STREAMX_PARQUET_DECODED_BYTES.*'lots'"):
        decoded_bytes_limit()


def _table() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "flag": [i % 3 == 0 for i in ids],
            "score": [None if i % 7 == 0 else i / 3 for i in ids],
            "half": pa.array([i / 2 for i in ids], pa.float32()),
            "text": [f"row {i} " * (i % 5) for i in ids],
            "maybe": [None if i % 4 == 0 else f"m{i}" for i in ids],
            "wide": pa.array([f"w{i}" for i in ids], pa.large_string()),
            "blob": [bytes([i % 256]) * (i % 9) for i in ids],
            "vec": pa.array([[float(i), -1.0] for i in ids], pa.list_(pa.float32(), 2)),
            "tokens": pa.array([list(range(i % 6)) for i in ids], pa.list_(pa.int16())),
            "holes": [None if i % 11 == 0 else [i, i] for i in ids],
            "when": pa.array(ids, pa.timestamp("ms")),
        }
    )


def _expected(source: Path) -> list[dict[str, Any]]:
    """Each row as a whole-column conversion of a fresh read hands it out."""
    table = pq.read_table(source)
    columns = {name: python_column(table.column(name)) for name in table.column_names}
    return [{name: values[i] for name, values in columns.items()} for i in range(ROWS)]


def _same(got: Any, want: Any, where: str) -> None:
    assert type(got) is type(want), where
    if isinstance(want, np.ndarray):
        assert (got.dtype, got.shape, got.tolist()) == (want.dtype, want.shape, want.tolist())
    else:
        assert got == want, where


def _dataset(tmp_path: Path, endpoint: str | None = None) -> StreamingDataset:
    """A dataset over ``tmp_path / "t.parquet"`` (written once): read in place, or, served
    from ``endpoint``, its row groups fetched into a cache and evictable."""
    source = tmp_path / "t.parquet"
    if not source.exists():
        pq.write_table(_table(), str(source), row_group_size=GROUP)
    remote = str(source) if endpoint is None else f"{endpoint}/t.parquet"
    stream = ParquetStream(remote=remote, local=str(tmp_path / "cache"))
    return StreamingDataset(streams=[stream])


def test_shuffled_rows_from_kept_tables_equal_a_fresh_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _dataset(tmp_path)
    CACHE.clear()
    ds[0]
    (key,) = CACHE.keys()
    one = CACHE.get(key, _never).nbytes  # a row group's bytes, getters included
    monkeypatch.setenv("STREAMX_PARQUET_DECODED_BYTES", str(3 * one))
    monkeypatch.setattr(CACHE, "_limit", None)  # read from the environment again
    expected = _expected(tmp_path / "t.parquet")
    order = np.random.default_rng(7).integers(0, ROWS, 3 * ROWS).tolist()  # repeats too
    most = 0
    for i in order:
        row = ds[i]
        assert list(row) == list(expected[i])
        for name, want in expected[i].items():
            _same(row[name], want, f"row {i} {name}")
        assert CACHE.total <= 3 * one + 8192  # the bound, give or take one entry's bookkeeping
        most = max(most, len(CACHE.keys()))
    assert 2 <= most < ROWS // GROUP  # tables were kept, and some were evicted


def test_a_row_group_read_through_is_dropped(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    CACHE.clear()
    for i in range(GROUP - 1):
        ds[i]
    assert len(CACHE.keys()) == 1
    ds[GROUP - 1]  # its last unread row: a pass will not read it again
    assert CACHE.keys() == []


@pytest.mark.parametrize(
    "batches",
    [
        [[0, 1, 2, 3], [4, 5, 6], [7]],  # runs in order
        [[0, 2, 4], [1, 3, 5], [6, 7]],  # rising, with gaps
        [[5, 1, 5, 0], [0, 1, 7, 7], [3, 2], [4, 6]],  # unsorted, twice in a batch
        [[0, 1, 2], [1, 2, 3], [3, 4, 5, 6, 7], [7]],  # rising, some read before
        [[], [7, 6, 5, 4, 3, 2, 1, 0]],  # empty, then falling
    ],
)
def test_rows_read_count_each_row_once(tmp_path: Path, batches: list[list[int]]) -> None:
    """However a batch lists its rows (a run, gaps, unsorted, twice), a row counts once and
    the row group is read through only when its last unread row is read."""
    ds = _dataset(tmp_path)
    group = DecodedRowGroup(ds.shards[0])
    group.left = 8  # as if the group held 8 rows (its first 8 are used)
    group._unread[8:] = False
    seen: set[int] = set()
    for rows in batches:
        done = group.read(np.asarray(rows, np.int64))
        seen |= set(rows)
        assert group.left == 8 - len(seen)
        assert done == (len(seen) == 8)
    assert group._unread[:8].tolist() == [False] * 8


def test_a_row_group_evicted_from_disk_is_checked_again(tmp_path: Path) -> None:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    pq.write_table(_table(), str(tmp_path / "t.parquet"), row_group_size=GROUP)
    with Nginx(tmp_path) as server:  # fetched as copies, which eviction deletes
        _evicted_then_checked(tmp_path, _dataset(tmp_path, server.endpoint))


def _evicted_then_checked(tmp_path: Path, ds: StreamingDataset) -> None:
    CACHE.clear()
    assert ds[60]["id"] == 60  # row group 1 decoded and kept
    assert len(CACHE.keys()) == 1
    ds.evict_shard(1)
    assert CACHE.keys() == []  # never served from memory once its file left the disk
    table = _table()
    changed = table.set_column(0, "id", pa.array(range(1000, 1000 + ROWS), pa.int32()))
    source = tmp_path / "t.parquet"
    before = source.stat().st_mtime
    pq.write_table(changed, str(source), row_group_size=GROUP)
    os.utime(source, (before + 5, before + 5))  # a new version, whatever the clock's grain
    with pytest.raises((CorruptShardError, ValueError), match=r"t\.parquet row group 1"):
        ds[61]


def _never() -> Any:
    raise AssertionError("the row group was not kept")


def test_a_batch_over_more_row_groups_than_fit_equals_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_PARQUET_DECODED_BYTES", "0")  # only the row group in use
    monkeypatch.setattr(CACHE, "_limit", None)
    CACHE.clear()
    ds = _dataset(tmp_path)
    for shard in range(ds.num_shards):
        ds.prepare_shard(shard)  # every row group on local disk
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    ids = [5, 170, 60, 399, 61, 6]  # four row groups, out of order
    batch = get_columns(ids)
    assert batch is not None
    assert len(CACHE.keys()) <= 1
    expected = _expected(tmp_path / "t.parquet")
    for k, i in enumerate(ids):
        for name, want in expected[i].items():
            got = batch[name][k]
            got = got.item() if isinstance(got, np.generic) else got
            _same(got, want, f"row {i} {name}")

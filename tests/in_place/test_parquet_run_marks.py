"""Batches of a Parquet pass in order: each batch's rows run in order inside one row group,
so its columns are slices of the row group's (no gather) and its rows are marked read once
per run of batches (:mod:`streamx.format.parquet.run_marks`). The batches stay the
per-sample path's, and a row group still leaves the decoded cache once its last row has
been read, whatever mix of runs and other batches read it."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from batch_compare import assert_same_batches

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
from streamx.format.parquet.batch_rows import ParquetRows
from streamx.format.parquet.decoded_row_group import CACHE, decoded_key
from streamx.format.readers.mixed import MixedSampleReader

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(120)


def _source(root: Path) -> str:
    """Two files of 45 and 38 rows (row groups of 16): numbers, short strings and binary,
    a string column with nulls."""
    folder = root / "src"
    folder.mkdir(parents=True)
    for name, start, rows in (("a", 0, 45), ("b", 45, 38)):
        i = np.arange(start, start + rows)
        table = pa.table(
            {
                "id": pa.array(i, pa.int64()),
                "label": pa.array(i % 7, pa.int32()),
                "score": pa.array(i / 8, pa.float32()),
                "text": [f"row {j} " * (j % 3) for j in i],
                "blob": pa.array([bytes([j % 251]) * (j % 5) for j in i], pa.binary()),
                "note": [None if j % 8 == 3 else f"n{j}" for j in i],
            }
        )
        pq.write_table(table, folder / f"{name}.parquet", row_group_size=16)
    return str(folder)


def _dataset(remote: str, local: Path) -> StreamingDataset:
    stream = ParquetStream(remote=remote, local=str(local))
    return StreamingDataset(streams=[stream], batch_size=8, shuffle=False)


def _reader(ds: StreamingDataset) -> tuple[ParquetRows, list[str]]:
    mixed = ds._reader
    assert isinstance(mixed, MixedSampleReader) and isinstance(mixed.batch_reader, ParquetRows)
    return mixed.batch_reader, [decoded_key(shard) for shard in mixed._shards]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_pass_in_order_equals_the_per_sample_path_and_keeps_no_row_group(
    tmp_path: Path, workers: int
) -> None:
    """Batches in order (runs, and batches over a row group's or a file's end): the
    per-sample path's batches; after the pass no row group of it is left decoded."""
    remote = _source(tmp_path)
    expected = list(
        StreamingDataLoader(_dataset(remote, tmp_path / "a"), batch_size=8, batched=False)
    )
    ds = _dataset(remote, tmp_path / "b")
    loader = StreamingDataLoader(ds, batch_size=8, num_workers=workers)
    assert loader._inline()  # read in this process: the cache below is the pass's
    got = list(loader)
    assert_same_batches(got, expected)
    assert [i for b in got for i in b["id"].tolist()] == list(range(83))
    _, keys = _reader(ds)
    assert not set(keys) & set(CACHE.keys())


def test_a_pass_stopped_inside_a_row_group_keeps_only_that_one(tmp_path: Path) -> None:
    """Stopped after rows 0-23: row group 0 (read to its last row) is gone, row group 1
    (half read) is kept; the next pass reads every row again."""
    ds = _dataset(_source(tmp_path), tmp_path / "c")
    _, keys = _reader(ds)
    CACHE.clear()
    batches = iter(StreamingDataLoader(ds, batch_size=8))
    first = [next(batches)["id"].tolist() for _ in range(3)]
    assert first == [list(range(0, 8)), list(range(8, 16)), list(range(16, 24))]
    held = CACHE.keys()
    assert keys[0] not in held and keys[1] in held
    del batches
    again = [i for b in StreamingDataLoader(ds, batch_size=8) for i in b["id"].tolist()]
    assert again == list(range(83))


@pytest.mark.parametrize(
    "batches",
    [
        [range(0, 8), range(8, 16)],  # runs that meet
        [range(0, 8), [9, 8], range(10, 16)],  # a run, rows out of order, a run
        [range(0, 8), range(4, 12), range(12, 16)],  # runs that overlap
        [range(0, 8), range(0, 8), [15], range(8, 15)],  # a run twice, its end first
        [range(8, 16), range(0, 8)],  # the last rows first
    ],
)
def test_a_row_group_goes_once_every_row_was_read(tmp_path: Path, batches: list[Any]) -> None:
    """Whatever mix of runs and other batches read row group 0, it stays decoded until its
    last unread row is read, then goes; each batch holds its rows' values."""
    remote = _source(tmp_path)
    ds = _dataset(remote, tmp_path / "d")
    list(ds)  # every row group local
    truth = pq.read_table(Path(remote) / "a.parquet").to_pydict()
    reader, keys = _reader(ds)
    CACHE.clear()
    for number, ids in enumerate(batches):
        columns = reader.get_columns(list(ids))
        assert columns is not None
        for name, values in columns.items():
            got = values.tolist() if isinstance(values, np.ndarray) else values
            assert got == pytest.approx([truth[name][i] for i in ids]), name
        held = CACHE.keys()
        assert (keys[0] in held) == (number < len(batches) - 1)


def test_columns_of_a_run_are_fresh_arrays_and_the_reader_pickles_without_them(
    tmp_path: Path,
) -> None:
    """A run's number columns are writable copies (the loader's tensors may be changed in
    place) of ``default_collate``'s dtypes; a reader in the middle of a run pickles without
    its decoded row group and reads the same batches where it is unpickled."""
    ds = _dataset(_source(tmp_path), tmp_path / "e")
    list(ds)
    reader, _ = _reader(ds)
    columns = reader.get_columns(list(range(16, 24)))
    assert columns is not None
    for name, dtype in (("id", np.int64), ("label", np.int64), ("score", np.float64)):
        array = columns[name]
        assert isinstance(array, np.ndarray) and array.dtype == dtype
        assert array.flags.writeable and array.flags.owndata
    assert columns["note"] == [None if j % 8 == 3 else f"n{j}" for j in range(16, 24)]
    copy = pickle.loads(pickle.dumps(reader))
    assert copy._marks._group is None and reader._marks._group is not None
    again = copy.get_columns(list(range(24, 32)))
    expected = reader.get_columns(list(range(24, 32)))
    assert again is not None and expected is not None
    for name, values in expected.items():
        other = again[name]
        assert type(other) is type(values)
        assert np.array_equal(other, values) if isinstance(values, np.ndarray) else other == values

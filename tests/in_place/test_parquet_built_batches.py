"""A Parquet pass in order on the batched path cuts several batches of a row group in one
call (:mod:`streamx.format.parquet.built_batches`). Its batches stay the per-sample path's
(``batched=False``: a dict per row, then ``default_collate``) over mixed types, nulls, a
row filter, a projection and row groups that end inside a batch; a request for other ids
drops what was cut ahead; a pass stopped inside a row group keeps it; a corrupt row group
met on the way fails naming the file and the row group."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from batch_compare import assert_same_batches

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
from streamx.exceptions import CorruptShardError
from streamx.format.parquet.batch_rows import ParquetRows
from streamx.format.parquet.built_batches import ahead
from streamx.format.parquet.decoded_row_group import CACHE, decoded_key
from streamx.format.readers.mixed import MixedSampleReader

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.timeout(120),
    # The per-sample path hands torch numpy views of Arrow's read-only buffers.
    pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning"),
]

# Row groups of 36 rows and batches of 8: a row group ends inside every fifth batch.
GROUP, BATCH = 36, 8


def _table(start: int, rows: int) -> pa.Table:
    i = np.arange(start, start + rows)
    return pa.table(
        {
            "id": pa.array(i, pa.int64()),
            "i8": pa.array(i % 200 - 100, pa.int8()),
            "u32": pa.array(i * 3, pa.uint32()),
            "f32": pa.array(i / 7, pa.float32()),
            "f64": pa.array(-i / 9, pa.float64()),
            "flag": pa.array(i % 3 == 0),
            "fixed": pa.array([[j, -j] for j in i], pa.list_(pa.int16(), 2)),
            "text": [f"row {j} " * (j % 4) for j in i],
            "blob": [bytes([j % 251]) * (j % 5) for j in i],
            "note": [None if j % 8 == 3 else f"n{j}" for j in i],  # never first in a batch
        }
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two files of 150 and 95 rows, row groups of :data:`GROUP`."""
    folder = tmp_path_factory.mktemp("built") / "src"
    folder.mkdir()
    for name, start, rows in (("a", 0, 150), ("b", 150, 95)):
        pq.write_table(_table(start, rows), folder / f"{name}.parquet", row_group_size=GROUP)
    return str(folder)


def _dataset(remote: str, local: Path, **stream: Any) -> StreamingDataset:
    parquet = ParquetStream(remote=remote, local=str(local), **stream)
    return StreamingDataset(streams=[parquet], batch_size=BATCH, shuffle=False)


def _rows(ds: StreamingDataset) -> ParquetRows:
    reader = ds._reader
    assert isinstance(reader, MixedSampleReader) and isinstance(reader.batch_reader, ParquetRows)
    return reader.batch_reader


def _both(remote: str, root: Path, workers: int, **stream: Any) -> tuple[list[Any], list[Any]]:
    """The batched path's pass and the per-sample path's, each over its own cache."""
    ds = _dataset(remote, root / "ours", **stream)
    ours = StreamingDataLoader(ds, batch_size=BATCH, num_workers=workers)
    # Lists are not read inline: then the batches are cut ahead in the DataLoader's worker
    # (none: this process), or not at all (two: each worker reads every other batch).
    assert ours._inline() == ("fixed" not in _rows(ds)._names)
    theirs = StreamingDataLoader(
        _dataset(remote, root / "theirs", **stream), batch_size=BATCH, batched=False
    )
    return list(ours), list(theirs)


FLAT = ["id", "i8", "u32", "f32", "f64", "flag", "text", "blob", "note"]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("columns", [None, FLAT], ids=["with-lists", "inline"])
def test_a_pass_in_order_equals_the_per_sample_path(
    source: str, tmp_path: Path, workers: int, columns: list[str] | None
) -> None:
    """Mixed types, a column with nulls, lists of one length, row groups ending inside
    batches: batch for batch, type for type, the per-sample path's."""
    got, expected = _both(source, tmp_path, workers, columns=columns)
    assert_same_batches(got, expected)
    assert [i for b in got for i in b["id"].tolist()] == list(range(245))
    assert got[0]["f32"].dtype == torch.float64 and got[0]["u32"].dtype == torch.int64
    assert columns or got[0]["fixed"].dtype == torch.int16


def test_a_row_filter_and_a_projection(source: str, tmp_path: Path) -> None:
    kept = (pc.field("flag") == False) & (pc.field("id") >= 5)  # noqa: E712
    columns = ["blob", "id", "f32", "text"]
    got, expected = _both(source, tmp_path, 2, columns=columns, filters=kept)
    assert_same_batches(got, expected)
    assert list(got[0]) == columns
    assert [i for b in got for i in b["id"].tolist()] == [i for i in range(5, 245) if i % 3 != 0]


def _truth(remote: str) -> dict[str, list[Any]]:
    tables = [pq.read_table(Path(remote) / f"{name}.parquet") for name in ("a", "b")]
    truth: dict[str, list[Any]] = pa.concat_tables(tables).to_pydict()
    return truth


def _check(columns: dict[str, Any] | None, ids: list[int], truth: dict[str, list[Any]]) -> None:
    assert columns is not None
    for name, values in columns.items():
        got = values.tolist() if isinstance(values, np.ndarray) else values
        assert got == [truth[name][i] for i in ids], name


def test_batches_cut_ahead_go_only_to_their_own_ids(source: str, tmp_path: Path) -> None:
    """The second batch of a run cuts the rest of the row group's whole batches; they are
    handed out while the ids asked for are theirs, in order. Ids out of order, another
    batch size or a repeat drop them, and each batch still holds its own rows."""
    ds = _dataset(source, tmp_path / "c")
    list(ds)  # every row group local
    rows, truth = _rows(ds), _truth(source)
    asks = [range(0, 8), range(8, 16), range(16, 24), [24, 26, 25, 27, 28, 29, 30, 31]]
    asks += [range(0, 8), range(8, 16), range(16, 20), range(20, 28), range(28, 36)]
    asks += [range(36, 44), range(44, 52), range(52, 60), range(52, 60), range(60, 68)]
    for number, ids in enumerate(asks):
        _check(rows.get_columns(list(ids)), list(ids), truth)
        if number == 1:  # rows 16-31 cut ahead (two whole batches of row group 0 left)
            assert [ids[0] for ids in rows._built._ids] == [24, 16]
        if number == 3:
            assert not rows._built._ids


def test_a_pass_stopped_inside_a_row_group_keeps_it(source: str, tmp_path: Path) -> None:
    """Rows are counted read as their batch is handed out, not when it is cut: a pass
    stopped after three batches of row group 0 keeps it decoded; the reader pickles without
    the batches cut ahead; the next pass reads every row."""
    ds = _dataset(source, tmp_path / "d")
    rows = _rows(ds)
    key = decoded_key(rows._shards[0])
    CACHE.clear()
    batches = iter(StreamingDataLoader(ds, batch_size=BATCH))
    assert [next(batches)["id"].tolist()[0] for _ in range(3)] == [0, 8, 16]
    held = CACHE.keys()
    assert rows._built._ids and key in held
    assert not pickle.loads(pickle.dumps(rows))._built._ids
    del batches
    again = [i for b in StreamingDataLoader(ds, batch_size=BATCH) for i in b["id"].tolist()]
    assert again == list(range(245))
    held = CACHE.keys()
    assert key not in held  # read to its last row this time


def test_a_corrupt_row_group_on_the_way_names_the_file_and_row_group(tmp_path: Path) -> None:
    """Row group 2 of ``r.parquet`` garbled after the index was made, its size and mtime
    kept (so only the decode sees it): the pass gives row groups 0 and 1 (batches cut
    ahead), then fails naming the file and the row group."""
    path = tmp_path / "src" / "r.parquet"
    path.parent.mkdir()
    pq.write_table(_table(0, 4 * GROUP), path, row_group_size=GROUP)
    ds = _dataset(str(path.parent), tmp_path / "c", columns=["id", "text"])
    data = bytearray(path.read_bytes())
    chunk = pq.read_metadata(str(path)).row_group(2).column(7)  # "text"
    start, size = chunk.data_page_offset, chunk.total_compressed_size
    data[start : start + size] = b"\x07" * size
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime
    got: list[int] = []
    with pytest.raises((CorruptShardError, ValueError), match=r"r\.parquet row group 2"):
        for batch in StreamingDataLoader(ds, batch_size=BATCH):
            got.extend(batch["id"].tolist())
    assert got == list(range(len(got))) and len(got) <= 2 * GROUP


@pytest.mark.parametrize(
    ("count", "left", "cut"),
    [(32, 10_000, 16), (32, 100, 3), (8, 12, 1), (100, 10_000, 5), (300, 10_000, 1)],
)
def test_how_many_batches_are_cut_at_once(count: int, left: int, cut: int) -> None:
    """At most 16 batches and 512 rows, whole batches of the row group only, at least the
    batch asked for."""
    assert ahead(count, left) == cut

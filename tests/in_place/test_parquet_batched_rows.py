"""The batched ``StreamingDataLoader`` path over Parquet row groups with strings and blobs:
built from Arrow's columns where values are short, from the rows the core decodes
(:mod:`streamx.format.parquet.page_rows`) where blobs average 4 KiB or more. Either way the
per-sample path's batches, blobs equal to pyarrow's, numbers as ``default_collate`` makes
them; a dataset of numbers only keeps the arrays read from Arrow."""

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


# Bytes per step of the binary column's sizes (0-4 steps): short values, or blobs of 10 KB
# on average, which go through the core's rows.
SHORT, LARGE = 700, 5000


def _flat(rows: int, start: int, blobs: bool = True, step: int = LARGE) -> pa.Table:
    """Flat columns the core decodes: numbers, and (``blobs``) a string and a binary."""
    i = np.arange(start, start + rows)
    columns: dict[str, Any] = {
        "id": pa.array(i, pa.int64()),
        "label": pa.array(i % 7, pa.int32()),
        "score": pa.array(i / 8, pa.float32()),
    }
    if blobs:
        rng = np.random.default_rng(start)
        columns["text"] = [f"row {j} " * (j % 3) for j in i]
        columns["jpeg"] = pa.array([rng.bytes(int(j % 5) * step) for j in i], pa.binary())
    return pa.table(columns)


def _source(root: Path, blobs: bool = True, step: int = LARGE) -> str:
    """Two files of 45 and 38 rows, row groups of 16 (batches of 8 span row groups)."""
    folder = root / "src"
    folder.mkdir(parents=True)
    pq.write_table(_flat(45, 0, blobs, step), folder / "a.parquet", row_group_size=16)
    pq.write_table(_flat(38, 45, blobs, step), folder / "b.parquet", row_group_size=16)
    return str(folder)


def _dataset(remote: str, local: Path, shuffle: bool = True) -> StreamingDataset:
    stream = ParquetStream(remote=remote, local=str(local))
    return StreamingDataset(
        streams=[stream], batch_size=8, shuffle=shuffle, shuffle_seed=5, shuffle_block_size=40
    )


def _pyarrow_rows(remote: str) -> dict[str, list[Any]]:
    return pq.read_table(sorted(Path(remote).glob("*.parquet"))).to_pydict()  # type: ignore[no-any-return]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("step", [SHORT, LARGE])
def test_batches_from_core_rows_equal_the_per_sample_path(
    tmp_path: Path, workers: int, step: int
) -> None:
    """Shuffled: batches take rows of several row groups, out of order."""
    remote = _source(tmp_path, step=step)
    context = "fork" if workers else None
    per_sample = StreamingDataLoader(
        _dataset(remote, tmp_path / "a"),
        batch_size=8,
        num_workers=workers,
        batched=False,
        multiprocessing_context=context,
    )
    ds = _dataset(remote, tmp_path / "b")
    loader = StreamingDataLoader(
        ds, batch_size=8, num_workers=workers, multiprocessing_context=context
    )
    # Short values: Arrow's columns, read by the loader's own process (no worker pipe).
    assert loader._batched and loader._inline() == (step == SHORT)
    got, expected = list(loader), list(per_sample)
    assert_same_batches(got, expected)
    truth = _pyarrow_rows(remote)
    ids = [i for batch in got for i in batch["id"].tolist()]
    assert sorted(ids) == list(range(83)) and ids != sorted(ids)
    for batch in got:
        rows = batch["id"].tolist()
        assert batch["jpeg"] == [truth["jpeg"][i] for i in rows]
        assert all(type(blob) is bytes for blob in batch["jpeg"])
        assert batch["text"] == [truth["text"][i] for i in rows]
        assert batch["label"].dtype == torch.int64 and batch["score"].dtype == torch.float64
        assert batch["score"].tolist() == [truth["score"][i] for i in rows]


def test_columns_come_as_the_rows_values(tmp_path: Path) -> None:
    """Large blobs: every column as the per-sample path's values over row groups of two
    files (the core's rows); within one row group, numbers as arrays."""
    ds = _dataset(_source(tmp_path), tmp_path / "c", shuffle=False)
    list(ds)  # every row group local
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    ids = [3, 60, 17, 4, 82]
    columns = get_columns(ids)
    assert list(columns) == list(ds[0])
    for name, values in columns.items():
        assert values == [ds[i][name] for i in ids], name
    one_group = get_columns([5, 1, 9])  # numbers stacked as default_collate stacks them
    arrays = {k: v for k, v in one_group.items() if isinstance(v, np.ndarray)}
    assert list(arrays) == ["id", "label", "score"]
    assert arrays["id"].tolist() == [5, 1, 9] and arrays["label"].dtype == np.int64
    assert arrays["score"].dtype == np.float64 and arrays["score"].tolist() == [5 / 8, 1 / 8, 9 / 8]
    assert one_group["jpeg"] == [ds[i]["jpeg"] for i in (5, 1, 9)]


@pytest.mark.parametrize("ids", [[3, 60, 17, 4, 82], [5, 1, 9], [16, 17, 18, 19], [14, 15, 16]])
def test_short_values_come_as_arrow_columns(tmp_path: Path, ids: list[int]) -> None:
    """Short strings and blobs: numbers as arrays across row groups too, strings and blobs
    as the per-sample path's values (in order, out of order, over row groups)."""
    ds = _dataset(_source(tmp_path, step=SHORT), tmp_path / "c", shuffle=False)
    list(ds)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    columns = get_columns(ids)
    assert list(columns) == list(ds[0])
    rows = [ds[i] for i in ids]
    dtypes = {"id": np.int64, "label": np.int64, "score": np.float64}
    for name, dtype in dtypes.items():
        array = columns[name]
        assert isinstance(array, np.ndarray) and array.dtype == dtype
        assert array.tolist() == [r[name] for r in rows]
    for name in ("text", "jpeg"):
        values = columns[name]
        assert values == [r[name] for r in rows], name
        assert [type(v) for v in values] == [type(r[name]) for r in rows]


def _with_nulls(root: Path) -> str:
    """Short strings with nulls here and there (never first in a batch, in order), ints and
    floats with nulls in the last row group only (so earlier batches collate), row groups
    of 16."""
    folder = root / "src"
    folder.mkdir(parents=True)
    i = np.arange(64)
    table = _flat(64, 0, step=SHORT)
    table = table.append_column("note", pa.array([None if j % 8 == 3 else f"n{j}" for j in i]))
    table = table.append_column("count", pa.array([None if j == 53 else j for j in i]))
    table = table.append_column("ratio", pa.array([None if j == 50 else j / 4 for j in i]))
    pq.write_table(table, folder / "a.parquet", row_group_size=16)
    return str(folder)


def _outcome(loader: Any) -> tuple[list[Any], str | None]:
    batches: list[Any] = []
    try:
        batches.extend(loader)
    except Exception as err:
        return batches, f"{type(err).__name__}: {err}"
    return batches, None


@pytest.mark.parametrize("shuffle", [False, True])
def test_nulls_as_on_the_per_sample_path(tmp_path: Path, shuffle: bool) -> None:
    """Nulls in strings and numbers: the same batches (``None`` among the strings), and the
    same error where ``default_collate`` refuses one, whichever path."""
    remote = _with_nulls(tmp_path)
    outcomes = []
    for batched in (False, True):
        ds = _dataset(remote, tmp_path / str(batched), shuffle=shuffle)
        outcomes.append(_outcome(StreamingDataLoader(ds, batch_size=8, batched=batched)))
    (theirs, error), (ours, mine) = outcomes
    assert mine == error
    assert_same_batches(ours, theirs)
    if not shuffle:  # in order, strings come with their nulls; ints refuse theirs
        assert error is not None and len(theirs) == 6
        assert None in theirs[0]["note"] and theirs[0]["count"].dtype == torch.int64


def test_numbers_only_keep_arrow_arrays(tmp_path: Path) -> None:
    ds = _dataset(_source(tmp_path, blobs=False), tmp_path / "d", shuffle=False)
    list(ds)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    columns = get_columns([1, 50, 2])
    arrays = {k: v for k, v in columns.items() if isinstance(v, np.ndarray)}
    assert list(arrays) == list(columns)
    assert arrays["id"].tolist() == [1, 50, 2] and arrays["score"].dtype == np.float64


@pytest.mark.parametrize("case", ["null", "uint64"])
def test_numbers_torch_refuses_fail_as_per_sample(tmp_path: Path, case: str) -> None:
    """A null in a number column, or an int past ``int64``: the same error either way."""
    table = _flat(40, 0)
    if case == "null":
        column = pa.array([None if i == 21 else i for i in range(40)], pa.int64())
    else:
        column = pa.array([2**63 + i for i in range(40)], pa.uint64())
    folder = tmp_path / "src"
    folder.mkdir()
    pq.write_table(table.append_column("odd", column), folder / "a.parquet", row_group_size=16)
    outcomes: list[tuple[int, str | None]] = []
    for batched in (False, True):
        ds = _dataset(str(folder), tmp_path / str(batched), shuffle=False)
        loader = StreamingDataLoader(ds, batch_size=8, batched=batched)
        assert loader._batched == batched
        batches: list[Any] = []
        try:
            batches.extend(loader)
        except Exception as err:
            outcomes.append((len(batches), f"{type(err).__name__}: {err}"))
        else:
            outcomes.append((len(batches), None))
    assert outcomes[0] == outcomes[1] and outcomes[0][1] is not None


def test_a_pass_in_order_decodes_the_next_row_group_ahead(tmp_path: Path) -> None:
    """A row group's first batch in order starts decoding the next row group (kept in the
    decoded cache); the reader's first batch and rows out of order start nothing; the
    dataset still pickles after."""
    ds = _dataset(_source(tmp_path, step=SHORT), tmp_path / "c", shuffle=False)
    list(ds)  # every row group local
    mixed = ds._reader
    assert isinstance(mixed, MixedSampleReader)
    reader = mixed.batch_reader
    assert isinstance(reader, ParquetRows)
    keys = [decoded_key(shard) for shard in mixed._shards]
    CACHE.clear()
    reader.get_columns([0, 1])  # the first batch: nothing ahead
    reader.get_columns([17, 16, 18])  # out of order: nothing ahead
    assert CACHE.keys() == [keys[0], keys[1]]
    reader.get_columns(list(range(32, 40)))  # row group 2, in order: row group 3 ahead
    reader._ahead.wait(3)
    assert CACHE.keys() == [keys[0], keys[1], keys[2], keys[3]]
    again = pickle.loads(pickle.dumps(ds))
    loader = StreamingDataLoader(again, batch_size=8)
    assert_same_batches(list(loader), list(StreamingDataLoader(ds, batch_size=8)))

"""The batched ``StreamingDataLoader`` path over Parquet row groups with strings and blobs,
built from the rows the core decodes (:mod:`streamx.format.parquet.page_rows`): the
per-sample path's batches, blobs equal to pyarrow's, numbers as ``default_collate`` makes
them; a dataset of numbers only keeps the arrays read from Arrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from batch_compare import assert_same_batches

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(120)


def _flat(rows: int, start: int, blobs: bool = True) -> pa.Table:
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
        columns["jpeg"] = pa.array([rng.bytes(int(j % 5) * 700) for j in i], pa.binary())
    return pa.table(columns)


def _source(root: Path, blobs: bool = True) -> str:
    """Two files of 45 and 38 rows, row groups of 16 (batches of 8 span row groups)."""
    folder = root / "src"
    folder.mkdir(parents=True)
    pq.write_table(_flat(45, 0, blobs), folder / "a.parquet", row_group_size=16)
    pq.write_table(_flat(38, 45, blobs), folder / "b.parquet", row_group_size=16)
    return str(folder)


def _dataset(remote: str, local: Path, shuffle: bool = True) -> StreamingDataset:
    stream = ParquetStream(remote=remote, local=str(local))
    return StreamingDataset(
        streams=[stream], batch_size=8, shuffle=shuffle, shuffle_seed=5, shuffle_block_size=40
    )


def _pyarrow_rows(remote: str) -> dict[str, list[Any]]:
    return pq.read_table(sorted(Path(remote).glob("*.parquet"))).to_pydict()  # type: ignore[no-any-return]


@pytest.mark.parametrize("workers", [0, 2])
def test_batches_from_core_rows_equal_the_per_sample_path(tmp_path: Path, workers: int) -> None:
    remote = _source(tmp_path)
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
    assert loader._batched and not loader._inline()
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
    """Every column as the per-sample path's values, over row groups of two files."""
    ds = _dataset(_source(tmp_path), tmp_path / "c", shuffle=False)
    list(ds)  # every row group local
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    ids = [3, 60, 17, 4, 82]
    columns = get_columns(ids)
    assert list(columns) == list(ds[0])
    for name, values in columns.items():
        assert values == [ds[i][name] for i in ids], name
    assert get_columns(ids[:1]) == {name: [ds[3][name]] for name in columns}


def test_numbers_only_keep_arrow_arrays(tmp_path: Path) -> None:
    ds = _dataset(_source(tmp_path, blobs=False), tmp_path / "d", shuffle=False)
    list(ds)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    columns = get_columns([1, 50, 2])
    arrays = {k: v for k, v in columns.items() if isinstance(v, np.ndarray)}
    assert list(arrays) == list(columns)
    assert arrays["id"].tolist() == [1, 50, 2] and arrays["score"].dtype == np.float64

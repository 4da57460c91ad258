"""``dataset[i]`` on a Parquet row group converts that one row to Python, and the row equals,
value for value and type for type, what the whole-column conversion (the batched path's)
hands out: numbers, strings, nulls, binary, fixed-size and variable
lists (numeric as numpy views, others as arrays), nested lists and images."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.format.parquet.decoded_row_group import CACHE

ROWS = 60


def _png(i: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (3, 2), (i * 4, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


def _table() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table(
        {
            "id": ids,
            "score": [None if i % 7 == 0 else i / 3 for i in ids],
            "text": [None if i % 5 == 0 else f"row {i}" for i in ids],
            "blob": [bytes([i]) * (i % 4) for i in ids],
            "vec": pa.array([[float(i), i + 0.5] for i in ids], pa.list_(pa.float32(), 2)),
            "tokens": [list(range(i % 6)) for i in ids],
            "with_null": [None if i % 3 == 0 else [i, None] for i in ids],
            "words": [[f"w{i}", "x"] for i in ids],
            "nested": [[[i], [i, i]] for i in ids],
            "png": [_png(i) for i in ids],
        }
    )


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (got, want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert [repr(x) for x in got.tolist()] == [repr(x) for x in want.tolist()]
    elif isinstance(want, Image.Image):
        assert got.tobytes() == want.tobytes() and got.size == want.size
    else:
        assert got == want


@pytest.fixture
def dataset(tmp_path: Path) -> StreamingDataset:
    path = tmp_path / "t.parquet"
    pq.write_table(_table(), str(path), row_group_size=16)
    stream = ParquetStream(remote=str(path), local=str(tmp_path / "c"), image_columns=["png"])
    return StreamingDataset(streams=[stream])


def test_a_row_alone_equals_the_whole_column_conversion(dataset: StreamingDataset) -> None:
    walked = [dataset[i] for i in range(ROWS)]
    for i in (0, 5, 15, 16, 33, 47, 59):
        CACHE.clear()  # the row group decoded afresh: row i is its first touch
        alone = dataset[i]
        assert set(alone) == set(walked[i])
        (key,) = CACHE.keys()
        group = CACHE.get(key, _never)
        for name, want in walked[i].items():
            _same(alone[name], want)
            _same(alone[name], group.values(name)[i % 16])  # the batched path's values


def test_ragged_nested_lists_are_arrays_of_arrays(dataset: StreamingDataset) -> None:
    nested = dataset[7]["nested"]  # [[7], [7, 7]]: numpy cannot make one 2-D array of it
    assert nested.dtype == object and [a.tolist() for a in nested] == [[7], [7, 7]]
    assert all(isinstance(a, np.ndarray) for a in nested)


def test_rows_read_one_at_a_time_convert_no_whole_column(dataset: StreamingDataset) -> None:
    CACHE.clear()
    for i in (20, 21, 22):
        dataset[i]
    (key,) = CACHE.keys()
    group = CACHE.get(key, _never)
    assert group.values_of == {}  # each row alone: no column converted to Python
    assert dataset[23]["text"] == "row 23"


def _never() -> Any:
    raise AssertionError("the row group was not kept")

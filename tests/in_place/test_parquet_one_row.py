"""``dataset[i]`` on a Parquet row group not yet decoded converts that one row to Python, and
the row equals, value for value and type for type, what the whole-column conversion of a walk
through the row group hands out: numbers, strings, nulls, binary, fixed-size and variable
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
from streamx.format.parquet import row_group

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


def test_a_first_row_alone_equals_the_whole_column_conversion(dataset: StreamingDataset) -> None:
    walked = [dataset[i] for i in range(ROWS)]  # each row group: first row, then columns
    for i in (0, 5, 15, 16, 33, 47, 59):
        row_group._DECODED.clear()  # the row group decoded afresh: row i is its first touch
        alone = dataset[i]
        assert set(alone) == set(walked[i])
        for name, want in walked[i].items():
            _same(alone[name], want)


def test_ragged_nested_lists_are_arrays_of_arrays(dataset: StreamingDataset) -> None:
    nested = dataset[7]["nested"]  # [[7], [7, 7]]: numpy cannot make one 2-D array of it
    assert nested.dtype == object and [a.tolist() for a in nested] == [[7], [7, 7]]
    assert all(isinstance(a, np.ndarray) for a in nested)


def test_the_second_row_converts_whole_columns_once(dataset: StreamingDataset) -> None:
    row_group._DECODED.clear()
    dataset[20]
    (group,) = row_group._DECODED.values()
    assert group.values_of == {}  # one row alone: no column converted
    dataset[21]
    assert set(group.values_of) == set(_table().column_names)
    assert dataset[22]["text"] == "row 22"

"""Parquet columns of plain numbers reach numpy from their Arrow buffers: the values and
dtypes ``to_numpy`` gives, and no pandas import on the first batch (pyarrow's
``to_numpy`` imports pandas where it is installed, half a second in every process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamx.format.parquet.arrow_numpy import numpy_values

TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.bool_(),
]


def _array(kind: pa.DataType, count: int) -> pa.Array:
    rng = np.random.default_rng(7)
    if pa.types.is_boolean(kind):
        return pa.array(rng.random(count) < 0.5, kind)
    return pa.array(rng.integers(0, 100, count).astype(kind.to_pandas_dtype()), kind)


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("cut", [(0, 37), (3, 29), (9, 0), (17, 20)], ids=str)
def test_values_and_dtype_equal_to_numpy(kind: pa.DataType, cut: tuple[int, int]) -> None:
    """Whole arrays and slices that start inside a byte of a boolean bitmap."""
    start, length = cut
    array = _array(kind, 37).slice(start, length)
    got, want = numpy_values(array), array.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype
    assert got.tolist() == want.tolist()


def test_other_types_and_nulls_go_through_to_numpy() -> None:
    with_nulls = pa.array([1, None, 3], pa.int64())
    assert np.isnan(numpy_values(with_nulls)[1])
    assert numpy_values(pa.array(["a", "b"])).tolist() == ["a", "b"]


SCRIPT = """
import sys
import torch
import streamx

stream = streamx.ParquetStream(remote=sys.argv[1], local=sys.argv[2])
dataset = streamx.StreamingDataset(streams=[stream], batch_size=8, shuffle=False)
loader = streamx.StreamingDataLoader(dataset, batch_size=8, batched=sys.argv[3] == "1")
batch = next(iter(loader))
print(batch["id"].tolist(), batch["f"].dtype, batch["l"].shape, "pandas" in sys.modules)
"""


@pytest.mark.parametrize("batched", ["1", "0"], ids=["batched", "per-sample"])
def test_a_first_batch_imports_no_pandas(batched: str, tmp_path: Path) -> None:
    """Numbers, booleans, lists of numbers and strings: a real process's first batch."""
    pytest.importorskip("pandas")  # what is not installed cannot be imported
    (tmp_path / "src").mkdir()
    count = 400
    table = pa.table(
        {
            "id": pa.array(np.arange(count, dtype=np.int64)),
            "f": pa.array(np.full(count, 1.5, np.float32)),
            "b": pa.array(np.arange(count) % 2 == 0),
            "l": pa.array([[1.0, 2.0]] * count, pa.list_(pa.float32())),
            "fixed": pa.array([[1, 2, 3]] * count, pa.list_(pa.int32(), 3)),
            "s": pa.array(["x"] * count),
        }
    )
    pq.write_table(table, tmp_path / "src" / "p.parquet", row_group_size=100)
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "src"), str(tmp_path / "c"), batched],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    # Floats are Python floats on the per-sample path, so float64 after default_collate.
    assert run.stdout.split("]", 1) == [
        "[0, 1, 2, 3, 4, 5, 6, 7",
        " torch.float64 torch.Size([8, 2]) False\n",
    ]

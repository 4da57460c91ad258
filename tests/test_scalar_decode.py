"""Fixed-width numeric columns decode to numpy scalars bit for bit, as mosaicml-streaming's
``np.frombuffer(data, dtype)[0]`` does (NaN payloads, -0.0, subnormals and extremes included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx

DTYPES = (
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
)


def _patterns(dtype: np.dtype[Any], count: int) -> list[bytes]:
    """Random bit patterns plus the edge values of the type, as little-endian bytes."""
    rng = np.random.default_rng(dtype.itemsize)
    raw = rng.integers(0, 256, (count, dtype.itemsize), dtype=np.uint8)
    values = [row.tobytes() for row in raw]
    if dtype.kind == "f":
        edges = [0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dtype).tiny / 2, np.finfo(dtype).max]
    else:
        edges = [np.iinfo(dtype).min, np.iinfo(dtype).max, 0]
    values += [np.array(e, dtype.newbyteorder("<")).tobytes() for e in edges]
    return values


@pytest.mark.parametrize("name", DTYPES)
def test_scalar_bits_round_trip(tmp_path: Path, name: str) -> None:
    dtype = np.dtype(name)
    values = _patterns(dtype, 200)
    out = str(tmp_path / name)
    with streamx.MDSWriter(out=out, columns={"v": name}) as writer:
        for value in values:
            writer.write({"v": value})
    ds = streamx.LocalDataset(out)
    for i, value in enumerate(values):
        got = ds[i]["v"]
        expected = np.frombuffer(value, dtype.newbyteorder("<"))[0]
        assert type(got) is type(expected) is getattr(np, name)
        assert np.array(got, dtype).tobytes() == np.array(expected, dtype).tobytes()

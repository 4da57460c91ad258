"""Turning input values into what MDS columns take.

Two directions share this module: rows coming out of Arrow (lists become numpy arrays of
their column's dtype) and columns inferred from a first sample of plain Python values
(user functions, LitData chunks), where no Arrow schema exists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from PIL import Image

from streamx.format.ndarray import DTYPE_CODES

__all__ = ["arrow_rows", "infer_from_sample", "ndarray_dtype", "to_arrays"]


def ndarray_dtype(encoding: str) -> tuple[str | None, tuple[int, ...] | None]:
    """``(dtype, shape)`` of an ``ndarray[:dtype[:shape]]`` encoding; ``(None, None)`` otherwise."""
    name, _, args = encoding.partition(":")
    if name != "ndarray":
        return None, None
    parts = args.split(":") if args else []
    dtype = parts[0] if parts else None
    shape = tuple(int(d) for d in parts[1].split(",")) if len(parts) == 2 else None
    return dtype, shape


def arrow_rows(table: pa.Table, columns: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` as samples; lists turn into arrays for ``ndarray`` columns."""
    names = list(columns)
    values = [table.column(name).to_pylist() for name in names]
    arrays = _array_columns(columns)
    for row in zip(*values):
        sample = dict(zip(names, row))
        yield _convert(sample, arrays) if arrays else sample


def to_arrays(sample: dict[str, Any], columns: Mapping[str, str]) -> dict[str, Any]:
    """``sample`` with its lists turned into arrays where ``columns`` says ``ndarray``."""
    arrays = _array_columns(columns)
    return _convert(sample, arrays) if arrays else sample


ArraySpec = tuple[str | None, tuple[int, ...] | None]


def _array_columns(columns: Mapping[str, str]) -> dict[str, ArraySpec]:
    return {n: ndarray_dtype(e) for n, e in columns.items() if e.partition(":")[0] == "ndarray"}


def _convert(sample: dict[str, Any], arrays: Mapping[str, ArraySpec]) -> dict[str, Any]:
    for name, (dtype, shape) in arrays.items():
        value = sample.get(name)
        if isinstance(value, list):
            array = np.asarray(value, dtype=dtype)
            sample[name] = array.reshape(shape) if shape else array
    return sample


def infer_from_sample(sample: Mapping[str, Any]) -> dict[str, str]:
    """Columns for a sample of Python values: the encoding each value's type calls for.

    ``str``, ``bytes``, ``int`` (Python int, any size up to int64), ``float`` (float64),
    ``bool`` (uint8), numpy scalars and arrays (their dtype), PIL images (``jpeg`` when the
    image came from a JPEG, else ``png``); anything else is pickled (``pkl``).
    """
    return {name: _encoding_of(value) for name, value in sample.items()}


def _encoding_of(value: Any) -> str:
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, bool):
        return "uint8"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, np.generic) and value.dtype.name in DTYPE_CODES:
        return value.dtype.name
    if isinstance(value, np.ndarray) and value.dtype.name in DTYPE_CODES and value.ndim:
        return f"ndarray:{value.dtype.name}"
    if isinstance(value, Image.Image):
        return "jpeg" if value.format == "JPEG" else "png"
    return "pkl"

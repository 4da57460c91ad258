"""Arrow columns as the per-sample path hands their values out: numbers and strings as
Python values, lists as numpy arrays, binary as bytes, image bytes as PIL images."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from streamx.exceptions import CorruptShardError
from streamx.format.parquet.arrow_numpy import numpy_values

__all__ = ["as_array", "images", "numeric_lists", "python_column"]


def python_column(column: Any) -> list[Any]:
    """Numbers and strings as Python values, lists as numpy arrays, binary as bytes."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        array = column.combine_chunks()
        if numeric_lists(array):
            return _numeric_lists(array, pa.types.is_fixed_size_list(kind))
        return [None if v is None else as_array(v) for v in column.to_pylist()]
    return list(column.to_pylist())


def as_array(values: list[Any]) -> Any:
    """A list as numpy makes it; a ragged one (lists of different lengths inside) as an
    object array of its items, each inner list an array in turn."""
    try:
        return np.asarray(values)
    except ValueError:
        out = np.empty(len(values), dtype=object)
        out[:] = [as_array(v) if isinstance(v, list) else v for v in values]
        return out


def numeric_lists(array: Any) -> bool:
    """Whether a list array's rows decode as numpy views (numbers, no null anywhere)."""
    import pyarrow as pa

    inner = array.type.value_type
    numeric = pa.types.is_integer(inner) or pa.types.is_floating(inner)
    return bool(numeric and array.null_count == 0 and array.values.null_count == 0)


def _numeric_lists(array: Any, fixed: bool) -> list[Any]:
    """Each row's list as a numpy view into one array of the column's values."""
    if fixed:
        values = numpy_values(array.flatten())
        return list(values.reshape(len(array), array.type.list_size))
    values = numpy_values(array.values)
    offsets = numpy_values(array.offsets).tolist()
    return [values[offsets[i] : offsets[i + 1]] for i in range(len(array))]


def images(values: list[Any], where: str, first: int = 0) -> list[Any]:
    """Encoded image bytes (rows ``first``, ``first + 1``...) as PIL images (decoded lazily by
    PIL, on first pixel access); ``where`` names the row group in errors."""
    from PIL import Image, UnidentifiedImageError

    out: list[Any] = []
    for row, data in enumerate(values, first):
        try:
            out.append(None if data is None else Image.open(io.BytesIO(data)))
        except UnidentifiedImageError as err:
            raise CorruptShardError(f"{where}, row {row}: not an image ({err})") from err
    return out

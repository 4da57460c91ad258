"""One row of a decoded Arrow column as the per-sample path hands it out, with no Python
object made for the other rows.

A random ``dataset[i]`` reads a row or two of each row group it decodes, so converting whole
columns to Python would be wasted work, and memory kept. Here each column gets, once, a
getter over its Arrow buffers: numbers without nulls index a numpy view, strings and binary
without nulls slice their data buffer by their offsets, lists of numbers without nulls are
numpy views as the whole-column conversion makes them. Any other type converts the one row
through :func:`~streamx.format.parquet.python_values.python_column`, so every value is
exactly, type for type, what a whole-column conversion hands out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from streamx.format.parquet.arrow_numpy import numpy_values
from streamx.format.parquet.python_values import as_array, numeric_lists, python_column

__all__ = ["Getter", "row_getter"]

Getter = Callable[[int], Any]

# Python objects the getters keep per row (a list of offsets): counted in the cache's bytes.
_OFFSET_BYTES = 36


def row_getter(column: Any) -> tuple[Getter, int]:
    """A getter of one row's value of ``column`` (an Arrow chunked array), and the bytes it
    keeps beside the column's own buffers."""
    import pyarrow as pa

    # One chunk (a row group read whole) is used as it is: combining would copy it.
    array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    kind = array.type
    if array.null_count == 0:
        if _plain_number(kind):
            return numpy_values(array).item, 0
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return _sliced(array, True)
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            return _sliced(array, False)
    if _is_list(kind):
        # Decided over the whole column, as its conversion does: one null anywhere, and
        # every row's list is made afresh by numpy (whose dtype may differ from Arrow's).
        return _list_views(array) if numeric_lists(array) else (_made_list(array), 0)
    return _one_row(array), 0


def _plain_number(kind: Any) -> bool:
    """Numbers whose numpy ``item`` is the Python value Arrow's own conversion makes."""
    import pyarrow as pa

    if pa.types.is_floating(kind):
        return not pa.types.is_float16(kind)
    return bool(pa.types.is_integer(kind) or pa.types.is_boolean(kind))


def _is_list(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )


def _sliced(array: Any, text: bool) -> tuple[Getter, int]:
    """Rows of a string or binary array, each sliced from its data buffer."""
    import pyarrow as pa

    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    _, offsets_buffer, data_buffer = array.buffers()
    count = len(array)
    offsets = np.frombuffer(
        offsets_buffer, np.int64 if wide else np.int32, count + 1, array.offset * (8 if wide else 4)
    ).tolist()
    data = memoryview(data_buffer) if data_buffer is not None else memoryview(b"")

    def text_row(i: int) -> str:
        return str(data[offsets[i] : offsets[i + 1]], "utf-8")

    def bytes_row(i: int) -> bytes:
        return bytes(data[offsets[i] : offsets[i + 1]])

    return (text_row if text else bytes_row), _OFFSET_BYTES * (count + 1)


def _list_views(array: Any) -> tuple[Getter, int]:
    """Rows of a list-of-numbers array as numpy views into its values."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(array.type):
        rows = numpy_values(array.flatten()).reshape(len(array), array.type.list_size)
        return rows.__getitem__, 0
    values = numpy_values(array.values)
    offsets = numpy_values(array.offsets).tolist()

    def row(i: int) -> Any:
        return values[offsets[i] : offsets[i + 1]]

    return row, _OFFSET_BYTES * len(offsets)


def _made_list(array: Any) -> Getter:
    """Rows of a list array that are not all numbers without nulls, as numpy makes them."""

    def row(i: int) -> Any:
        value = array.slice(i, 1).to_pylist()[0]
        return None if value is None else as_array(value)

    return row


def _one_row(array: Any) -> Getter:
    """Any other type: the row alone through the whole-column conversion."""
    chunked = array if hasattr(array, "chunks") else _chunked(array)

    def row(i: int) -> Any:
        return python_column(chunked.slice(i, 1))[0]

    return row


def _chunked(array: Any) -> Any:
    import pyarrow as pa

    return pa.chunked_array([array], array.type)

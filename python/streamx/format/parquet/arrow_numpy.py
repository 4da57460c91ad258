"""Arrow arrays of plain numbers as numpy arrays, read from their buffers.

pyarrow's ``to_numpy`` imports pandas on its first call wherever pandas is installed: half a
second on the first batch of every process (and every DataLoader worker). An array of
integers, floats or booleans without nulls is one data buffer (a bitmap for booleans), which
numpy reads as it is; anything else still goes through ``to_numpy``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["numpy_values"]


def numpy_values(array: Any) -> np.ndarray[Any, Any]:
    """The values of the Arrow ``array`` as numpy: a read-only view of its buffer for
    integers and floats, unpacked for booleans, ``to_numpy`` for other types. The caller
    has checked that it holds no null."""
    dtype = _dtype(array.type)
    if dtype is None or array.null_count:
        return np.asarray(array.to_numpy(zero_copy_only=False))
    count, data = len(array), array.buffers()[1]
    if count == 0 or data is None:
        return np.empty(0, dtype)
    if dtype == np.bool_:
        bits = np.frombuffer(data, np.uint8, count=(array.offset + count + 7) // 8)
        unpacked = np.unpackbits(bits, bitorder="little")
        return unpacked[array.offset : array.offset + count].astype(np.bool_)
    return np.frombuffer(data, dtype, count=count, offset=array.offset * dtype.itemsize)


def _dtype(kind: Any) -> np.dtype[Any] | None:
    import pyarrow as pa

    if pa.types.is_boolean(kind):
        return np.dtype(np.bool_)
    if pa.types.is_integer(kind):
        sign = "u" if pa.types.is_unsigned_integer(kind) else "i"
        return np.dtype(f"<{sign}{kind.bit_width // 8}")
    if pa.types.is_floating(kind):
        return np.dtype(f"<f{kind.bit_width // 8}")
    return None

"""The ``ndarray[:dtype[:shape]]`` encoding: numpy arrays with optional static dtype and shape.

Stored bytes, in order: a dtype code byte unless the dtype is static; a byte holding
``ndim << 2 | shape_width`` and the shape unless the shape is static; then the C-order values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamx import _core
from streamx.format.encoding_base import Encoding

__all__ = ["DTYPE_CODES", "NDArray"]

#: numpy dtype name -> one-byte code in the stored header (the core's table).
DTYPE_CODES: dict[str, int] = dict(_core.ndarray_dtype_codes())
_CODE_DTYPES = {code: name for name, code in DTYPE_CODES.items()}
_SHAPE_WIDTHS = ("uint8", "uint16", "uint32", "uint64")


class NDArray(Encoding):
    """A numpy array; decodes to a read-only array, as mosaicml-streaming does.

    Args:
        dtype: A static numpy dtype name (not stored per sample), or ``None``.
        shape: A static shape (only with a dtype; not stored per sample), or ``None``.

    Raises:
        ValueError: For an unsupported dtype or a dimension below 1; when encoding, for an
            array whose dtype or shape differs from the static ones, or that is empty.

    Examples:
        >>> import numpy as np
        >>> coder = NDArray.from_str("int16:2,2")
        >>> coder.size
        8
        >>> coder.decode(coder.encode(np.arange(4, dtype=np.int16).reshape(2, 2))).tolist()
        [[0, 1], [2, 3]]
    """

    def __init__(self, dtype: str | None = None, shape: tuple[int, ...] | None = None) -> None:
        if dtype is not None and dtype not in DTYPE_CODES:
            raise ValueError(f"Unsupported dtype: {dtype}.")
        if shape is not None and any(dim < 1 for dim in shape):
            raise ValueError(f"All dimensions must be greater than zero: {shape}.")
        self.dtype = dtype
        self.shape = shape
        if dtype is not None and shape is not None:
            self.size = int(np.prod(shape)) * np.dtype(dtype).itemsize

    @classmethod
    def from_str(cls, text: str) -> NDArray:
        """Parses the part after ``ndarray:``, e.g. ``'int32'`` or ``'uint8:3,4'``."""
        args = text.split(":") if text else []
        if len(args) > 2:
            raise ValueError(f"Invalid ndarray encoding arguments: {text}.")
        dtype = args[0] if args else None
        shape = tuple(int(dim) for dim in args[1].split(",")) if len(args) == 2 else None
        return cls(dtype, shape)

    def encode(self, obj: Any) -> bytes:
        code = DTYPE_CODES.get(obj.dtype.name)
        if code is None:
            raise ValueError(f"Unsupported dtype: {obj.dtype.name}.")
        head = b""
        if self.dtype is None:
            head += bytes([code])
        elif obj.dtype != self.dtype:
            raise ValueError(f"Wrong dtype: expected {self.dtype}, got {obj.dtype.name}.")
        if obj.size == 0:
            raise ValueError("Attempting to encode a numpy array with 0 elements.")
        if self.shape is None:
            head += _encode_shape(obj.shape)
        elif obj.shape != self.shape:
            raise ValueError(f"Wrong shape: expected {self.shape}, got {obj.shape}.")
        data: bytes = obj.tobytes()
        return head + data

    def decode(self, data: bytes) -> Any:
        pos = 0
        dtype = self.dtype
        if dtype is None:
            dtype = _CODE_DTYPES.get(data[0])
            if dtype is None:
                raise ValueError(f"Unknown ndarray dtype code: {data[0]}.")
            pos = 1
        shape: tuple[int, ...]
        if self.shape is None:
            ndim, width = data[pos] >> 2, data[pos] & 3
            shape_dtype = np.dtype(_SHAPE_WIDTHS[width])
            end = pos + 1 + ndim * shape_dtype.itemsize
            shape = tuple(int(d) for d in np.frombuffer(data[pos + 1 : end], shape_dtype))
            pos = end
        else:
            shape = self.shape
        return np.frombuffer(data, dtype, offset=pos).reshape(shape)


def _encode_shape(shape: tuple[int, ...]) -> bytes:
    """Encodes ``ndim << 2 | width`` and the dims in the narrowest uint that holds max(dim)."""
    if not shape:
        raise ValueError(
            "Attempting to encode a scalar with NDArray encoding. Please use a scalar encoding."
        )
    if min(shape) <= 0:
        raise ValueError("All dimensions must be greater than zero.")
    if len(shape) >= 64:
        raise ValueError(f"Array has too many axes: maximum 63, got {len(shape)}.")
    largest = max(shape)
    width = next(i for i, bits in enumerate((8, 16, 32, 64)) if largest < (1 << bits))
    dims = np.array(shape, np.int64).astype(_SHAPE_WIDTHS[width]).tobytes()
    return bytes([(len(shape) << 2) | width]) + dims

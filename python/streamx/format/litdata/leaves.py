"""LitData's serialized leaves decoded: each ``data_format`` name and what it stores.

Formats read: ``str``/``text`` (UTF-8), ``int`` (little-endian int64), ``float``
(float64), ``bool`` (one byte), ``bytes``, ``numpy`` (uint32 dtype code, rank and dims,
then C-order data), ``no_header_numpy:CODE`` (1-D data), ``tensor`` (big-endian uint32
dtype code and rank, dims, then data; a torch tensor), ``no_header_tensor:CODE``, ``pil``
(uint32 width, height and mode length, the mode, raw pixels), ``jpeg`` (the encoded file,
handed out as a PIL image), ``json`` (LitData's compact nesting,
:mod:`~streamx.format.litdata.nested`; read from the chunk's Arrow rows where it has them,
see :mod:`~streamx.format.litdata.chunk`) and, when allowed, ``pickle``. The dtype codes index
the tables below, which follow LitData's order (its ``constants.py``): they are part of the
format.
"""

from __future__ import annotations

import functools
import io
import pickle
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from streamx.format.litdata.nested import decode_nested

__all__ = ["leaf_decoder"]

NUMPY_DTYPES = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "bool",
)  # fmt: skip
TORCH_DTYPES = (
    "float32", "float32", "float64", "float64", "complex64", "complex64", "complex128",
    "complex128", "float16", "float16", "bfloat16", "uint8", "int8", "int16", "int16",
    "int32", "int32", "int64", "int64", "bool", "uint16",
)  # fmt: skip

Decoder = Callable[[bytes], Any]


def _numpy_dtype(code: int) -> np.dtype[Any]:
    if not 0 <= code < len(NUMPY_DTYPES):
        raise ValueError(f"numpy dtype code {code} is not one LitData writes for numbers")
    return np.dtype(NUMPY_DTYPES[code])


def _numpy(data: bytes) -> Any:
    code, rank = struct.unpack_from("<II", data, 0)
    shape = struct.unpack_from(f"<{rank}I", data, 8)
    dtype = _numpy_dtype(code)
    values = np.frombuffer(data, dtype, offset=8 + 4 * rank).copy()
    return values.reshape(shape)


def _torch_dtype(code: int) -> Any:
    import torch

    if not 0 <= code < len(TORCH_DTYPES):
        raise ValueError(f"tensor dtype code {code} is not one LitData writes")
    return getattr(torch, TORCH_DTYPES[code])


def _tensor(data: bytes) -> Any:
    import torch

    code, rank = struct.unpack_from(">II", data, 0)
    shape = struct.unpack_from(f">{rank}I", data, 8)
    body = bytearray(data[8 + 4 * rank :])  # writable: torch shares the buffer
    dtype = _torch_dtype(code)
    if not body:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(body, dtype=dtype).reshape(shape)


def _flat_tensor(code: int, data: bytes) -> Any:
    import torch

    dtype = _torch_dtype(code)
    return torch.frombuffer(bytearray(data), dtype=dtype) if data else torch.empty(0, dtype=dtype)


def _flat_numpy(dtype: np.dtype[Any], data: bytes) -> Any:
    return np.frombuffer(data, dtype).copy()


def _pil(data: bytes) -> Any:
    from PIL import Image

    width, height, length = struct.unpack_from("<III", data, 0)
    mode = data[12 : 12 + length].decode("utf-8")
    return Image.frombytes(mode, (width, height), data[12 + length :])


def _jpeg(data: bytes) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(data))


def _str(data: bytes) -> str:
    return data.decode("utf-8")


def _int(data: bytes) -> int:
    value: int = struct.unpack("<q", data)[0]
    return value


def _float(data: bytes) -> float:
    value: float = struct.unpack("<d", data)[0]
    return value


def _bool(data: bytes) -> bool:
    return data[0] != 0


# Module functions and partials, not closures: a reader goes to spawned workers by pickle.
_FIXED: dict[str, Decoder] = {
    "str": _str,
    "text": _str,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "bytes": bytes,
    "numpy": _numpy,
    "tensor": _tensor,
    "pil": _pil,
    "jpeg": _jpeg,
}


def leaf_decoder(name: str, allow_pickle: bool) -> Decoder:
    """The decoder of the ``data_format`` entry ``name``.

    Raises:
        ValueError: If the format is not read in place, or is ``pickle`` and not allowed.
    """
    if name in _FIXED:
        return _FIXED[name]
    kind, _, code = name.partition(":")
    if kind == "no_header_numpy" and code.isdigit():
        return functools.partial(_flat_numpy, _numpy_dtype(int(code)))
    if kind == "no_header_tensor" and code.isdigit():
        _torch_dtype(int(code))  # refused here, not at the first sample
        return functools.partial(_flat_tensor, int(code))
    if name == "json":  # LitData's compact nesting (rows with a footer are read from it)
        return decode_nested
    if name == "pickle":
        if not allow_pickle:
            raise ValueError(
                "leaves serialized with pickle run code when read: pass allow_pickle=True "
                "if you trust the dataset"
            )
        return pickle.loads
    raise ValueError(f"LitData's {name!r} format is not read in place")

"""Deterministic sample values for every MDS encoding, shared by the tests."""

from __future__ import annotations

from decimal import Decimal
from io import BytesIO
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

SCALARS = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "float32", "float64")


def _image(i: int, mode: str = "RGB", size: tuple[int, int] = (5, 4)) -> Image.Image:
    rng = np.random.default_rng(i)
    channels = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    pixels = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    return Image.fromarray(pixels.squeeze() if channels == 1 else pixels, mode)


def _jpeg_bytes(i: int) -> bytes:
    out = BytesIO()
    _image(i).save(out, format="JPEG")
    return out.getvalue()


def value_for(encoding: str, i: int) -> Any:
    """The i-th test value of a column with this encoding."""
    rng = np.random.default_rng(1000 + i)
    base = encoding.split(":")[0]
    if base == "bytes":
        return bytes(rng.integers(0, 256, i % 7 + 1, dtype=np.uint8))
    if base == "str":
        return f"sample {i} ✓ " + "x" * (i % 5)
    if base == "int":
        return (-1) ** i * (i * 123456789)
    if base in SCALARS:
        info = np.iinfo(base)
        return getattr(np, base)(
            int(rng.integers(info.min, info.max, dtype=np.int64 if info.min < 0 else np.uint64))
        )
    if base in FLOATS:
        return getattr(np, base)(rng.standard_normal())
    if base == "str_int":
        return 10**30 + i
    if base == "str_float":
        return float(rng.standard_normal())
    if base == "str_decimal":
        return Decimal(f"{i}.50")
    if base == "pil":
        return _image(i, ("RGB", "L", "RGBA")[i % 3])
    if base in ("jpeg", "png"):
        return _image(i)
    if base in ("list[pil]", "list[jpeg]", "list[png]"):
        return [_image(i + k) for k in range(i % 3 + 1)]
    if base in ("jpeg_array", "jpegarray"):
        return [_jpeg_bytes(i + k) for k in range(i % 2 + 1)]
    if base == "pkl":
        return {"i": i, "nested": [1, 2.5, "x", (3, 4)]}
    if base == "json":
        return {"i": i, "list": [1, 2, {"k": "v"}], "none": None}
    if base == "ndarray":
        return _array(encoding, i, rng)
    raise AssertionError(f"no test value for {encoding}")


def _array(encoding: str, i: int, rng: np.random.Generator) -> NDArray[Any]:
    parts = encoding.split(":")
    dtype = (
        parts[1] if len(parts) > 1 else ("uint8", "int16", "float32", "float64", "uint64")[i % 5]
    )
    shape = (
        tuple(int(d) for d in parts[2].split(","))
        if len(parts) > 2
        else ((i % 3 + 1, 2), (300,), (2, 3, 4))[i % 3]
    )
    return (rng.standard_normal(shape) * 100).astype(dtype)


ENCODINGS = (
    "bytes", "str", "int", *SCALARS, *FLOATS, "str_int", "str_float", "str_decimal",
    "pil", "jpeg", "png", "list[pil]", "list[jpeg]", "list[png]", "jpeg_array", "pkl", "json",
    "ndarray", "ndarray:int32", "ndarray:float32:3,4", "ndarray:uint16:2",
)  # fmt: skip


def assert_same_value(a: Any, b: Any, where: str = "") -> None:
    """Equality that understands numpy arrays, numpy scalars and PIL images, and checks types."""
    assert type(a) is type(b) or (isinstance(a, Image.Image) and isinstance(b, Image.Image)), (
        f"{where}: {type(a)} != {type(b)}"
    )
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b)
        assert a.flags.writeable == b.flags.writeable, where
    elif isinstance(a, Image.Image):
        assert a.mode == b.mode and a.size == b.size, where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for x, y in zip(a, b):
            assert_same_value(x, y, where)
    elif isinstance(a, np.generic) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"

"""MDS column encodings, in Python: the registry :data:`_encodings`.

The format's encoding names are listed once, by the Rust core
(``_core.mds_encoding_names()``); a test checks this registry holds exactly those as its
built-ins. Rust encodes and decodes the byte-level ones (``_core.native_encoding_names()``:
``bytes``, ``str``, ``int``, ``str_int``, the fixed-width numerics) on the hot path, and
:func:`streamx.format.columns.native_kind` routes a column there only while its name still
maps to the built-in class here. So a user who registers an encoding, under a new name or
over a built-in one, has it used for writing and reading, as with mosaicml-streaming.

Examples:
    >>> import numpy as np
    >>> from streamx.format.encodings import Encoding, _encodings, mds_decode, mds_encode
    >>> class Complex128(Encoding):
    ...     def encode(self, obj):
    ...         return np.complex128(obj).tobytes()
    ...     def decode(self, data):
    ...         return np.frombuffer(data, np.complex128)[0]
    >>> _encodings["complex128"] = Complex128
    >>> complex(mds_decode("complex128", mds_encode("complex128", 1 + 2j)))
    (1+2j)
    >>> del _encodings["complex128"]
"""

from __future__ import annotations

import json
import pickle
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal
from io import BytesIO
from types import MappingProxyType
from typing import Any

import numpy as np

from streamx.format.encoding_base import Encoding
from streamx.format.ndarray import DTYPE_CODES, NDArray

__all__ = [
    "BUILTIN_ENCODINGS",
    "Encoding",
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_builtin_coder",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
]


class Bytes(Encoding):
    """Raw bytes, stored unchanged."""

    def encode(self, obj: bytes) -> bytes:
        self._validate(obj, bytes)
        return obj

    def decode(self, data: bytes) -> bytes:
        return bytes(data)


class Str(Encoding):
    """Text, stored as UTF-8."""

    def encode(self, obj: str) -> bytes:
        self._validate(obj, str)
        return obj.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return bytes(data).decode("utf-8")


class Int(Encoding):
    """A Python int stored as little-endian int64; decodes to ``int``."""

    size = 8

    def encode(self, obj: int) -> bytes:
        self._validate(obj, int)
        return np.int64(obj).tobytes()

    def decode(self, data: bytes) -> int:
        return int(np.frombuffer(data, np.int64)[0])


class Scalar(Encoding):
    """A numpy scalar of one fixed dtype; decodes to that numpy scalar type."""

    def __init__(self, dtype: type[np.generic]) -> None:
        self.dtype = dtype
        self.size = np.dtype(dtype).itemsize

    def encode(self, obj: Any) -> bytes:
        return self.dtype(obj).tobytes()

    def decode(self, data: bytes) -> Any:
        return np.frombuffer(data, self.dtype)[0]


class StrInt(Encoding):
    """An int of any size stored as its decimal digits."""

    def encode(self, obj: int) -> bytes:
        self._validate(obj, int)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes) -> int:
        return int(bytes(data).decode("utf-8"))


class StrFloat(Encoding):
    """A float stored as its shortest round-trip repr."""

    def encode(self, obj: float) -> bytes:
        self._validate(obj, float)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes) -> float:
        return float(bytes(data).decode("utf-8"))


class StrDecimal(Encoding):
    """A ``Decimal`` stored as its string, keeping its precision."""

    def encode(self, obj: Decimal) -> bytes:
        self._validate(obj, Decimal)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes) -> Decimal:
        return Decimal(bytes(data).decode("utf-8"))


class PIL(Encoding):
    """A PIL image as raw pixels: u32 width, u32 height, u32 len(mode), mode, pixels."""

    def encode(self, obj: Any) -> bytes:
        from PIL import Image

        self._validate(obj, Image.Image)
        mode: bytes = obj.mode.encode("utf-8")
        width, height = obj.size
        pixels: bytes = obj.tobytes()
        return struct.pack("<III", width, height, len(mode)) + mode + pixels

    def decode(self, data: bytes) -> Any:
        from PIL import Image

        if len(data) < 12:
            raise ValueError(
                f"pil value of {len(data)} bytes is shorter than its 12-byte header "
                "(width, height, mode length)"
            )
        width, height, mode_len = struct.unpack_from("<III", data)
        if len(data) < 12 + mode_len:
            raise ValueError(
                f"pil value of {len(data)} bytes is shorter than its header's {mode_len}-byte mode"
            )
        mode = bytes(data[12 : 12 + mode_len]).decode("utf-8")
        pixels = bytes(data[12 + mode_len :])
        # PIL allocates the whole image before it reads a pixel: check the header's
        # dimensions against the bytes at hand first, so a lying header cannot exhaust memory.
        bits = 8 * len(Image.new(mode, (1, 1)).tobytes()) if mode != "1" else 1
        needed = (width * bits + 7) // 8 * height
        if len(pixels) < needed:
            raise ValueError(
                f"pil value claims a {width}x{height} {mode} image ({needed} bytes of pixels), "
                f"but holds {len(pixels)} bytes"
            )
        return Image.frombytes(mode, (width, height), pixels)


class JPEG(Encoding):
    """A PIL image as JPEG file bytes; an image opened from a JPEG file keeps its bytes."""

    def encode(self, obj: Any) -> bytes:
        from PIL import Image
        from PIL.JpegImagePlugin import JpegImageFile

        self._validate(obj, Image.Image)
        filename = getattr(obj, "filename", None)
        if isinstance(obj, JpegImageFile) and filename:
            try:
                with open(filename, "rb") as file:
                    return file.read()
            except FileNotFoundError:
                pass  # The source file is gone; re-encode the pixels instead.
        out = BytesIO()
        obj.save(out, format="JPEG")
        return out.getvalue()

    def decode(self, data: bytes) -> Any:
        from PIL import Image

        return Image.open(BytesIO(data))


class PNG(Encoding):
    """A PIL image as PNG file bytes."""

    def encode(self, obj: Any) -> bytes:
        from PIL import Image

        self._validate(obj, Image.Image)
        out = BytesIO()
        obj.save(out, format="PNG")
        return out.getvalue()

    def decode(self, data: bytes) -> Any:
        from PIL import Image

        return Image.open(BytesIO(data))


class Pickle(Encoding):
    """Any picklable object. Unsafe to decode from untrusted data."""

    def encode(self, obj: Any) -> bytes:
        return pickle.dumps(obj)

    def decode(self, data: bytes) -> Any:
        return pickle.loads(data)


class JSON(Encoding):
    """A JSON-serialisable object; numpy arrays are stored as nested lists."""

    def encode(self, obj: Any) -> bytes:
        if isinstance(obj, np.ndarray):
            obj = obj.tolist()
        text = json.dumps(obj)
        try:
            json.loads(text)
        except json.JSONDecodeError as err:
            err.msg = f"Invalid JSON data: {obj}"
            raise
        return text.encode("utf-8")

    def decode(self, data: bytes) -> Any:
        return json.loads(bytes(data).decode("utf-8"))


class ImageList(Encoding):
    """A list of images: u32 reserved 0, u32 count, count x u32 sizes, then the images."""

    def __init__(self, element: Encoding) -> None:
        self.element = element

    def encode(self, obj: list[Any]) -> bytes:
        self._validate(obj, list)
        parts = [self.element.encode(item) for item in obj]
        sizes = struct.pack(f"<{len(parts)}I", *map(len, parts))
        return b"".join([struct.pack("<II", 0, len(parts)), sizes, *parts])

    def decode(self, data: bytes) -> list[Any]:
        count = struct.unpack_from("<I", data, 4)[0]
        sizes = struct.unpack_from(f"<{count}I", data, 8)
        pos, out = 8 + 4 * count, []
        for size in sizes:
            out.append(self.element.decode(data[pos : pos + size]))
            pos += size
        return out


class JPEGArray(Encoding):
    """Already-encoded JPEG bytes: u32 count, count x u32 sizes, then the bytes."""

    def encode(self, obj: Sequence[bytes]) -> bytes:
        sizes = struct.pack(f"<{len(obj)}I", *map(len, obj))
        return b"".join([struct.pack("<I", len(obj)), sizes, *obj])

    def decode(self, data: bytes) -> list[Any]:
        if len(data) < 4:
            raise ValueError("Input data is too short to contain valid jpeg arrays")
        count = struct.unpack_from("<I", data)[0]
        if count <= 0:
            raise ValueError("Negative number of images decoded")
        if len(data) < 4 + 4 * count:
            raise ValueError("Data is too short w.r.t the number of images decoded")
        sizes = struct.unpack_from(f"<{count}I", data, 4)
        pos, out, jpeg = 4 + 4 * count, [], JPEG()
        for size in sizes:
            out.append(jpeg.decode(data[pos : pos + size]))
            pos += size
        return out


def _scalar(dtype: type[np.generic]) -> type[Encoding]:
    """Makes a zero-argument Encoding class for one numpy dtype, so the registry holds classes."""
    return type(
        f"Scalar_{np.dtype(dtype).name}",
        (Scalar,),
        {"__init__": lambda self: Scalar.__init__(self, dtype)},
    )


def _image_list(element: type[Encoding]) -> type[Encoding]:
    return type(
        f"List_{element.__name__}",
        (ImageList,),
        {"__init__": lambda self: ImageList.__init__(self, element())},
    )


#: The fixed-width numeric encodings: numpy dtype name -> scalar type (the core's list).
SCALAR_DTYPES: dict[str, type[np.generic]] = {name: getattr(np, name) for name in DTYPE_CODES}

#: The encodings of JSON/CSV/TSV/XSV columns: name -> the Python type of their values.
SPLIT_ENCODINGS: dict[str, type] = {"str": str, "int": int, "float": float}

#: The encoding registry: name -> class. Users may add custom :class:`Encoding` subclasses.
_encodings: dict[str, type[Encoding]] = {
    "bytes": Bytes,
    "str": Str,
    "int": Int,
    "ndarray": NDArray,
    **{name: _scalar(dtype) for name, dtype in SCALAR_DTYPES.items()},
    "str_int": StrInt,
    "str_float": StrFloat,
    "str_decimal": StrDecimal,
    "pil": PIL,
    "jpeg": JPEG,
    "jpeg_array": JPEGArray,
    "jpegarray": JPEGArray,
    "png": PNG,
    "list[pil]": _image_list(PIL),
    "list[jpeg]": _image_list(JPEG),
    "list[png]": _image_list(PNG),
    "pkl": Pickle,
    "json": JSON,
}

#: The built-in classes, as registered before any user code ran.
BUILTIN_ENCODINGS: Mapping[str, type[Encoding]] = MappingProxyType(dict(_encodings))

_unsafe_encodings = {"pkl"}


def is_builtin_coder(encoding: str) -> bool:
    """Whether ``encoding`` still maps to its built-in class (no user override)."""
    name = encoding.partition(":")[0]
    builtin = BUILTIN_ENCODINGS.get(name)
    return builtin is not None and _encodings.get(name) is builtin


def get_mds_encodings() -> set[str]:
    """Returns the names of every registered encoding."""
    return set(_encodings)


def _get_coder(encoding: str) -> Encoding | None:
    name, _, args = encoding.partition(":")
    cls = _encodings.get(name)
    if cls is None:
        return None
    if args:
        from_str = getattr(cls, "from_str", None)
        return from_str(args) if from_str is not None else None
    return cls()


def get_coder(encoding: str) -> Encoding:
    """Returns an instance of the named encoding, or raises ``ValueError``."""
    coder = _get_coder(encoding)
    if coder is None:
        raise ValueError(f"Unsupported encoding: {encoding}.")
    return coder


def is_mds_encoding(encoding: str) -> bool:
    """Whether ``encoding`` names a registered encoding (with valid arguments)."""
    try:
        return _get_coder(encoding) is not None
    except (ValueError, TypeError):
        return False


def is_mds_encoding_safe(encoding: str) -> bool:
    """Whether decoding ``encoding`` cannot run arbitrary code."""
    return encoding.partition(":")[0] not in _unsafe_encodings


def mds_encode(encoding: str, obj: Any) -> bytes:
    """Encodes one value; a value that already is ``bytes`` is stored unchanged."""
    if isinstance(obj, bytes):
        return obj
    return get_coder(encoding).encode(obj)


def mds_decode(encoding: str, data: bytes) -> Any:
    """Decodes one stored value."""
    return get_coder(encoding).decode(data)


def get_mds_encoded_size(encoding: str) -> int | None:
    """Returns the fixed byte size of an encoding, or ``None`` if it varies."""
    return get_coder(encoding).size

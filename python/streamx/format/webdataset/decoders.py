"""Field values from their bytes, chosen by the field's last extension.

The same choices as Hugging Face ``datasets`` and WebDataset's ``decode()``: text as
``str``, class labels as ``int``, JSON as Python values, ``.npy`` as arrays, images as bytes
or (asked for) PIL images. Pickles and ``torch.save`` files stay bytes: unpickling runs code,
so only the caller who trusts the source should do it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from streamx.exceptions import CorruptShardError

__all__ = ["IMAGE_EXTENSIONS", "LABEL_EXTENSIONS", "NpyHeader", "decode_field", "npy_header"]

IMAGE_EXTENSIONS = frozenset(
    ["jpg", "jpeg", "png", "ppm", "pgm", "pbm", "pnm", "webp", "bmp", "gif", "tif", "tiff"]
)


# Extensions whose fields decode to an ``int``.
LABEL_EXTENSIONS = frozenset(["cls", "cls2", "class", "count", "index", "inx", "id"])


def _text(data: bytes) -> str:
    return data.decode("utf-8")


def _label(data: bytes) -> int:
    return int(data.decode("ascii").strip())


def _json(data: bytes) -> Any:
    return json.loads(data)


# Parsed .npy headers: the arrays of one dataset share a few, and parsing one (a Python
# literal) costs more than reading the array. Bounded: headers come from the input.
# A .npy's shape, whether it is in Fortran order, its dtype and where its data begins.
NpyHeader = tuple[tuple[int, ...], bool, "np.dtype[Any]", int]
_NPY_HEADERS: dict[bytes, NpyHeader] = {}
_KEEP_HEADERS = 256


def npy_header(data: bytes) -> NpyHeader | None:
    """The shape, order, dtype and data offset of a version 1 or 2 ``.npy``, or ``None``
    for another version (read by numpy itself)."""
    if data[:6] != b"\x93NUMPY" or data[6:7] not in (b"\x01", b"\x02"):
        return None
    width = 2 if data[6] == 1 else 4
    end = 8 + width + int.from_bytes(data[8 : 8 + width], "little")
    key = data[:end]
    found = _NPY_HEADERS.get(key)
    if found is None:
        fp = io.BytesIO(data[8:end])
        read = (
            np.lib.format.read_array_header_1_0
            if width == 2
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read(fp)  # type: ignore[no-untyped-call]
        if dtype.hasobject:
            raise ValueError("an object array needs pickle, which is not allowed")
        found = (tuple(shape), bool(fortran), dtype, end)
        if len(_NPY_HEADERS) >= _KEEP_HEADERS:
            _NPY_HEADERS.clear()
        _NPY_HEADERS[key] = found
    return found


def _npy(data: bytes) -> Any:
    header = npy_header(data)
    if header is None:
        return np.load(io.BytesIO(data), allow_pickle=False)
    shape, fortran, dtype, offset = header
    count = int(np.prod(shape, dtype=np.int64))
    if len(data) - offset < count * dtype.itemsize:
        raise ValueError(f"{len(data) - offset} bytes of data for {count} x {dtype}")
    values = np.frombuffer(data, dtype, count=count, offset=offset).copy()  # writable
    return values.reshape(shape, order="F" if fortran else "C")


def _npz(data: bytes) -> dict[str, Any]:
    with np.load(io.BytesIO(data), allow_pickle=False) as found:
        return {name: found[name] for name in found.files}


def _image(data: bytes) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(data))  # decoded lazily, on first pixel access


_BY_EXTENSION: dict[str, Callable[[bytes], Any]] = {
    **dict.fromkeys(("txt", "text", "transcript"), _text),
    **dict.fromkeys(LABEL_EXTENSIONS, _label),
    **dict.fromkeys(("json", "jsn"), _json),
    "npy": _npy,
    "npz": _npz,
}


def decode_field(name: str, data: bytes, images: bool, url: str, key: str) -> Any:
    """The value of field ``name`` of sample ``key`` in tar ``url`` (``seg.jpg`` decodes as
    ``jpg``).

    Raises:
        CorruptShardError: Naming the tar, sample and field, if the bytes are not what the
            extension says.
    """
    extension = name.rsplit(".", 1)[-1]
    decoder = _BY_EXTENSION.get(extension)
    if decoder is None and images and extension in IMAGE_EXTENSIONS:
        decoder = _image
    if decoder is None:
        return data
    try:
        return decoder(data)
    except Exception as err:  # each decoder's own error: UnicodeError, ValueError, PIL's
        # The label is built here only: a sample's fields decode on the hot path.
        shown = f"{url}, sample {key!r}, field {name!r}"
        raise CorruptShardError(f"{shown}: not a valid .{extension} ({err})") from err

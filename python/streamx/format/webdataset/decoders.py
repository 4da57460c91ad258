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

__all__ = ["IMAGE_EXTENSIONS", "decode_field"]

IMAGE_EXTENSIONS = frozenset(
    ["jpg", "jpeg", "png", "ppm", "pgm", "pbm", "pnm", "webp", "bmp", "gif", "tif", "tiff"]
)


def _text(data: bytes) -> str:
    return data.decode("utf-8")


def _label(data: bytes) -> int:
    return int(data.decode("ascii").strip())


def _json(data: bytes) -> Any:
    return json.loads(data)


def _npy(data: bytes) -> Any:
    return np.load(io.BytesIO(data), allow_pickle=False)


def _npz(data: bytes) -> dict[str, Any]:
    with np.load(io.BytesIO(data), allow_pickle=False) as found:
        return {name: found[name] for name in found.files}


def _image(data: bytes) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(data))  # decoded lazily, on first pixel access


_BY_EXTENSION: dict[str, Callable[[bytes], Any]] = {
    **dict.fromkeys(("txt", "text", "transcript"), _text),
    **dict.fromkeys(("cls", "cls2", "class", "count", "index", "inx", "id"), _label),
    **dict.fromkeys(("json", "jsn"), _json),
    "npy": _npy,
    "npz": _npz,
}


def decode_field(name: str, data: bytes, images: bool, shown: str) -> Any:
    """The value of field ``name`` (``seg.jpg`` decodes as ``jpg``).

    Raises:
        CorruptShardError: Naming ``shown``, if the bytes are not what the extension says.
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
        raise CorruptShardError(f"{shown}: not a valid .{extension} ({err})") from err

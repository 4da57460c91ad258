"""mosaicml-streaming's ``streaming.base.format.xsv.encodings``:
:mod:`streamx.format.xsv_encodings`."""

from streamx.format.writers.json_writer import JSON_TYPES as JSON_TYPES
from streamx.format.xsv_encodings import (
    is_xsv_encoding,
    xsv_decode,
    xsv_encode,
)

__all__ = [
    "is_xsv_encoding",
    "xsv_decode",
    "xsv_encode",
]

"""mosaicml-streaming's ``streaming.base.format.json.encodings``:
:mod:`streamx.format.json_encodings`."""

from streamx.format.json_encodings import (
    is_json_encoded,
    is_json_encoding,
)
from streamx.format.writers.json_writer import JSON_TYPES as JSON_TYPES

__all__ = [
    "is_json_encoded",
    "is_json_encoding",
]

"""mosaicml-streaming's ``streaming.base.format.json.encodings``:
:mod:`streamx.format.json_encodings`."""

from streamx.format.json_encodings import (
    JSON_TYPES as JSON_TYPES,
)
from streamx.format.json_encodings import (
    is_json_encoded,
    is_json_encoding,
)

__all__ = [
    "is_json_encoded",
    "is_json_encoding",
]

"""The JSON column types, with mosaicml-streaming's ``streaming.base.format.json.encodings``
API (``streamx.base.format.json.encodings`` re-exports it).

The encoding names and Python types are those streamx's ``JSONWriter`` checks values against.
"""

from __future__ import annotations

from typing import Any

from streamx.format.writers.json_writer import JSON_TYPES

__all__ = ["is_json_encoded", "is_json_encoding"]


def is_json_encoding(encoding: str) -> bool:
    """Whether ``encoding`` is a JSON column type (``str``, ``int`` or ``float``)."""
    return encoding in JSON_TYPES


def is_json_encoded(encoding: str, value: Any) -> bool:
    """Whether ``value`` is of the type ``encoding`` names.

    Returns:
        ``True``; a value of another type raises instead, as in mosaicml-streaming.

    Raises:
        KeyError: Unknown ``encoding``.
        AttributeError: ``value`` is not of that type.
    """
    expected = JSON_TYPES[encoding]
    if not isinstance(value, expected):
        raise AttributeError(
            f"data should be of type {expected}, but instead, found as {type(value)}"
        )
    return True

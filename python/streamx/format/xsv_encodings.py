"""The XSV column types, with mosaicml-streaming's ``streaming.base.format.xsv.encodings``
API (``streamx.base.format.xsv.encodings`` re-exports it).

The encoding names are the ones streamx's ``XSVWriter`` accepts (``str``, ``int``,
``float``); values are written with ``str()`` and read back with the type.
"""

from __future__ import annotations

from typing import Any

from streamx.format.encodings import SPLIT_ENCODINGS as XSV_ENCODINGS
from streamx.format.writers.json_writer import JSON_TYPES

__all__ = ["is_xsv_encoding", "xsv_decode", "xsv_encode"]


def is_xsv_encoding(encoding: str) -> bool:
    """Whether ``encoding`` is an XSV column type."""
    return encoding in XSV_ENCODINGS


def _type(encoding: str) -> type:
    if encoding not in XSV_ENCODINGS:
        raise KeyError(encoding)
    return JSON_TYPES[encoding]  # the same three Python types back both text formats


def xsv_encode(encoding: str, value: Any) -> str:
    """``value`` as XSV text.

    Raises:
        KeyError: Unknown ``encoding``.
        AttributeError: ``value`` is not of the encoding's type (as in mosaicml-streaming).

    Examples:
        >>> xsv_encode("int", 7)
        '7'
    """
    expected = _type(encoding)
    if not isinstance(value, expected):
        raise AttributeError(
            f"data should be of type {expected}, but instead, found as {type(value)}"
        )
    return str(value)


def xsv_decode(encoding: str, value: str) -> Any:
    """The value XSV text ``value`` stands for.

    Raises:
        KeyError: Unknown ``encoding``.
        ValueError: ``value`` does not parse as the encoding's type.
    """
    return _type(encoding)(value)

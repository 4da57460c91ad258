"""The base class of every MDS column encoding."""

from __future__ import annotations

from typing import Any

__all__ = ["Encoding"]


class Encoding:
    """Turns column values into bytes and back: subclass it to add an MDS encoding.

    Register a subclass under a name in ``streamx.format.encodings._encodings`` (as with
    mosaicml-streaming); it must construct without arguments. Set ``size`` to the byte
    count when every value encodes to the same number of bytes.

    Attributes:
        size: The fixed encoded size in bytes, or ``None`` if it varies per value.

    Examples:
        >>> class Bool(Encoding):
        ...     size = 1
        ...     def encode(self, obj):
        ...         return bytes([bool(obj)])
        ...     def decode(self, data):
        ...         return bool(data[0])
        >>> Bool().decode(Bool().encode(True))
        True
    """

    size: int | None = None

    def encode(self, obj: Any) -> bytes:
        """Returns the stored bytes of ``obj``.

        Raises:
            AttributeError: From ``_validate``, if ``obj`` is not of the expected type.
            ValueError: If ``obj`` cannot be stored by this encoding.
        """
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:
        """Returns the value stored in ``data``."""
        raise NotImplementedError

    @staticmethod
    def _validate(data: Any, expected_type: Any) -> None:
        if not isinstance(data, expected_type):
            raise AttributeError(
                f"data should be of type {expected_type}, but instead, found as {type(data)}"
            )

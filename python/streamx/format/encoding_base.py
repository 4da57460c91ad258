"""The base class of every MDS column encoding."""

from __future__ import annotations

from typing import Any

__all__ = ["Encoding"]


class Encoding:
    """Turns column values into bytes and back. ``size`` is set for fixed-size encodings."""

    size: int | None = None

    def encode(self, obj: Any) -> bytes:
        """Returns the stored bytes of ``obj``."""
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

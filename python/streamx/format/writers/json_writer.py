"""``JSONWriter``: one JSON object per line, with sorted keys."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from streamx.format.writers.split import SplitWriter

if TYPE_CHECKING:
    from typing import Unpack

    from streamx.format.writers.base import WriterOptions

__all__ = ["JSON_TYPES", "JSONWriter"]

JSON_TYPES: dict[str, type] = {"str": str, "int": int, "float": float}


class JSONWriter(SplitWriter):
    """Writes a streaming JSON-lines dataset.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        newline: Line terminator.
        **kwargs: ``out``, ``keep_local``, ``compression``, ``hashes``, ``size_limit`` and
            the rest of :class:`~streamx.format.writers.base.Writer`'s arguments.
    """

    format = "json"

    def __init__(
        self,
        *,
        columns: dict[str, str],
        newline: str = "\n",
        **kwargs: Unpack[WriterOptions],
    ) -> None:
        for name, encoding in columns.items():
            if encoding not in JSON_TYPES:
                raise ValueError(f"Column {name}: unsupported JSON encoding {encoding!r}.")
        self.columns = columns
        self.newline = newline
        super().__init__(**kwargs)

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Returns the declared columns as one sorted-key JSON line."""
        obj = {}
        for name, encoding in self.columns.items():
            value = sample[name]
            if not isinstance(value, JSON_TYPES[encoding]):
                raise TypeError(f"Column {name} expects {encoding}, got {type(value).__name__}.")
            obj[name] = value
        return (json.dumps(obj, sort_keys=True) + self.newline).encode("utf-8")

    def get_config(self) -> dict[str, Any]:
        """Returns the settings stored in every meta file and index entry."""
        config = super().get_config()
        config.update({"columns": self.columns, "newline": self.newline})
        return config

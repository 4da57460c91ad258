"""``JSONWriter``: one JSON object per line, with sorted keys."""

from __future__ import annotations

import json
from typing import Any

from streamx.writers.split import SplitWriter

__all__ = ["JSON_TYPES", "JSONWriter"]

JSON_TYPES: dict[str, type] = {"str": str, "int": int, "float": float}


class JSONWriter(SplitWriter):
    """Writes a streaming JSON-lines dataset.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        newline: Line terminator.
        out: A local directory, a remote URL, or a ``(local, remote)`` tuple.
        keep_local: After uploading, keep the local files.
        compression: ``None`` or a codec with optional level.
        hashes: Sorted hash algorithm names.
        size_limit: Shard size limit in bytes or a string such as ``'64mb'``.
        **kwargs: ``progress_bar``, ``max_workers``, ``retry`` and ``exist_ok``.
    """

    format = "json"

    def __init__(
        self,
        *,
        columns: dict[str, str],
        newline: str = "\n",
        out: str | tuple[str, str],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: int | str | None = 1 << 26,
        **kwargs: Any,
    ) -> None:
        for name, encoding in columns.items():
            if encoding not in JSON_TYPES:
                raise ValueError(f"Column {name}: unsupported JSON encoding {encoding!r}.")
        self.columns = columns
        self.newline = newline
        super().__init__(
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            **kwargs,
        )

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

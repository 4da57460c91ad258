"""``JSONWriter``: one JSON object per line, with sorted keys."""

from __future__ import annotations

import json
from typing import Any

from streamx.exceptions import ColumnTypeError
from streamx.format.encodings import SPLIT_ENCODINGS
from streamx.format.writers.base import column_value, document_writer_args
from streamx.format.writers.split import SplitWriter

__all__ = ["JSON_TYPES", "JSONWriter"]

JSON_TYPES = SPLIT_ENCODINGS


@document_writer_args
class JSONWriter(SplitWriter):
    """Writes a streaming JSON-lines dataset: ``shard.NNNNN.json`` + ``.json.meta`` files.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        newline: Line terminator.
        <writer arguments>

    Raises:
        ValueError: For an unsupported column encoding, an invalid compression, hash list,
            size limit, ``out`` tuple or unknown keyword.
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.

    Examples:
        >>> import os, tempfile
        >>> from streamx import JSONWriter
        >>> out = tempfile.mkdtemp()
        >>> with JSONWriter(out=out, columns={"id": "int", "text": "str"}) as writer:
        ...     writer.write({"id": 0, "text": "hello"})
        >>> sorted(os.listdir(out))
        ['index.json', 'shard.00000.json', 'shard.00000.json.meta']
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
        progress_bar: bool = False,
        max_workers: int | None = None,
        retry: int = 2,
        exist_ok: bool = False,
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
            progress_bar=progress_bar,
            max_workers=max_workers,
            retry=retry,
            exist_ok=exist_ok,
            **kwargs,
        )

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Returns the declared columns as one sorted-key JSON line.

        Raises:
            KeyError: If a column is missing.
            ColumnTypeError: If a value is not of its column's type.
        """
        obj = {}
        for name, encoding in self.columns.items():
            value = column_value(sample, name, self.columns)
            if not isinstance(value, JSON_TYPES[encoding]):
                raise ColumnTypeError(
                    f"Column {name!r} has encoding {encoding!r}, which cannot store a value "
                    f"of type {type(value).__name__}."
                )
            obj[name] = value
        return (json.dumps(obj, sort_keys=True) + self.newline).encode("utf-8")

    def get_config(self) -> dict[str, Any]:
        """Returns the settings stored in every meta file and index entry."""
        config = super().get_config()
        config.update({"columns": self.columns, "newline": self.newline})
        return config

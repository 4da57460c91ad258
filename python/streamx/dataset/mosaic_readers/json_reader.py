"""mosaicml-streaming's ``JSONReader`` (``streamx.base.format.json.reader`` re-exports it)."""

from __future__ import annotations

from typing import Any, ClassVar

from streamx.dataset.mosaic_readers.reader import SplitReader, file_info

__all__ = ["JSONReader"]


class JSONReader(SplitReader):
    """Random access to the samples of one JSON-lines shard (see :class:`Reader`).

    Args: the fields of the shard's ``index.json`` entry; the ``raw_*``/``zip_*`` files
    are ``FileInfo`` objects.
    """

    formats: ClassVar[tuple[str, ...]] = ("json",)

    def __init__(
        self,
        dirname: str,
        split: str | None,
        columns: dict[str, str],
        compression: str | None,
        hashes: list[str],
        newline: str,
        raw_data: Any,
        raw_meta: Any,
        samples: int,
        size_limit: int | str | None,
        zip_data: Any | None,
        zip_meta: Any | None,
    ) -> None:
        entry = {
            "format": "json",
            "version": 2,
            "columns": columns,
            "compression": compression,
            "hashes": hashes,
            "newline": newline,
            "raw_data": file_info(raw_data),
            "raw_meta": file_info(raw_meta),
            "samples": samples,
            "size_limit": size_limit,
            "zip_data": file_info(zip_data),
            "zip_meta": file_info(zip_meta),
        }
        self._attach(dirname, split, entry)

"""mosaicml-streaming's ``MDSReader`` (``streamx.base.format.mds.reader`` re-exports it)."""

from __future__ import annotations

from typing import Any

from streamx.dataset.mosaic_readers.reader import JointReader, file_info

__all__ = ["MDSReader"]


class MDSReader(JointReader):
    """Random access to the samples of one MDS shard (see :class:`Reader`).

    Args: the fields of the shard's ``index.json`` entry; ``raw_data`` and ``zip_data``
    are ``FileInfo`` objects.

    Raises:
        ValueError: The fields are inconsistent (as a malformed index entry would be).
    """

    def __init__(
        self,
        dirname: str,
        split: str | None,
        column_encodings: list[str],
        column_names: list[str],
        column_sizes: list[int | None],
        compression: str | None,
        hashes: list[str],
        raw_data: Any,
        samples: int,
        size_limit: int | str | None,
        zip_data: Any | None,
    ) -> None:
        entry = {
            "format": "mds",
            "version": 2,
            "column_encodings": column_encodings,
            "column_names": column_names,
            "column_sizes": column_sizes,
            "compression": compression,
            "hashes": hashes,
            "raw_data": file_info(raw_data),
            "samples": samples,
            "size_limit": size_limit,
            "zip_data": file_info(zip_data),
        }
        self._attach(dirname, split, entry)

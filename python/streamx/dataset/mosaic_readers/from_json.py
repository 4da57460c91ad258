"""The per-shard reader of an ``index.json`` entry, by its ``format``: mosaicml-streaming's
``reader_from_json`` (``streamx.base.format`` re-exports it)."""

from __future__ import annotations

from typing import Any

from streamx.dataset.mosaic_readers.json_reader import JSONReader
from streamx.dataset.mosaic_readers.mds_reader import MDSReader
from streamx.dataset.mosaic_readers.reader import Reader
from streamx.dataset.mosaic_readers.xsv_reader import CSVReader, TSVReader, XSVReader

__all__ = ["reader_from_json"]

_readers: dict[str, type[Reader]] = {
    "csv": CSVReader,
    "json": JSONReader,
    "mds": MDSReader,
    "tsv": TSVReader,
    "xsv": XSVReader,
}


def reader_from_json(dirname: str, split: str | None, obj: dict[str, Any]) -> Reader:
    """The reader of one ``index.json`` shard entry, by its ``format``.

    Args:
        dirname: The dataset's local directory.
        split: The split subdirectory, if any.
        obj: The shard entry.

    Raises:
        ValueError: The entry is not version 2, or is malformed.
        KeyError: Its ``format`` is unknown.

    Examples:
        >>> import json, os
        >>> index = json.load(open(os.path.join(root, "index.json")))  # doctest: +SKIP
        >>> reader_from_json(root, None, index["shards"][0])[0]  # doctest: +SKIP
    """
    if obj.get("version") != 2:
        raise ValueError(f"Unsupported streaming data version: {obj.get('version')}. Expected 2.")
    return _readers[obj["format"]].from_json(dirname, split, obj)

"""mosaicml-streaming's ``streaming.base.format``: writers, per-shard readers, the index name."""

from __future__ import annotations

from typing import Any

from streamx.base.format.base import FileInfo, Reader
from streamx.base.format.index import get_index_basename
from streamx.base.format.json import JSONReader, JSONWriter
from streamx.base.format.mds import MDSReader, MDSWriter
from streamx.base.format.xsv import CSVReader, CSVWriter, TSVReader, TSVWriter, XSVReader, XSVWriter

__all__ = [
    "CSVWriter",
    "FileInfo",
    "JSONWriter",
    "MDSWriter",
    "Reader",
    "TSVWriter",
    "XSVWriter",
    "get_index_basename",
    "reader_from_json",
]

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

"""Reading and validating ``index.json``: the Rust core reads it into columns
(:class:`~streamx.format.lazy_shards.ShardList`), one :class:`ShardInfo` per entry on demand.

The core checks every entry as the Python validator did, with the same messages naming the
file and the shard: counts and sizes are JSON integers >= 0, a shard's sample count fits its
size, file names stay inside the dataset and appear once (nor name the index), MDS column
names are distinct strings. Encodings are checked here, per distinct column layout, against
the registry (which user code may extend). A file that is not JSON at all raises the
``json.JSONDecodeError`` (as :class:`IndexJSONError`) mosaicml-streaming raises there.
"""

from __future__ import annotations

import json
from typing import Any

from streamx import _core
from streamx.exceptions import CorruptIndexError, IndexEncodingError, IndexJSONError
from streamx.format.encodings import is_mds_encoding
from streamx.format.index_entry import FileInfo, ShardInfo
from streamx.format.lazy_shards import IndexPart, ShardList
from streamx.location import INDEX_BASENAME as INDEX_BASENAME

__all__ = [
    "FileInfo",
    "ShardInfo",
    "ShardList",
    "load_index",
    "parse_index",
    "parse_shard_entry",
]


def load_index(path: str) -> dict[str, Any]:
    """Reads ``index.json`` as JSON, with a clear error for empty or corrupt files.

    Raises:
        FileNotFoundError: If the file does not exist.
        IndexJSONError: If it is empty or not JSON (a ``json.JSONDecodeError`` too).
        IndexEncodingError: If it is not UTF-8 text (a ``UnicodeDecodeError`` too).
        CorruptIndexError: If it has no ``shards`` list or an unsupported version, or
            nests too deeply to parse.
    """
    with open(path, "rb") as file:
        raw = file.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise IndexEncodingError(path, err) from err
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise IndexJSONError(
            f"Index file at {path} is empty or corrupted. {err.msg}", err.doc, err.pos
        ) from err
    except RecursionError as err:
        raise CorruptIndexError(
            f"Index file at {path} is empty or corrupted: nested too deeply."
        ) from err
    if not isinstance(obj, dict) or not isinstance(obj.get("shards"), list):
        raise CorruptIndexError(f"Index file at {path} is empty or corrupted: no `shards` list.")
    version = obj.get("version")
    if version != 2:
        raise CorruptIndexError(
            f"Unsupported streaming data version: {version}. Expected version 2. ({path})"
        )
    return obj


def parse_index(dirname: str, split: str | None, path: str) -> ShardList:
    """Loads and validates every shard entry of the index at ``path``.

    Args:
        dirname: The directory the dataset lives in (``local``).
        split: The split under ``dirname``, or None.
        path: The index file.

    Returns:
        The shards, a sequence of :class:`ShardInfo` built on access.

    Raises:
        FileNotFoundError: If the file does not exist.
        IndexJSONError: If it is empty or not JSON.
        CorruptIndexError: If it is not a valid MDS index; the message names the shard entry.

    Examples:
        >>> import tempfile
        >>> from streamx import MDSWriter
        >>> out = tempfile.mkdtemp()
        >>> with MDSWriter(out=out, columns={"x": "int"}) as writer:
        ...     writer.write({"x": 1})
        >>> parse_index(out, None, f"{out}/index.json")[0].samples
        1
    """
    found = _core.ShardIndex.read(path)
    if isinstance(found, str):
        _raise_not_json(path, found)
    assert not isinstance(found, str)
    shards = ShardList([IndexPart(found, dirname, split or "")])
    _check_encodings(shards, path)
    return shards


def _raise_not_json(path: str, reason: str) -> None:
    """Raises the error ``json`` gives for the file (mosaicml-streaming's), or, for a
    document only Python accepts (``NaN``, huge integers), the core parser's."""
    load_index(path)
    raise CorruptIndexError(f"Index file at {path} is empty or corrupted. {reason}")


def _check_encodings(shards: ShardList, path: str) -> None:
    for use in shards.schema_uses():
        for name, encoding in zip(use.column_names, use.column_encodings):
            if not is_mds_encoding(encoding):
                raise CorruptIndexError(
                    f"Column {name} has an unknown encoding {encoding!r} in {path}, "
                    f"shard {use.first_shard}."
                )


def parse_shard_entry(dirname: str, split: str, entry: Any, path: str, number: int) -> ShardInfo:
    """One shard entry given as Python objects (mosaic's ``Reader.from_json``), checked as
    an index with that one entry; errors name ``path`` and shard ``number``."""
    try:
        text = json.dumps({"version": 2, "shards": [entry]})
    except (TypeError, ValueError) as err:
        raise CorruptIndexError(f"Invalid shard entry in {path}, shard {number}: {err!r}") from err
    found = _core.ShardIndex.parse(text.encode(), path)
    if isinstance(found, str):
        raise CorruptIndexError(f"Invalid shard entry in {path}, shard {number}: {found}")
    shards = ShardList([IndexPart(found, dirname, split)])
    _check_encodings(shards, path)
    return shards[0]

"""Reading and validating ``index.json``: one :class:`ShardInfo` per shard entry."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from streamx import _core
from streamx.exceptions import CorruptIndexError, IndexJSONError
from streamx.format.encodings import is_mds_encoding

__all__ = ["FileInfo", "ShardInfo", "load_index", "parse_index"]

INDEX_BASENAME = "index.json"
_FORMATS = ("mds", "json", "csv", "tsv", "xsv")


@dataclass
class FileInfo:
    """One file of a shard, as an index entry records it.

    Attributes:
        basename: The file name, relative to the dataset (split) directory.
        bytes: The file's size.
        hashes: Hash algorithm name to hex digest.
    """

    basename: str
    bytes: int
    hashes: dict[str, str]


@dataclass
class ShardInfo:
    """One shard entry of an index, resolved against the local directory it lives in.

    Built by :func:`parse_index`; the fields are the entry's keys. ``extra`` keeps the keys
    of split formats (``columns``, ``separator``, ``newline``...).

    Examples:
        >>> import tempfile
        >>> from streamx import MDSWriter
        >>> out = tempfile.mkdtemp()
        >>> with MDSWriter(out=out, columns={"x": "int"}) as writer:
        ...     writer.write({"x": 1})
        >>> shard = parse_index(out, None, f"{out}/index.json")[0]
        >>> shard.samples, shard.column_names, shard.raw_data.basename
        (1, ['x'], 'shard.00000.mds')
    """

    dirname: str
    split: str
    format: str
    compression: str | None
    hashes: list[str]
    samples: int
    size_limit: int | None
    raw_data: FileInfo
    zip_data: FileInfo | None
    column_names: list[str] = field(default_factory=list)
    column_encodings: list[str] = field(default_factory=list)
    column_sizes: list[int | None] = field(default_factory=list)
    raw_meta: FileInfo | None = None
    zip_meta: FileInfo | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def file_pairs(self) -> list[tuple[FileInfo, FileInfo | None]]:
        """(raw, zip) pairs of every file of this shard: data, and meta for split shards."""
        pairs = [(self.raw_data, self.zip_data)]
        if self.raw_meta is not None:
            pairs.append((self.raw_meta, self.zip_meta))
        return pairs

    def local_path(self, info: FileInfo) -> str:
        """The path of one of this shard's files under the local directory."""
        return os.path.join(self.dirname, self.split, info.basename)

    @property
    def size(self) -> int:
        """Number of samples in this shard."""
        return self.samples

    def __len__(self) -> int:
        return self.samples

    def get_max_size(self) -> int:
        """Bytes this shard can occupy in a cache: raw plus compressed."""
        return sum(raw.bytes + (z.bytes if z else 0) for raw, z in self.file_pairs)

    def get_raw_size(self) -> int:
        """Bytes of the uncompressed files."""
        return sum(raw.bytes for raw, _ in self.file_pairs)

    def get_zip_size(self) -> int | None:
        """Bytes of the compressed files, or ``None`` without compression."""
        zips = [z for _, z in self.file_pairs if z is not None]
        return sum(z.bytes for z in zips) if zips else None


def load_index(path: str) -> dict[str, Any]:
    """Reads ``index.json`` as JSON, with a clear error for empty or corrupt files.

    Raises:
        FileNotFoundError: If the file does not exist.
        IndexJSONError: If it is empty or not JSON (a ``json.JSONDecodeError`` too).
        CorruptIndexError: If it has no ``shards`` list or an unsupported version.
    """
    with open(path, encoding="utf-8") as file:
        text = file.read()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise IndexJSONError(
            f"Index file at {path} is empty or corrupted. {err.msg}", err.doc, err.pos
        ) from err
    if not isinstance(obj, dict) or not isinstance(obj.get("shards"), list):
        raise CorruptIndexError(f"Index file at {path} is empty or corrupted: no `shards` list.")
    version = obj.get("version")
    if version != 2:
        raise CorruptIndexError(
            f"Unsupported streaming data version: {version}. Expected version 2. ({path})"
        )
    return obj


def parse_index(dirname: str, split: str | None, path: str) -> list[ShardInfo]:
    """Loads and validates every shard entry of the index at ``path``.

    Raises:
        FileNotFoundError: If the file does not exist.
        CorruptIndexError: If it is not a valid MDS index; the message names the shard entry.
    """
    obj = load_index(path)
    shards = [
        _parse_shard(dirname, split or "", entry, path, i) for i, entry in enumerate(obj["shards"])
    ]
    _check_no_aliases(shards, path)
    return shards


def _check_no_aliases(shards: list[ShardInfo], path: str) -> None:
    """Each file of the dataset belongs to one entry, once, and none is the index itself.

    An entry that names another's file (or the index) would make streamx serve one shard
    twice, or delete or overwrite a file as if it were a leftover of another.
    """
    owner: dict[str, int] = {INDEX_BASENAME: -1}
    for number, shard in enumerate(shards):
        for raw, packed in shard.file_pairs:
            for info in (raw, packed):
                if info is None:
                    continue
                name = os.path.normpath(info.basename)
                first = owner.get(name)
                if first is None:
                    owner[name] = number
                    continue
                other = "the index itself" if first < 0 else f"shard {first}"
                raise CorruptIndexError(
                    f"Shard file {info.basename!r} of {path}, shard {number} is also "
                    f"{other}: every file of a dataset must appear once."
                )


def _parse_shard(dirname: str, split: str, entry: Any, path: str, number: int) -> ShardInfo:
    where = f"{path}, shard {number}"
    try:
        return _build_shard(dirname, split, dict(entry), where)
    except CorruptIndexError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise CorruptIndexError(f"Invalid shard entry in {where}: {err!r}") from err


def _build_shard(dirname: str, split: str, entry: dict[str, Any], where: str) -> ShardInfo:
    fmt = entry.pop("format")
    if fmt not in _FORMATS:
        raise CorruptIndexError(f"Unknown shard format {fmt!r} in {where}.")
    version = entry.pop("version")
    if version != 2:
        raise CorruptIndexError(
            f"Unsupported streaming data version: {version}. Expected version 2."
        )
    compression = entry.pop("compression")
    if compression is not None and not _core.is_compression(compression):
        raise CorruptIndexError(f"Unknown compression {compression!r} in {where}.")
    samples = entry.pop("samples")
    if not _is_count(samples):
        raise CorruptIndexError(f"Invalid sample count {samples!r} in {where}.")
    files = {
        key: _file_info(entry.pop(key, None), where)
        for key in ("raw_data", "zip_data", "raw_meta", "zip_meta")
    }
    raw = files["raw_data"]
    if raw is None:
        raise CorruptIndexError(f"Missing raw_data in {where}.")
    # An MDS shard holds a u32 count and n + 1 u32 offsets: a count its size cannot hold is
    # a lie, and would size the epoch's arrays by it.
    if fmt == "mds" and 4 * (samples + 2) > raw.bytes:
        raise CorruptIndexError(
            f"{samples} samples cannot fit in {raw.bytes} bytes of {raw.basename} in {where}."
        )
    shard = ShardInfo(
        dirname=dirname,
        split=split,
        format=fmt,
        compression=compression,
        hashes=list(entry.pop("hashes", [])),
        samples=samples,
        size_limit=entry.pop("size_limit", None),
        raw_data=raw,
        zip_data=files["zip_data"],
        raw_meta=files["raw_meta"],
        zip_meta=files["zip_meta"],
    )
    if fmt == "mds":
        _set_mds_columns(shard, entry, where)
    shard.extra = entry
    return shard


def _set_mds_columns(shard: ShardInfo, entry: dict[str, Any], where: str) -> None:
    names = list(entry.pop("column_names"))
    encodings = list(entry.pop("column_encodings"))
    sizes = list(entry.pop("column_sizes"))
    if not len(names) == len(encodings) == len(sizes):
        raise CorruptIndexError(f"Column names, encodings and sizes differ in length in {where}.")
    if not all(isinstance(name, str) for name in names) or len(set(names)) != len(names):
        raise CorruptIndexError(
            f"Column names {names!r} are not distinct strings in {where}: a sample is a dict, "
            "so a repeated name would lose a column."
        )
    if not all(size is None or _is_count(size) for size in sizes):
        raise CorruptIndexError(f"Invalid column sizes {sizes!r} in {where}.")
    for name, encoding in zip(names, encodings):
        if not isinstance(encoding, str) or not is_mds_encoding(encoding):
            raise CorruptIndexError(
                f"Column {name} has an unknown encoding {encoding!r} in {where}."
            )
    shard.column_names, shard.column_encodings, shard.column_sizes = names, encodings, sizes


def _file_info(obj: Any, where: str) -> FileInfo | None:
    if obj is None:
        return None
    basename = obj["basename"]
    if not isinstance(basename, str) or not _is_contained(basename):
        raise CorruptIndexError(
            f"Shard file name {basename!r} escapes the dataset directory in {where}."
        )
    size = obj["bytes"]
    if not _is_count(size):
        raise CorruptIndexError(f"Invalid size {size!r} of {basename!r} in {where}.")
    hashes = dict(obj.get("hashes") or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()):
        raise CorruptIndexError(f"Invalid hashes {hashes!r} of {basename!r} in {where}.")
    return FileInfo(basename=basename, bytes=size, hashes=hashes)


def _is_count(value: object) -> bool:
    """A JSON integer >= 0 (``bool`` is an ``int`` in Python, but not in an index)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_contained(basename: str) -> bool:
    """A basename may hold sub-directories (from merge_index) but never leave the dataset."""
    if not basename or os.path.isabs(basename) or "\\" in basename:
        return False
    normal = os.path.normpath(basename)
    return not (normal == ".." or normal.startswith("../") or normal == ".")

"""One shard entry of ``index.json``, as Python objects: :class:`ShardInfo`, :class:`FileInfo`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FileInfo", "ShardInfo"]


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
        >>> from streamx.format.index import parse_index
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

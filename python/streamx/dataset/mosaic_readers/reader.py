"""mosaicml-streaming's per-shard ``Reader``: random access to one shard
(``streamx.base.format.base.reader`` re-exports it).

A :class:`Reader` wraps streamx's parsed index entry (:class:`~streamx.format.index.ShardInfo`)
and reads samples through streamx's own sample readers; it adds no decoding of its own.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from streamx import _core
from streamx.dataset.array import Array
from streamx.format.columns import ColumnPlan
from streamx.format.encodings import is_mds_encoding_safe
from streamx.format.index import FileInfo, ShardInfo, parse_shard_entry
from streamx.format.readers import SampleReader, make_reader
from streamx.location import INDEX_BASENAME

__all__ = ["FileInfo", "JointReader", "Reader", "SplitReader", "file_info"]


class Reader(Array):
    """One shard of a dataset: its files, sizes and samples.

    Build one with :meth:`from_json` (or :func:`streamx.base.format.reader_from_json`)
    from an ``index.json`` shard entry, or with a format's constructor. Attributes of the
    entry (``dirname``, ``split``, ``compression``, ``hashes``, ``samples``, ``size_limit``,
    ``raw_data``, ``zip_data``, ``column_names``...) read through.

    Examples:
        >>> reader = reader_from_json(root, None, index["shards"][0])  # doctest: +SKIP
        >>> reader[0]  # doctest: +SKIP
    """

    formats: ClassVar[tuple[str, ...]] = ("mds", "json", "csv", "tsv", "xsv")

    def __init__(
        self,
        dirname: str,
        split: str | None,
        compression: str | None,
        hashes: list[str],
        samples: int,
        size_limit: int | str | None,
    ) -> None:
        raise TypeError(
            f"{type(self).__name__} is abstract: build an MDSReader, JSONReader, XSVReader, "
            "CSVReader or TSVReader, or call reader_from_json."
        )

    def _attach(self, dirname: str, split: str | None, entry: dict[str, Any]) -> None:
        """Parses ``entry`` as ``index.json`` holds it, with streamx's validation."""
        where = os.path.join(dirname, split or "", INDEX_BASENAME)
        shard = parse_shard_entry(dirname, split or "", entry, where, 0)
        if shard.format not in self.formats:
            raise ValueError(f"{type(self).__name__} cannot read {shard.format!r} shards.")
        self.shard: ShardInfo = shard
        self._reader: SampleReader | None = None

    @classmethod
    def from_json(cls, dirname: str, split: str | None, obj: dict[str, Any]) -> Reader:
        """The reader of the index entry ``obj`` for a dataset stored under ``dirname``.

        Raises:
            ValueError: The entry is malformed, of another format, or not version 2.
        """
        reader = cls.__new__(cls)
        reader._attach(dirname, split, obj)
        return reader

    def __getattr__(self, name: str) -> Any:
        if name == "shard":  # not set yet: unpickling or a failed __init__
            raise AttributeError(name)
        # Split formats keep their columns, newline and separator among the extra fields.
        if name in self.shard.extra:
            return self.shard.extra[name]
        return getattr(self.shard, name)

    @property
    def size(self) -> int:
        """Samples in this shard."""
        return self.shard.samples

    def __len__(self) -> int:
        return self.shard.samples

    @property
    def file_pairs(self) -> list[tuple[FileInfo, FileInfo | None]]:
        """(raw, compressed) info of each of the shard's files."""
        return self.shard.file_pairs

    def validate(self, allow_unsafe_types: bool) -> None:
        """Checks the shard may be read.

        Raises:
            ValueError: A column uses an encoding that can run code (pickle) and
                ``allow_unsafe_types`` is false.
        """
        if allow_unsafe_types:
            return
        for name, encoding in zip(self.shard.column_names, self.shard.column_encodings):
            if not is_mds_encoding_safe(encoding):
                raise ValueError(
                    f"Column {name} contains an unsafe type: {encoding}. To proceed anyway, "
                    "set ``allow_unsafe_types=True``."
                )

    def get_raw_size(self) -> int:
        """Bytes of the shard's uncompressed files."""
        return self.shard.get_raw_size()

    def get_zip_size(self) -> int | None:
        """Bytes of its compressed files, or ``None`` without compression."""
        return self.shard.get_zip_size()

    def get_max_size(self) -> int:
        """Bytes it can take in a cache: raw plus compressed."""
        return self.shard.get_max_size()

    def get_persistent_size(self, keep_zip: bool) -> int:
        """Bytes it takes in a cache once decompressed, keeping the zips if ``keep_zip``."""
        if self.shard.compression and keep_zip:
            return self.get_max_size()
        return self.get_raw_size()

    def evict(self) -> int:
        """Deletes the shard's local files; returns the bytes freed."""
        self._reader = None
        freed = 0
        for raw, packed in self.file_pairs:
            for info in (raw, packed):
                path = self.shard.local_path(info) if info is not None else None
                if path is not None and os.path.exists(path):
                    os.remove(path)
                    freed += info.bytes  # type: ignore[union-attr]
        return freed

    def get_item(self, idx: int) -> dict[str, Any]:
        """Sample ``idx`` of this shard, decoded.

        Raises:
            FileNotFoundError: The shard's files are not local.
            IndexError: ``idx`` is out of range.
        """
        if not 0 <= idx < self.shard.samples:
            raise IndexError(f"Sample index {idx} out of range for {self.shard.samples} samples")
        if self._reader is None:
            self._reader = make_reader([self.shard])
        return self._reader.get(idx)

    def get_sample_data(self, idx: int) -> bytes:
        """Sample ``idx`` as stored in the shard, before decoding (MDS shards only).

        Raises:
            NotImplementedError: The shard is not MDS.
            IndexError: ``idx`` is out of range.
        """
        if self.shard.format != "mds":
            raise NotImplementedError(
                f"streamx reads {self.shard.format} samples whole; raw sample bytes are "
                "available for MDS shards only."
            )
        if not 0 <= idx < self.shard.samples:
            raise IndexError(f"Sample index {idx} out of range for {self.shard.samples} samples")
        shard = self.shard
        plan = ColumnPlan.from_index(shard.column_names, shard.column_encodings, shard.column_sizes)
        zip_path = shard.local_path(shard.zip_data) if shard.zip_data else None
        desc = (
            shard.local_path(shard.raw_data),
            zip_path,
            shard.compression,
            shard.samples,
            0,
            shard.raw_data.bytes,
        )
        core = _core.MDSReader([desc], [(plan.names, plan.kinds, plan.sizes)])
        return core.sample_bytes(idx)


class JointReader(Reader):
    """A reader of joint shards (one file per shard): MDS."""

    formats: ClassVar[tuple[str, ...]] = ("mds",)


class SplitReader(Reader):
    """A reader of split shards (data file plus ``.meta`` offsets): JSON, CSV, TSV, XSV."""

    formats: ClassVar[tuple[str, ...]] = ("json", "csv", "tsv", "xsv")


def file_info(info: Any) -> dict[str, Any] | None:
    """A ``FileInfo`` (streamx's, mosaic's or any with the same fields) as index JSON."""
    if info is None:
        return None
    return {"basename": info.basename, "bytes": info.bytes, "hashes": dict(info.hashes)}

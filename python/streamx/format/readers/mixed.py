"""Reads datasets that hold JSON/CSV/TSV/XSV, Parquet, tar or LitData shards (possibly
beside MDS ones), in Python.

Each format's reader modules are imported where a shard of that format is first met: a
dataset of one format does not pay for the others' (the tar readers alone took tens of ms).
"""

from __future__ import annotations

import bisect
import json
import os
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from streamx import _core
from streamx.exceptions import CorruptIndexError, CorruptShardError
from streamx.format.batch_parts import BatchReader
from streamx.format.encodings import SPLIT_ENCODINGS
from streamx.format.index import FileInfo, ShardInfo

if TYPE_CHECKING:
    from streamx.format.litdata.chunk import ChunkReader
    from streamx.format.webdataset.tar_shard import TarShardReader

__all__ = ["MixedSampleReader"]


class MixedSampleReader:
    """Reads datasets with JSON/CSV/TSV/XSV shards: one reader per shard, samples located by
    binary search over the shards' first ids.

    Args:
        shards: The shards of one dataset, in order, of any format.

    Reading raises ``FileNotFoundError`` for a shard not on disk, ``IndexError`` for an id
    outside ``0..num_samples``, ``CorruptShardError`` for a data or meta file that
    contradicts the index and ``CorruptIndexError`` for a split shard without a meta file.

    Examples:
        >>> import tempfile
        >>> from streamx import CSVWriter
        >>> from streamx.format.index import parse_index
        >>> out = tempfile.mkdtemp()
        >>> with CSVWriter(out=out, columns={"x": "int"}) as writer:
        ...     writer.write({"x": 5})
        >>> MixedSampleReader(parse_index(out, None, f"{out}/index.json")).get(0)
        {'x': 5}
    """

    def __init__(self, shards: Sequence[ShardInfo]) -> None:
        self._shards = list(shards)
        self._starts = [0]
        for shard in shards:
            self._starts.append(self._starts[-1] + shard.samples)
        self.num_samples = self._starts[-1]
        self._open: dict[int, Any] = {}
        self.fast_get: Callable[[int], dict[str, Any] | None] | None = None
        # Set when the shards' format reads a batch column by column: every shard a Parquet
        # row group of one set of columns, a LitData chunk of one config of dict samples, or
        # a WebDataset tar.
        self.batch_reader = self._batch_reader()

    def _batch_reader(self) -> BatchReader | None:
        formats = {shard.format for shard in self._shards}
        if formats == {"parquet"}:
            from streamx.format.parquet.batch_rows import ParquetRows

            return ParquetRows.over(self._shards)
        if formats == {"litdata"}:
            from streamx.format.litdata.batch_samples import LitDataBatches

            return LitDataBatches.over(self._shards, self._chunk)
        if formats == {"wds"}:
            from streamx.format.webdataset.batch_members import TarBatches

            return TarBatches.over(self._shards, self._tar)
        return None

    def get(self, index: int) -> dict[str, Any]:
        """Returns sample ``index`` of the whole dataset."""
        if not 0 <= index < self.num_samples:
            raise IndexError(f"Sample index {index} out of range for {self.num_samples} samples")
        shard = bisect.bisect_right(self._starts, index) - 1
        sample: dict[str, Any] = self._reader(shard).get(index - self._starts[shard])
        return sample

    def _reader(self, shard: int) -> Any:
        reader = self._open.get(shard)
        if reader is None:
            reader = self._open[shard] = _open_shard(self._shards[shard])
        return reader

    def _chunk(self, shard: int) -> ChunkReader:
        """The reader of shard ``shard``, a LitData chunk (opened once, until evicted)."""
        from streamx.format.litdata.chunk import ChunkReader

        reader = self._reader(shard)
        assert isinstance(reader, ChunkReader)
        return reader

    def _tar(self, shard: int) -> TarShardReader:
        """The reader of shard ``shard``, a tar (opened once, until evicted)."""
        from streamx.format.webdataset.tar_shard import TarShardReader

        reader = self._reader(shard)
        assert isinstance(reader, TarShardReader)
        return reader

    def get_if_local(self, index: int) -> dict[str, Any] | None:
        """Sample ``index``, or ``None`` while its shard is not on local disk."""
        try:
            return self.get(index)
        except FileNotFoundError:  # the per-format readers open files in Python: said once
            return None

    def get_many(self, indices: list[int], fallback: Any) -> list[Any]:
        """Decodes many samples; ``fallback(i)`` serves samples whose shard is not local."""
        out = []
        for index in indices:
            sample = self.get_if_local(index)
            out.append(fallback(index) if sample is None else sample)
        return out

    def evict(self, shard: int) -> None:
        """Forgets the open reader of ``shard`` (and a row group's decoded table)."""
        self._open.pop(shard, None)
        if self._shards[shard].format == "parquet":
            from streamx.format.parquet.decoded_row_group import forget

            forget(self._shards[shard])


def _open_shard(shard: ShardInfo) -> Any:
    if shard.format == "mds":
        from streamx.format.readers.mds import MDSSampleReader

        return MDSSampleReader([shard])
    if shard.format == "parquet":
        from streamx.format.parquet.decoded_row_group import RowGroupReader

        return RowGroupReader(shard)
    if shard.format == "wds":
        from streamx.format.webdataset.tar_shard import TarShardReader

        return TarShardReader(shard)
    if shard.format == "litdata":
        from streamx.format.litdata.chunk import ChunkReader

        return ChunkReader(shard)
    return _SplitShard(shard)


class _SplitShard:
    """A data file plus its ``.meta`` offsets file, both loaded once."""

    def __init__(self, shard: ShardInfo) -> None:
        if shard.raw_meta is None:
            raise CorruptIndexError(
                f"The index entry of {shard.local_path(shard.raw_data)} lacks its raw_meta file."
            )
        self.shard = shard
        self.data = _read_raw(shard, shard.raw_data, shard.zip_data)
        meta = _read_raw(shard, shard.raw_meta, shard.zip_meta)
        count = struct.unpack_from("<I", meta)[0] if len(meta) >= 4 else 0
        if len(meta) < 4 * (count + 2) or count != shard.samples:
            raise CorruptShardError(
                f"Corrupt meta file {shard.local_path(shard.raw_meta)}: too short or its "
                f"sample count differs from the index's {shard.samples}."
            )
        self.offsets = struct.unpack_from(f"<{count + 1}I", meta, 4)
        if list(self.offsets) != sorted(self.offsets) or self.offsets[-1] > len(self.data):
            raise CorruptShardError(
                f"Corrupt shard {shard.local_path(shard.raw_data)}: offsets out of order or "
                "past the end of the data file."
            )
        self.config = shard.extra

    def get(self, index: int) -> dict[str, Any]:
        line = self.data[self.offsets[index] : self.offsets[index + 1]].decode("utf-8")
        if self.shard.format == "json":
            return dict(json.loads(line))
        newline = self.config.get("newline", "\n")
        separator = self.config.get("separator", "," if self.shard.format == "csv" else "\t")
        values = line[: len(line) - len(newline)].split(separator)
        names, encodings = self.config["column_names"], self.config["column_encodings"]
        return {n: SPLIT_ENCODINGS[e](v) for n, e, v in zip(names, encodings, values)}


def _read_raw(shard: ShardInfo, raw: FileInfo, packed: FileInfo | None) -> bytes:
    """Reads a raw file, decompressing it from its zip first if only the zip is present."""
    path = shard.local_path(raw)
    if not os.path.exists(path) and packed is not None and shard.compression:
        _core.decompress_file(shard.compression, shard.local_path(packed), path, raw.bytes)
    with open(path, "rb") as file:
        return file.read()

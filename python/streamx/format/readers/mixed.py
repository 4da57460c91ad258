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

import numpy as np
from numpy.typing import NDArray

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
        self.fast_get: Callable[[int], dict[str, Any] | None] | None = self._fast_get
        # Set when the shards' format reads a batch column by column: every shard a Parquet
        # row group of one set of columns, a LitData chunk of one config of dict samples, or
        # a WebDataset tar.
        self.batch_reader = self._batch_reader()
        # Per shard, the ids of this process's per-sample pass not read yet (see expect);
        # None outside a pass that declared its ids.
        self._wanted: list[int] | None = None

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

    def _fast_get(self, index: int) -> dict[str, Any] | None:
        """:meth:`get_if_local` in one call for ``0 <= index < num_samples``; ``None`` for
        any other index, whose error the dataset's general path words (``ds[-1]`` too)."""
        if not 0 <= index < self.num_samples:
            return None
        starts = self._starts
        shard = bisect.bisect_right(starts, index) - 1
        try:
            reader = self._open.get(shard)
            if reader is None:
                reader = self._reader(shard)
            sample: dict[str, Any] = reader.get(index - starts[shard])
        except FileNotFoundError:
            return None
        return sample

    def get_many(self, indices: list[int], fallback: Any) -> list[Any]:
        """Decodes many samples; ``fallback(i)`` serves samples whose shard is not local.
        Each is counted as read by the declared pass (see :meth:`expect`); none of them if
        the call fails (the range reads' miss handler calls it again)."""
        out: list[Any] = []
        try:
            for index in indices:
                sample = self.get_if_local(index)
                out.append(fallback(index) if sample is None else sample)
                if self._wanted is not None:
                    self._read_own(index)
        except BaseException:
            if self._wanted is not None:
                for index in indices[: len(out)]:
                    self._wanted[bisect.bisect_right(self._starts, index) - 1] += 1
            raise
        return out

    def expect(self, ids: NDArray[np.int64] | None) -> None:
        """Declares more ids this process's per-sample pass will read through
        :meth:`get_many` (``None``: the pass ended).

        A DataLoader worker reads only its share of each Parquet row group (every other
        batch with two workers), so it never reads one through: each worker would keep
        decoded row groups up to the cache's bound. Counting the ids of its own pass, it
        drops a row group's decoded table once it has read its last id of it, as the
        batched path does (:meth:`~streamx.format.parquet.batch_rows.ParquetRows.expect`).
        """
        if ids is None:
            self._wanted = None
            return
        shards = np.searchsorted(self._starts, ids[ids >= 0], side="right") - 1
        counts = np.bincount(shards, minlength=len(self._shards)).tolist()
        wanted = self._wanted
        self._wanted = counts if wanted is None else [a + b for a, b in zip(wanted, counts)]

    def _read_own(self, index: int) -> None:
        """Counts sample ``index`` read by the declared pass; a Parquet row group's decoded
        table is dropped as the pass reads its last id of it."""
        wanted = self._wanted
        assert wanted is not None
        shard = bisect.bisect_right(self._starts, index) - 1
        wanted[shard] -= 1
        if wanted[shard] == 0 and self._shards[shard].format == "parquet":
            from streamx.format.parquet.decoded_row_group import forget

            forget(self._shards[shard])

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

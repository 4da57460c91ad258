"""One LitData chunk: fetched whole into the cache, its samples decoded from there.

A chunk opens with its sample count (uint32) and the absolute offsets of its samples
(count + 1 uint32s); a sample is the sizes of its leaves (uint32 each) and then the leaves.
A chunk of dict samples may end with the same rows as an Arrow IPC file, then its length
(uint32) and the magic ``LDARW01\0``: LitData then may write no leaves at all (every
offset equal), and its compact ``json`` leaves are read from there.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.exceptions import CorruptShardError, StaleIndexError
from streamx.format.held_file import HeldFile
from streamx.format.index import ShardInfo
from streamx.format.litdata.leaves import leaf_decoder
from streamx.format.litdata.pytree import parse_spec
from streamx.format.remote_files import RemoteFile, check_unchanged
from streamx.storage.download import download_file

__all__ = ["ChunkReader", "check_chunk_unchanged", "fetch_chunk"]

_ARROW_MAGIC = b"LDARW01\0"


def fetch_chunk(shard: ShardInfo, timeout: float, retry: int) -> int:
    """Downloads the chunk to its cache file (atomically, never past its size).

    Raises:
        StaleIndexError: If the chunk was rewritten since its index was read.
    """
    path = shard.local_path(shard.raw_data)
    size = shard.raw_data.bytes
    check_chunk_unchanged(shard.extra, size)  # once per process: a stale chunk is not fetched
    download_file(shard.extra["source"], path, retry=retry, timeout=timeout, expected_size=size)
    return size


def check_chunk_unchanged(extra: dict[str, Any], size: int) -> None:
    """Confirms (once per process) that a chunk is still the version its index was read
    with, before any of its bytes are read.

    Args:
        extra: The chunk's shard entry ``extra`` (its ``source`` URL and ``version``).
        size: The chunk's bytes, as its index gives them.

    Raises:
        StaleIndexError: Naming the chunk, if it was rewritten since (even to the same size).
    """
    version = extra.get("version")
    if not version:
        return
    url = str(extra["source"])
    try:
        check_unchanged(RemoteFile(url, size, str(version)), url)
    except StaleIndexError as err:
        raise StaleIndexError(
            f"{err} (the chunk was rewritten since its LitData index was read: the index "
            "appears stale)"
        ) from None


class ChunkReader:
    """Samples of one cached chunk, rebuilt as the dataset wrote them."""

    def __init__(self, shard: ShardInfo) -> None:
        self.shard = shard
        self._path = shard.local_path(shard.raw_data)
        self._shown = str(shard.extra["source"])
        self._file = HeldFile(self._path, shard.raw_data.bytes, self._shown)
        size = self._file.size
        self._offsets = self._table(size)
        allow = bool(shard.extra.get("allow_pickle"))
        formats = shard.extra["data_format"]
        self._decoders = [leaf_decoder(name, allow) for name in formats]
        self._spec = parse_spec(shard.extra["data_spec"], self._shown)
        body = self._offsets[-1] > self._offsets[0]
        self._rows = self._arrow_rows(size) if not body or "json" in formats else None
        if not body and self._rows is None:
            raise CorruptShardError(f"{self._shown}: the chunk holds neither leaves nor rows")
        # For batches only, mapped at the first (range reads open readers over partial
        # copies, which nothing must map).
        self._mapped: NDArray[np.uint8] | None = None
        self._offset_array: NDArray[np.int64] | None = None

    @property
    def rows(self) -> list[Any] | None:
        """The samples of the chunk's Arrow footer, when they are read from there."""
        return self._rows

    @property
    def decoders(self) -> list[Callable[[bytes], Any]]:
        """Each leaf's decoder, in the order of a sample's leaves."""
        return self._decoders

    def offsets(self) -> NDArray[np.int64]:
        """Where each sample starts, and one past the last sample's end (made once)."""
        if self._offset_array is None:
            self._offset_array = np.asarray(self._offsets, np.int64)
        return self._offset_array

    def mapped(self) -> NDArray[np.uint8]:
        """The chunk's bytes, mapped at the first call (read-only), in each process.

        Raises:
            FileNotFoundError: If the cached copy is gone (evicted): the caller reads the
                batch sample by sample, which fetches it again.
            CorruptShardError: If the copy is not as large as the index says.
        """
        if self._mapped is None:
            with open(self._path, "rb") as file:
                found = os.fstat(file.fileno()).st_size
                if found != self.shard.raw_data.bytes:
                    raise CorruptShardError(
                        f"{self._shown}: its cached copy {self._path} is {found} bytes, the "
                        f"index says {self.shard.raw_data.bytes}"
                    )
                view = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            self._mapped = np.frombuffer(view, np.uint8)
        return self._mapped

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_mapped": None}  # a map is this process's own

    def _arrow_rows(self, size: int) -> list[Any] | None:
        """The rows of the chunk's Arrow footer, or None when it has none."""
        tail = self._file.pread(12, max(size - 12, 0))
        if len(tail) < 12 or tail[4:] != _ARROW_MAGIC:
            return None
        length = struct.unpack_from("<I", tail)[0]
        start = size - 12 - length
        if start < self._offsets[-1]:
            raise CorruptShardError(f"{self._shown}: its Arrow footer runs into its samples")
        import pyarrow as pa

        try:
            table = pa.ipc.open_file(pa.py_buffer(self._file.pread(length, start))).read_all()
        except (pa.ArrowInvalid, OSError) as err:
            raise CorruptShardError(
                f"{self._shown}: its Arrow footer does not read ({err})"
            ) from err
        if table.num_rows != self.shard.samples:
            raise CorruptShardError(
                f"{self._shown}: its Arrow footer holds {table.num_rows} rows, the index "
                f"{self.shard.samples}"
            )
        rows: list[Any] = table.to_pylist()
        return rows

    def _table(self, size: int) -> tuple[int, ...]:
        n = self.shard.samples
        if 4 * (n + 2) > size:  # never read a table larger than the file
            raise CorruptShardError(f"{self._shown}: {n} samples cannot fit in {size} bytes")
        head = self._file.pread(4 * (n + 2), 0)
        if len(head) < 4 * (n + 2) or struct.unpack_from("<I", head)[0] != n:
            raise CorruptShardError(
                f"{self._shown}: the chunk does not open with the {n} samples its index gives"
            )
        offsets: tuple[int, ...] = struct.unpack_from(f"<{n + 1}I", head, 4)
        ordered = all(a <= b for a, b in itertools.pairwise(offsets))
        if offsets[0] < 4 * (n + 2) or offsets[-1] > size or not ordered:
            raise CorruptShardError(f"{self._shown}: the chunk's offset table is out of bounds")
        return offsets

    def get(self, index: int) -> Any:
        if self._rows is not None:
            return self._rows[index]
        begin, end = self._offsets[index], self._offsets[index + 1]
        data = self._file.pread(end - begin, begin)
        count = len(self._decoders)
        if len(data) < 4 * count:
            raise CorruptShardError(
                f"{self.where(index)}: {len(data)} bytes, too few for its leaf sizes"
            )
        sizes = struct.unpack_from(f"<{count}I", data, 0)
        if 4 * count + sum(sizes) != len(data):
            raise CorruptShardError(
                f"{self.where(index)}: its leaf sizes do not add up to its bytes"
            )
        leaves, at = [], 4 * count
        for number, (size, decode) in enumerate(zip(sizes, self._decoders)):
            try:
                leaves.append(decode(data[at : at + size]))
            except Exception as err:  # each format's own error: struct, PIL, numpy, UTF-8
                raise CorruptShardError(
                    f"{self.where(index)}, leaf {number}: does not decode ({err})"
                ) from err
            at += size
        return self._spec.build(iter(leaves))

    def where(self, index: int) -> str:
        """The chunk and sample ``index``, as errors name them."""
        # Built on failure only: ``get`` is the hot path.
        return f"{self._shown}, sample {index}"

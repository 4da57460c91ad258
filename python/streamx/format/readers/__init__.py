"""Sample readers over a list of shards: Rust memory maps for MDS, Python for split formats."""

from __future__ import annotations

from collections.abc import Sequence

from streamx.format.index import ShardInfo, ShardList
from streamx.format.readers.base import SampleReader
from streamx.format.readers.mds import MDSSampleReader
from streamx.format.readers.mixed import MixedSampleReader

__all__ = ["SampleReader", "make_reader"]


def make_reader(shards: Sequence[ShardInfo], *, zero_copy: bool = False) -> SampleReader:
    """Returns the fastest reader that handles every shard in ``shards`` (``zero_copy``:
    views over the memory maps of MDS shards, see :class:`MDSSampleReader`)."""
    if isinstance(shards, ShardList):
        if shards.formats() <= {"mds"}:
            return MDSSampleReader(shards, zero_copy=zero_copy)
    elif all(shard.format == "mds" for shard in shards):
        return MDSSampleReader(shards, zero_copy=zero_copy)
    return MixedSampleReader(shards)

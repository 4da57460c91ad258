"""What a dataset knows once its indexes are read: streams, shards and where samples live."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from streamx.dataset.stream import Stream
from streamx.format.index import ShardInfo, ShardList
from streamx.order.settings import PlanStream
from streamx.order.world import World
from streamx.runtime.overrides import overridden

__all__ = ["DatasetLayout", "shard_columns"]


def _frozen(values: Sequence[int] | NDArray[np.int64]) -> NDArray[np.int64]:
    array = np.array(values, np.int64)
    array.flags.writeable = False
    return array


def shard_columns(shards: Sequence[ShardInfo]) -> dict[str, str]:
    """Column name -> encoding, in index order, the first shard declaring a name winning.

    MDS shards list ``column_names``/``column_encodings``; JSON and CSV/TSV shards keep a
    ``columns`` mapping in their index entry.
    """
    columns: dict[str, str] = {}
    if isinstance(shards, ShardList) and shards.formats() <= {"mds"}:
        # One look per distinct column layout, not per shard.
        for use in shards.schema_uses():
            for name, encoding in zip(use.column_names, use.column_encodings):
                columns.setdefault(name, encoding)
        return columns
    for shard in shards:
        if shard.column_names:
            pairs = list(zip(shard.column_names, shard.column_encodings))
        else:
            pairs = [(str(k), str(v)) for k, v in dict(shard.extra.get("columns") or {}).items()]
        for name, encoding in pairs:
            columns.setdefault(name, encoding)
    return columns


@dataclass(frozen=True)
class DatasetLayout:
    """A dataset's streams and shards and the per-stream and per-shard counts and offsets.

    The arrays are read-only. The streams' ``proportion``/``repeat``/``choose`` are derived
    once, right after loading, by ``apply_weights``; the layout never changes after that.
    """

    streams: tuple[Stream, ...]
    shards: ShardList
    # The streams' local directories (``local/split``), absolute.
    local_dirs: tuple[str, ...]
    stream_per_shard: NDArray[np.int64]
    shard_offset_per_stream: NDArray[np.int64]
    shards_per_stream: NDArray[np.int64]
    samples_per_stream: NDArray[np.int64]
    sample_offset_per_stream: NDArray[np.int64]
    samples_per_shard: NDArray[np.int64]
    sample_offset_per_shard: NDArray[np.int64]

    @classmethod
    def load(
        cls, streams: Sequence[Stream], world: World, allow_unsafe_types: bool
    ) -> DatasetLayout:
        """Reads every stream's index (downloading it first where needed).

        Raises:
            RuntimeError: If a stream has no samples.
            ValueError: If an index is malformed, or has an unsafe column type and
                ``allow_unsafe_types`` is not set.
        """
        found: list[ShardList] = []
        samples: list[int] = []
        for stream in streams:
            shards = stream.get_shards(world, allow_unsafe_types)
            count = int(shards.samples.sum())
            if not count:
                raise RuntimeError(f"Stream contains no samples: {stream.index_path}.")
            found.append(shards)
            samples.append(count)
        shards_per_stream = np.array([len(f) for f in found], np.int64)
        samples_per_stream = np.array(samples, np.int64)
        everything = ShardList.concat(found)
        samples_per_shard = everything.samples
        return cls(
            streams=tuple(streams),
            shards=everything,
            local_dirs=tuple(os.path.abspath(os.path.join(s.local, s.split)) for s in streams),
            stream_per_shard=_frozen(np.repeat(np.arange(len(streams)), shards_per_stream)),
            shard_offset_per_stream=_frozen(shards_per_stream.cumsum() - shards_per_stream),
            shards_per_stream=_frozen(shards_per_stream),
            samples_per_stream=_frozen(samples_per_stream),
            sample_offset_per_stream=_frozen(samples_per_stream.cumsum() - samples_per_stream),
            samples_per_shard=_frozen(samples_per_shard),
            sample_offset_per_shard=_frozen(samples_per_shard.cumsum() - samples_per_shard),
        )

    @cached_property  # read on every ``dataset[i]``: the arrays are frozen, so sum them once
    def num_samples(self) -> int:
        """Unique samples over every stream."""
        return int(self.samples_per_stream.sum())

    @property
    def num_shards(self) -> int:
        """Shards over every stream."""
        return len(self.shards)

    @property
    def num_streams(self) -> int:
        """Streams mixed."""
        return len(self.streams)

    @property
    def columns(self) -> dict[str, str]:
        """Column name -> encoding (see :func:`shard_columns`)."""
        return shard_columns(self.shards)

    @property
    def fetches_own_way(self) -> tuple[bool, ...]:
        """Per stream: whether its class overrides ``Stream._download_file``, so that it may
        not fetch its files from ``remote`` at all (range reads leave such streams alone)."""
        return tuple(bool(overridden(type(s), Stream, ("_download_file",))) for s in self.streams)

    def shard_range(self, stream_id: int) -> range:
        """The ids of stream ``stream_id``'s shards."""
        start = int(self.shard_offset_per_stream[stream_id])
        return range(start, start + int(self.shards_per_stream[stream_id]))

    def shards_of(self, sample_ids: NDArray[np.int64]) -> NDArray[np.int64]:
        """The shard holding each global sample id."""
        ends = self.sample_offset_per_shard + self.samples_per_shard
        return np.searchsorted(ends, sample_ids, side="right").astype(np.int64)

    def plan_streams(self) -> list[PlanStream]:
        """Each stream's shard sizes and weights, as the order planner takes them."""
        out: list[PlanStream] = []
        for stream_id, stream in enumerate(self.streams):
            shard_ids = self.shard_range(stream_id)
            sizes = self.samples_per_shard[shard_ids.start : shard_ids.stop].tolist()
            out.append((sizes, int(stream.choose), float(stream.proportion)))
        return out

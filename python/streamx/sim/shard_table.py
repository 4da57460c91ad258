"""The shard table a simulation runs over: samples, raw and compressed sizes per shard.

It comes from a real ``index.json`` (local or any remote streamx reads, fetched into a
temporary directory) or is synthesised from a sample count and shard sizes, as mosaic's
simulator does when a user has no index yet.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streamx.format.in_place import in_place_kind, in_place_sizes
from streamx.format.index import parse_index
from streamx.format.lazy_shards import ShardList
from streamx.location import INDEX_BASENAME
from streamx.storage.download import download_index

__all__ = ["ShardTable", "load_shards", "synth_shards"]


@dataclass(frozen=True)
class ShardTable:
    """Per-shard sizes of one stream.

    Attributes:
        samples: Samples in each shard.
        raw_bytes: Decompressed size of each shard (what the cache holds).
        zip_bytes: Compressed size, 0 where the shard is stored uncompressed.
    """

    samples: NDArray[np.int64]
    raw_bytes: NDArray[np.int64]
    zip_bytes: NDArray[np.int64]

    @property
    def download_bytes(self) -> NDArray[np.int64]:
        """What a download moves over the network: the compressed file when there is one."""
        return np.where(self.zip_bytes > 0, self.zip_bytes, self.raw_bytes)

    @property
    def num_samples(self) -> int:
        """Samples in the stream."""
        return int(self.samples.sum())

    def shard_of(self) -> Callable[[NDArray[np.int64]], NDArray[np.int64]]:
        """A function from (non-negative) sample ids to their shards.

        Uniform shards (all but the last of one size) divide; others search the ends.
        """
        samples = self.samples
        per = int(samples[0]) if len(samples) else 1
        if len(samples) and (samples[:-1] == per).all() and samples[-1] <= per:
            return lambda ids: ids // per
        ends = np.cumsum(samples)
        return lambda ids: np.searchsorted(ends, ids, side="right")

    @staticmethod
    def concat(tables: Sequence[ShardTable]) -> ShardTable:
        """Several streams' shards in stream order, as one global shard numbering."""
        return ShardTable(
            np.concatenate([t.samples for t in tables]),
            np.concatenate([t.raw_bytes for t in tables]),
            np.concatenate([t.zip_bytes for t in tables]),
        )


def synth_shards(num_samples: int, samples_per_shard: int, shard_bytes: int) -> ShardTable:
    """Uniform shards covering ``num_samples``; the last one holds the remainder.

    Args:
        num_samples: Samples in the dataset.
        samples_per_shard: Samples in each full shard.
        shard_bytes: Bytes of a full shard; the last one is scaled by its sample count.

    Raises:
        ValueError: If a count or size is not positive.

    Examples:
        >>> synth_shards(10, 4, 400).samples.tolist()
        [4, 4, 2]
    """
    for name, value in (
        ("num_samples", num_samples),
        ("samples_per_shard", samples_per_shard),
        ("shard_bytes", shard_bytes),
    ):
        if value <= 0:
            raise ValueError(f"`{name}` must be positive, got {value}")
    full, rest = divmod(num_samples, samples_per_shard)
    samples = np.full(full + (rest > 0), samples_per_shard, np.int64)
    if rest:
        samples[-1] = rest
    raw = samples * shard_bytes // samples_per_shard
    return ShardTable(samples, raw, np.zeros_like(raw))


def load_shards(root: str, split: str | None = None) -> ShardTable:
    """The shard table of the dataset at ``root``: a directory or URL holding ``index.json``,
    or a source read in place (Parquet files, WebDataset tars: see
    :mod:`streamx.format.in_place`), whose row groups or tars are its shards.

    Args:
        root: Local directory or remote URL (``s3://``, ``gs://``, ``file://``, ...).
        split: Sub-directory of the split, if any.

    Raises:
        FileNotFoundError: If there is no index there.
        CorruptIndexError: If the index is not a valid MDS index.
    """
    base = os.path.join(root, split) if split else root
    kind = in_place_kind(base, "auto")
    if kind is not None:  # Parquet row groups or tars, as a dataset would read them
        with tempfile.TemporaryDirectory(prefix="streamx-sim-") as tmp:
            samples, sizes = in_place_sizes(base, kind, tmp)
        return ShardTable(samples, sizes, np.zeros_like(sizes))
    if "://" not in root:
        shards = parse_index(base, None, os.path.join(base, INDEX_BASENAME))
    else:
        with tempfile.TemporaryDirectory(prefix="streamx-sim-") as tmp:
            path = os.path.join(tmp, INDEX_BASENAME)
            download_index(f"{base.rstrip('/')}/{INDEX_BASENAME}", path)
            shards = parse_index(tmp, None, path)
    return _index_table(shards)


def _index_table(shards: ShardList) -> ShardTable:
    """The table of an index's shards, from the columns the core read it into.

    A shard whose files add up to its raw data file alone (no compressed file, no meta
    file, or only empty ones) has the table's sizes there; the others' sizes come from
    their entries (:meth:`ShardInfo.get_raw_size`, :meth:`ShardInfo.get_zip_size`).
    """
    raw = shards.raw_sizes()
    zipped = np.zeros_like(raw)
    # Negative: a size past int64 wrapped, which the entry's Python int then refuses.
    for i in np.flatnonzero((shards.max_sizes() != raw) | (raw < 0)).tolist():
        shard = shards[i]
        raw[i] = shard.get_raw_size()
        zipped[i] = shard.get_zip_size() or 0
    return ShardTable(shards.samples.astype(np.int64, copy=False), raw, zipped)

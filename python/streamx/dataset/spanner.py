"""Which shard holds a global sample id: mosaicml-streaming's ``Spanner``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["Spanner"]


class Spanner:
    """Maps a global sample id to ``(shard, id within the shard)``.

    The ids are cut into spans of ``span_size``; ``spans[k]`` lists the shards that span
    ``k`` touches, as in mosaicml-streaming. The lookup itself is a binary search over the
    shard boundaries, which gives the same answer for every id.

    Args:
        shard_sizes: Number of samples in each shard.
        span_size: Width of the spans the id space is cut into. Defaults to ``1 << 10``.

    Examples:
        >>> spanner = Spanner(np.array([3, 5], np.int64))
        >>> spanner[4]
        (1, 1)
    """

    def __init__(self, shard_sizes: NDArray[np.int64], span_size: int = 1 << 10) -> None:
        if span_size < 1:
            raise ValueError(f"span_size must be at least 1, got {span_size}")
        sizes = np.asarray(shard_sizes, np.int64)
        if (sizes < 0).any():
            raise ValueError("shard_sizes must not be negative")
        self.shard_sizes = sizes
        self.span_size = span_size
        self.num_samples = int(sizes.sum())
        self.shard_bounds = np.concatenate([np.zeros(1, np.int64), sizes.cumsum()])
        self.spans = self._spans()

    def _spans(self) -> list[NDArray[np.int64]]:
        """The shards each span overlaps, lowest to highest."""
        ends = self.shard_bounds[1:]
        starts = np.arange(0, max(self.num_samples, 1), self.span_size, dtype=np.int64)
        last = len(self.shard_sizes) - 1
        low = np.minimum(np.searchsorted(ends, starts, side="right"), last)
        high = np.searchsorted(ends, starts + self.span_size - 1, side="right")
        high = np.minimum(high, last)
        return [np.arange(lo, hi + 1, dtype=np.int64) for lo, hi in zip(low, high)]

    def __getitem__(self, index: int) -> tuple[int, int]:
        """Returns the shard holding sample ``index`` and the sample's id within it.

        Raises:
            IndexError: ``index`` is outside ``[0, num_samples)``.
        """
        if not 0 <= index < self.num_samples:
            raise IndexError(f"Invalid sample index `{index}`: 0 <= {index} < {self.num_samples}")
        shard = int(np.searchsorted(self.shard_bounds, index, side="right")) - 1
        return shard, int(index - self.shard_bounds[shard])

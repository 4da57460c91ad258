"""How well an epoch's order is shuffled, measured on the order training will read.

``entropy`` is mosaic's measure: the Shannon entropy of the gaps between consecutive sample
ids and between consecutive shard ids, combined by their harmonic mean. streamx adds two
plain-language measures: the mean jump between consecutive ids (as a fraction of the
dataset) and the correlation of read position with stored position (1: stored order,
about 0: no trace of it).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

__all__ = ["ShuffleQuality", "consumption_order", "gap_entropy", "shuffle_quality"]


class ShuffleQuality(TypedDict):
    """Shuffle measures of one epoch (the first ``samples`` samples read)."""

    samples: int
    sample_entropy: float
    shard_entropy: float
    entropy: float
    mean_jump: float
    order_correlation: float


def consumption_order(ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """Global read order of a plan (nodes, devices, workers, batches, batch), pads dropped.

    Batches go out worker by worker, and each global batch takes every device's batch.
    """
    flat = ids.transpose(3, 2, 0, 1, 4).reshape(-1)
    return flat[flat >= 0]


def gap_entropy(order: NDArray[np.int64]) -> float:
    """Shannon entropy (bits) of the absolute gaps between consecutive values."""
    if len(order) < 2:
        return 0.0
    counts = np.bincount(np.abs(np.diff(order)))
    probs = counts[counts > 0] / (len(order) - 1)
    return float(-(probs * np.log2(probs)).sum())


def shuffle_quality(
    ids: NDArray[np.int64], shard_ends: NDArray[np.int64], limit: int = 10_000_000
) -> ShuffleQuality:
    """Measures the shuffle of one epoch's plan.

    Args:
        ids: The epoch's plan, as :func:`~streamx.sim.epoch_order` returns it.
        shard_ends: Cumulative samples per shard.
        limit: Measure at most this many samples (the start of the epoch).

    Examples:
        >>> import numpy as np
        >>> ids = np.arange(8).reshape(1, 1, 1, 2, 4)
        >>> shuffle_quality(ids, np.array([4, 8]))["order_correlation"]
        1.0
    """
    order = consumption_order(ids)[:limit]
    shards = np.searchsorted(shard_ends, order, side="right")
    sample_h, shard_h = gap_entropy(order), gap_entropy(shards)
    total = max(int(shard_ends[-1]), 1)
    jump = float(np.abs(np.diff(order)).mean() / total) if len(order) > 1 else 0.0
    corr = 0.0
    if len(order) > 1 and order.std() > 0:
        corr = float(np.corrcoef(np.arange(len(order), dtype=np.float64), order)[0, 1])
    return {
        "samples": len(order),
        "sample_entropy": sample_h,
        "shard_entropy": shard_h,
        "entropy": 2 * sample_h * shard_h / (sample_h + shard_h) if sample_h + shard_h else 0.0,
        "mean_jump": jump,
        "order_correlation": round(corr, 12),
    }

"""The run's first chunks: every worker fetching its own chunk's shards, all at once.

When a run starts nothing is local, so each worker process of a node (``devices x
workers`` of them) finds the shards of its first chunk missing: streamx's loader then
starts the downloads of every shard the chunk reads (not yet the look-ahead), and the worker
yields nothing of the chunk before the last of them is in. A shard another process is
already fetching is not fetched twice: the worker waits for that download. So the node
downloads the union of its processes' first-chunk shards side by side, and a worker's
first batch is ready once the last of its chunk's shards is in.

The downloads share the node's link: each of the ``n`` under way gets ``min(shard_rate,
node_rate / n)`` (one shard's parallel parts cannot pass ``shard_rate``), so the smallest
finishes first and the others speed up. On a host that throttles from the first chunk on
(its range reads gave way), a process starts its chunk's downloads one pace slot apart
(``start_gap``), in shard order: its chunk is ready no sooner than its k-th shard's start,
``k x start_gap``, plus that shard at ``shard_rate``. The link model
(:mod:`~streamx.sim.network`) takes each worker's ready time for the steps of the first
round.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx.sim.schedule import ShardOf

__all__ = ["first_chunk_ready", "shared_finish_times"]


def shared_finish_times(
    sizes: NDArray[np.int64], shard_rate: float, node_rate: float
) -> NDArray[np.float64]:
    """When each of the downloads of ``sizes`` bytes, all started at 0, ends: those under
    way share ``node_rate`` equally, each at most ``shard_rate``."""
    order = np.argsort(sizes, kind="stable")
    done = np.zeros(len(sizes))
    now = got = 0.0  # seconds so far; bytes each download still under way has received
    for k, i in enumerate(order.tolist()):
        active = len(sizes) - k
        rate = min(shard_rate, node_rate / active)
        now += max(float(sizes[i]) - got, 0.0) / rate
        got = max(got, float(sizes[i]))
        done[i] = now
    return done


def first_chunk_ready(
    node_ids: NDArray[np.int64],
    shard_of: ShardOf,
    chunk: int,
    sizes: NDArray[np.int64],
    shard_rate: float,
    node_rate: float,
    start_gap: float = 0.0,
) -> NDArray[np.float64]:
    """Per worker, the seconds until every device's worker of that index has its first
    chunk local (nothing local at the start).

    Args:
        node_ids: The node's planned sample ids, (devices, workers, batches, batch), -1 = pad.
        shard_of: The shards of given (non-negative) sample ids.
        chunk: Samples per chunk of the loader's workers.
        sizes: Download bytes of every shard.
        shard_rate: Bytes per second of one shard's download.
        node_rate: Bytes per second of the node's link, shared by its downloads.
        start_gap: Seconds between a process's download starts (its pace; 0: together).
    """
    devices, workers = node_ids.shape[:2]
    chunks: list[list[int]] = []
    for d in range(devices):
        for w in range(workers):
            ids = node_ids[d, w].ravel()
            ids = ids[ids >= 0][:chunk]
            chunks.append(shard_of(ids).tolist() if len(ids) else [])
    union = sorted(set().union(*chunks))
    ends = dict(zip(union, shared_finish_times(sizes[union], shard_rate, node_rate).tolist()))
    ready = np.array([max((ends[s] for s in shards), default=0.0) for shards in chunks])
    if start_gap > 0:
        paced = [
            max(
                (k * start_gap + sizes[s] / shard_rate for k, s in enumerate(sorted(set(c)))),
                default=0.0,
            )
            for c in chunks
        ]
        ready = np.maximum(ready, np.array(paced))
    per_worker: NDArray[np.float64] = ready.reshape(devices, workers).max(axis=0)
    return per_worker

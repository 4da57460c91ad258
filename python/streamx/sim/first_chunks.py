"""The run's first chunks: every worker fetching its own chunk's shards one by one.

When a run starts nothing is local, so each worker process of a node (``devices x
workers`` of them) finds the first shard of its first chunk missing: streamx's loader then
starts no look-ahead, and the worker decodes the chunk, fetching each missing shard alone in
the order its samples read them (at ``shard_bandwidth``), before it yields any sample. A
shard another process is already fetching is not fetched twice: the worker waits for that
download and goes on. So the workers share the shards their first chunks have in common,
and a worker's first batch is ready once the last of its chunk's shards is in.

This is a small event simulation per node, over the processes' first chunks only (a few
dozen shards each at most); the link model (:mod:`~streamx.sim.network`) takes each
worker's ready time for the steps of the first round.
"""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import NDArray

from streamx.sim.schedule import ShardOf

__all__ = ["first_chunk_ready"]


def first_chunk_ready(
    node_ids: NDArray[np.int64],
    shard_of: ShardOf,
    chunk: int,
    sizes: NDArray[np.int64],
    rate: float,
) -> NDArray[np.float64]:
    """Per worker, the seconds until every device's worker of that index has its first
    chunk local (nothing local at the start), each process fetching at ``rate``.

    Args:
        node_ids: The node's planned sample ids, (devices, workers, batches, batch), -1 = pad.
        shard_of: The shards of given (non-negative) sample ids.
        chunk: Samples per chunk of the loader's workers.
        sizes: Download bytes of every shard.
        rate: Bytes per second one process gets fetching one shard alone.
    """
    devices, workers = node_ids.shape[:2]
    lists: list[list[int]] = []
    for d in range(devices):
        for w in range(workers):
            ids = node_ids[d, w].ravel()
            ids = ids[ids >= 0][:chunk]
            shards = shard_of(ids).tolist() if len(ids) else []
            lists.append(list(dict.fromkeys(shards)))  # first-read order, once each
    done: dict[int, float] = {}  # shard -> when its download ends
    at = [0] * len(lists)
    ready = np.zeros(len(lists))
    # Processes act in time order, so a shard in ``done`` was started no later than now.
    heap = [(0.0, p) for p in range(len(lists))]
    while heap:
        now, p = heapq.heappop(heap)
        if at[p] == len(lists[p]):
            ready[p] = now
            continue
        shard = lists[p][at[p]]
        at[p] += 1
        if shard in done:
            now = max(now, done[shard])  # another process fetches it: wait for it
        else:
            now += float(sizes[shard]) / rate
            done[shard] = now
        heapq.heappush(heap, (now, p))
    per_worker: NDArray[np.float64] = ready.reshape(devices, workers).max(axis=0)
    return per_worker

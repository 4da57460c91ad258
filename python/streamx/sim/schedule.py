"""Which shards each node downloads, in what order, and when each is needed or allowed.

A node serves the batches of its devices. Step ``s`` of an epoch is served by worker
``s % workers`` of every device, which hands over its batch number ``s // workers``. A shard
is *needed* at the first step one of its samples is in a batch, and *released* (allowed to
be prefetched) at the step whose batch brings it within ``predownload`` samples of its
worker's position; the first ``predownload`` samples of every worker are released at once.

The node's downloads form one list ordered by need step (earliest deadline first), so each
step only waits for shards it needs itself. Everything here is vectorised with numpy: the
cost is a few passes over the epoch's sample ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["NodeQueue", "node_queue"]

# Larger than any step number: "never needed".
_NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class NodeQueue:
    """One node's new downloads of one epoch, in download order.

    Attributes:
        shards: Shard ids.
        need: Global step at which each is first needed.
        release: Global step from whose prefetch phase it may be downloaded.
    """

    shards: NDArray[np.int64]
    need: NDArray[np.int64]
    release: NDArray[np.int64]


def _step_rows(node_ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """(devices, workers, batches, batch) ids -> (steps, devices * batch), one row a step."""
    devices, workers, batches, batch = node_ids.shape
    return node_ids.transpose(2, 1, 0, 3).reshape(batches * workers, devices * batch)


def _release_rows(shape: tuple[int, int, int, int], predownload: int) -> NDArray[np.int64]:
    """The release step of every sample slot, laid out as :func:`_step_rows` lays ids."""
    devices, workers, batches, batch = shape
    position = np.arange(batches * batch, dtype=np.int64).reshape(batches, batch)
    worker = np.arange(workers, dtype=np.int64)[None, :, None]
    later = (position[:, None, :] - predownload) // batch * workers + worker
    release = np.where(position[:, None, :] < predownload, 0, later)
    # Same for every device: broadcast, then lay out as (steps, devices * batch).
    full = np.broadcast_to(release[:, :, None, :], (batches, workers, devices, batch))
    return full.reshape(batches * workers, devices * batch)


def node_queue(
    node_ids: NDArray[np.int64],
    shard_of: NDArray[np.int32],
    steps: int,
    first_step: int,
    predownload: int,
    present: NDArray[np.bool_],
    last_use: NDArray[np.int64],
) -> NodeQueue:
    """The downloads one node makes in one epoch.

    Args:
        node_ids: The node's planned sample ids, (devices, workers, batches, batch), -1 = pad.
        shard_of: The shard of every global sample id (a gather beats a binary search).
        steps: Steps the epoch runs (later rows of the plan are never read).
        first_step: Global number of the epoch's first step.
        predownload: Samples each worker keeps downloaded ahead.
        present: Shards the node already holds; updated in place with this epoch's.
        last_use: Last global step that read each shard; updated in place.
    """
    rows = _step_rows(node_ids)[:steps]
    release_rows = _release_rows(node_ids.shape, predownload)[:steps]  # type: ignore[arg-type]
    valid = rows >= 0
    shard = shard_of[rows[valid]]
    step = np.broadcast_to(np.arange(steps, dtype=np.int64)[:, None], rows.shape)[valid]
    num_shards = len(present)
    # With repeated indices the last assignment wins, so writing in reverse keeps the first.
    need = np.full(num_shards, _NEVER, np.int64)
    need[shard[::-1]] = step[::-1]
    last_use[shard] = step + first_step
    release = np.full(num_shards, _NEVER, np.int64)
    np.minimum.at(release, shard, release_rows[valid])
    new = np.flatnonzero((need != _NEVER) & ~present)
    order = new[np.lexsort((release[new], need[new]))]
    present[order] = True
    return NodeQueue(
        order,
        need[order] + first_step,
        np.minimum(release[order], need[order]) + first_step,
    )

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

__all__ = ["NO_CHECK", "Checks", "NodeQueue", "node_queue", "release_rows", "step_rows"]

# Larger than any step number: "never needed".
_NEVER = np.iinfo(np.int64).max
# Larger than any list index: no chunk starts in this step.
NO_CHECK = np.iinfo(np.int64).max


@dataclass(frozen=True)
class NodeQueue:
    """One node's new downloads of one epoch, in download order.

    Attributes:
        shards: Shard ids.
        need: Global step at which each is first needed.
        release: Global step from whose prefetch phase it may be downloaded.
        checks: Per step, where a worker starts a chunk (see :class:`Checks`); empty
            unless asked for.
    """

    shards: NDArray[np.int64]
    need: NDArray[np.int64]
    release: NDArray[np.int64]
    checks: Checks


@dataclass(frozen=True)
class Checks:
    """Where workers of a node start a chunk, as streamx's loader does every ``chunk``
    samples: it then fetches the look-ahead on every connection if the chunk's first shard
    is local, or that shard alone if not.

    Attributes:
        first: Per step, the list index of the download bringing a chunk's first shard
            (the earliest over the chunks starting in the step), -1 when the node holds it
            already, :data:`NO_CHECK` when no chunk starts in the step.
        horizon: Per step, the step that reads the last sample of those chunks.
        before: Per step, how many of the epoch's downloads are made before its earliest
            chunk start (-1 when none starts).
    """

    first: NDArray[np.int64]
    horizon: NDArray[np.int64]
    before: NDArray[np.int64]

    @staticmethod
    def none() -> Checks:
        """No checks (mosaic's model)."""
        empty = np.zeros(0, np.int64)
        return Checks(empty, empty, empty)


def step_rows(node_ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """(devices, workers, batches, batch) ids -> (steps, devices * batch), one row a step."""
    devices, workers, batches, batch = node_ids.shape
    return node_ids.transpose(2, 1, 0, 3).reshape(batches * workers, devices * batch)


def release_rows(shape: tuple[int, int, int, int], predownload: int) -> NDArray[np.int64]:
    """The release step of every sample slot, laid out as :func:`step_rows` lays ids."""
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
    chunk: int | None = None,
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
        chunk: Samples per chunk of the loader's workers, to find where chunks start
            (:class:`Checks`); ``None`` skips that.
    """
    rows = step_rows(node_ids)[:steps]
    released = release_rows(node_ids.shape, predownload)[:steps]  # type: ignore[arg-type]
    valid = rows >= 0
    shard = shard_of[rows[valid]]
    step = np.broadcast_to(np.arange(steps, dtype=np.int64)[:, None], rows.shape)[valid]
    num_shards = len(present)
    # With repeated indices the last assignment wins, so writing in reverse keeps the first.
    need = np.full(num_shards, _NEVER, np.int64)
    need[shard[::-1]] = step[::-1]
    last_use[shard] = step + first_step
    release = np.full(num_shards, _NEVER, np.int64)
    np.minimum.at(release, shard, released[valid])
    new = np.flatnonzero((need != _NEVER) & ~present)
    slot = np.zeros(num_shards, np.int64)
    if chunk is None:
        order = new[np.lexsort((release[new], need[new]))]
    else:
        # Where in its first batch each shard is first read: the loader fetches a batch's
        # shards in sample order, and its chunks start at given samples.
        batch = node_ids.shape[3]
        column = np.broadcast_to(np.arange(rows.shape[1]) % batch, rows.shape)[valid]
        slot[shard[::-1]] = column[::-1]
        order = new[np.lexsort((slot[new], release[new], need[new]))]
    present[order] = True
    return NodeQueue(
        order,
        need[order] + first_step,
        np.minimum(release[order], need[order]) + first_step,
        Checks.none()
        if chunk is None
        else _checks(
            node_ids,
            shard_of,
            order,
            need[order] * node_ids.shape[3] + slot[order],
            steps,
            chunk,
            num_shards,
        ),
    )


def _checks(
    node_ids: NDArray[np.int64],
    shard_of: NDArray[np.int32],
    order: NDArray[np.int64],
    key: NDArray[np.int64],
    steps: int,
    chunk: int,
    num_shards: int,
) -> Checks:
    """Where the node's workers start chunks in the epoch's first ``steps`` steps.

    ``key`` is ``need * batch + slot`` of each download in list order.
    """
    _, workers, batches, batch = node_ids.shape
    starts = np.arange(0, batches * batch, chunk, dtype=np.int64)
    samples = node_ids[:, :, starts // batch, starts % batch]  # (devices, workers, chunks)
    worker = np.arange(workers, dtype=np.int64)[None, :, None]
    step = np.broadcast_to(starts // batch * workers + worker, samples.shape)
    horizon = np.broadcast_to((starts + chunk - 1) // batch * workers + worker, samples.shape)
    keep = (samples >= 0) & (step < steps)
    where = np.full(num_shards, -1, np.int64)
    where[order] = np.arange(len(order))
    first = np.full(steps, NO_CHECK, np.int64)
    np.minimum.at(first, step[keep], where[shard_of[samples[keep]]])
    last = np.full(steps, -1, np.int64)
    np.maximum.at(last, step[keep], np.minimum(horizon[keep], steps - 1))
    # Downloads the loader makes before the step's earliest chunk start: every shard
    # read before that sample.
    at = np.full(steps, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(at, step[keep], np.broadcast_to(step * batch + starts % batch, step.shape)[keep])
    before = np.searchsorted(np.sort(key), at)
    return Checks(first, last, np.where(at == np.iinfo(np.int64).max, -1, before))

"""Which shards each node downloads, in what order, and when each is needed or allowed.

A node serves the batches of its devices. Step ``s`` of an epoch is served by worker
``s % workers`` of every device, which hands over its batch number ``s // workers``. A shard
is *needed* at the first step one of its samples is in a batch, and *released* (allowed to
be prefetched) at the step whose batch brings it within ``predownload`` samples of its
worker's position; the first ``predownload`` samples of every worker are released at once.

The node's downloads form one list ordered by need step (earliest deadline first), so each
step only waits for shards it needs itself.

When the loader's chunks are modelled (``chunk``, with a calibrated slow start), a shard is
needed at the step that reads the first sample of the *chunk* it is read in: streamx's
workers decode a chunk of ids in one call and yield none of its samples before every shard
of the chunk is local, so the first batch waits for the whole first chunk (with 40 KB
samples a chunk is 26 samples, so a batch of 16 waits for 26 samples' shards).

Everything here is vectorised with numpy: the cost is a few passes over the epoch's sample
ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

# The shards of an array of sample ids.
ShardOf = Callable[[NDArray[np.int64]], NDArray[np.int64]]

__all__ = [
    "NO_CHECK",
    "Checks",
    "NodeQueue",
    "ShardOf",
    "chunk_rows",
    "node_queue",
    "release_rows",
    "step_rows",
]

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


def chunk_rows(shape: tuple[int, int, int, int], chunk: int) -> NDArray[np.int64]:
    """Per sample slot, laid out as :func:`step_rows` lays ids: ``need * (chunk + batch) +
    offset``, where ``need`` is the step reading the first sample of the slot's chunk (its
    worker's chunks start every ``chunk`` samples) and ``offset`` the slot's position counted
    from the first sample of that step's batch (so ordering by it is ordering by the step,
    then by where in the worker's sequence the sample lies)."""
    devices, workers, batches, batch = shape
    position = np.arange(batches * batch, dtype=np.int64)
    first = position // chunk * chunk // batch  # the batch holding the chunk's first sample
    offset = position - first * batch
    worker = np.arange(workers, dtype=np.int64)[None, :]
    need = first.reshape(batches, batch)[:, None, :] * workers + worker[:, :, None]
    key = need * (chunk + batch) + offset.reshape(batches, 1, batch)
    full = np.broadcast_to(key[:, :, None, :], (batches, workers, devices, batch))
    return full.reshape(batches * workers, devices * batch)


def _first_row(shard: NDArray[np.int64], width: int, num_shards: int) -> NDArray[np.int64]:
    """Per shard, the first row (of ``width`` slots) of ``shard`` holding it; ``_NEVER`` if none."""
    first = np.full(num_shards + 1, _NEVER, np.int64)
    # With repeated indices the last assignment wins, so writing in reverse keeps the first.
    first[shard[::-1]] = np.arange(len(shard) - 1, -1, -1, dtype=np.int64) // width
    return first[:num_shards]


def _release(
    shard: NDArray[np.int64], need: NDArray[np.int64], predownload: int, workers: int
) -> NDArray[np.int64]:
    """Per shard, the earliest step from which the node may prefetch it.

    Slot ``j`` of step ``s`` is released at ``s - q * workers``, one round of workers
    earlier for ``j < m`` (``q, m = divmod(predownload, batch)``), and at 0 within a
    worker's first ``predownload`` samples: so the earliest release is that of the first
    step reading the shard in a slot ``j >= m`` or ``j < m``, whichever is less.
    """
    _, devices, batch = shard.shape
    q, m = divmod(predownload, batch)
    release = need - q * workers
    if m:
        head = np.ascontiguousarray(shard[:, :, :m]).ravel()
        early = _first_row(head, devices * m, len(need))
        tail = np.ascontiguousarray(shard[:, :, m:]).ravel()
        late = _first_row(tail, devices * (batch - m), len(need))
        release = np.minimum(
            early - (q + 1) * workers, np.where(late == _NEVER, late, late - q * workers)
        )
    clipped: NDArray[np.int64] = np.clip(release, 0, need)
    return clipped


def node_queue(
    node_ids: NDArray[np.int64],
    shard_of: ShardOf,
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
        shard_of: The shards of given (non-negative) sample ids.
        steps: Steps the epoch runs (later rows of the plan are never read).
        first_step: Global number of the epoch's first step.
        predownload: Samples each worker keeps downloaded ahead.
        present: Shards the node already holds; updated in place with this epoch's.
        last_use: Last global step that read each shard; updated in place.
        chunk: Samples per chunk of the loader's workers, to find where chunks start
            (:class:`Checks`); ``None`` skips that.
    """
    devices, workers, _, batch = node_ids.shape
    # A run cut short (``max_batches``) still looks ahead past its last step, as mosaic's
    # does: the rows whose predownload window opens by then are planned too.
    ahead = (predownload // batch + 1) * workers
    rows = step_rows(node_ids)[: steps + ahead]
    num_shards = len(present)
    # Padding becomes shard ``num_shards``, a sentinel dropped below.
    shard = np.where(rows >= 0, shard_of(np.maximum(rows, 0)), num_shards).ravel()
    width = rows.shape[1]
    need = _first_row(shard, width, num_shards)
    slot = np.zeros(num_shards, np.int64)
    span = batch if chunk is None else chunk + batch
    if chunk is not None:
        # A chunk is read whole before any of its samples is yielded (see the module note).
        keys = chunk_rows(node_ids.shape, chunk)[: len(rows)].ravel()  # type: ignore[arg-type]
        first_key = np.full(num_shards + 1, _NEVER, np.int64)
        np.minimum.at(first_key, shard, keys)
        first_key = first_key[:num_shards]
        seen_key = first_key != _NEVER
        need = np.where(seen_key, first_key // span, _NEVER)
        slot = np.where(seen_key, first_key % span, 0)
    read = shard[: steps * width]
    last = np.full(num_shards + 1, -1, np.int64)
    last[read] = np.arange(len(read), dtype=np.int64) // width
    seen = last[:num_shards] >= 0
    last_use[seen] = last[:num_shards][seen] + first_step
    release = _release(shard.reshape(len(rows), devices, batch), need, predownload, workers)
    wanted = (need < steps) | ((need != _NEVER) & (release < steps))
    new = np.flatnonzero(wanted & ~present)
    # Within a need step, the loader fetches a chunk's shards in sample order (``slot``).
    order = new[np.lexsort((slot[new], release[new], need[new]))]
    present[order] = True
    return NodeQueue(
        order,
        need[order] + first_step,
        release[order] + first_step,
        Checks.none()
        if chunk is None
        else _checks(
            node_ids,
            shard_of,
            order,
            need[order] * span + slot[order],
            steps,
            chunk,
            num_shards,
            span,
        ),
    )


def _checks(
    node_ids: NDArray[np.int64],
    shard_of: ShardOf,
    order: NDArray[np.int64],
    key: NDArray[np.int64],
    steps: int,
    chunk: int,
    num_shards: int,
    span: int,
) -> Checks:
    """Where the node's workers start chunks in the epoch's first ``steps`` steps.

    ``key`` is ``need * span + slot`` of each download in list order (:func:`chunk_rows`).
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
    np.minimum.at(first, step[keep], where[shard_of(samples[keep])])
    last = np.full(steps, -1, np.int64)
    np.maximum.at(last, step[keep], np.minimum(horizon[keep], steps - 1))
    # Downloads the loader makes before the step's earliest chunk start: every shard
    # read before that sample.
    at = np.full(steps, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(at, step[keep], np.broadcast_to(step * span + starts % batch, step.shape)[keep])
    before = np.searchsorted(np.sort(key), at)
    return Checks(first, last, np.where(at == np.iinfo(np.int64).max, -1, before))

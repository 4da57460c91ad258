"""One worker's pass over its share of an epoch.

The dataset decides how samples are read (a :class:`SampleAccess`) and which epoch starts
(an ``EpochStart``); this module only plans the worker's ids and walks them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from streamx.cache.order_counts import count_cache_dir
from streamx.dataset.layout import DatasetLayout
from streamx.format.readers.batch_columns import Columns
from streamx.order import epoch as epoch_order
from streamx.order.count_ahead import counting_every_node_ahead
from streamx.order.epoch import plan_config, worker_id_pieces, worker_sample_ids
from streamx.order.epoch_state import EpochStart
from streamx.order.settings import PlanConfig
from streamx.order.world import World
from streamx.runtime import metrics

__all__ = [
    "SampleAccess",
    "chunk_samples",
    "chunk_size",
    "count_cache_for",
    "loader_batches",
    "worker_batches",
    "worker_ids",
    "worker_samples",
]

# Samples decoded per call into Rust on the fast path, and the bytes a chunk aims at: a
# chunk of large samples is kept small so its buffers are reused, not faulted in afresh.
_CHUNK = 256
_CHUNK_BYTES = 1 << 20

_NO_IDS: NDArray[np.int64] = np.zeros(0, np.int64)

# Samples are whatever the dataset's reader or ``get_item`` returns (a dict by default).
Sample = Any
_Part = TypeVar("_Part")


@dataclass(frozen=True)
class SampleAccess:
    """How a pass reads samples.

    Attributes:
        get_one: ``ds[i]``, used for every id when ``get_many`` is ``None`` (a subclass
            overrides ``__getitem__`` or ``get_item``, which must then apply).
        get_many: Decodes a list of ids in one call into Rust, or ``None``.
        prepare: ``prepare(ids, start, stop)`` declares ``ids[start:stop]`` (and what
            follows) to the shard cache and returns where the chunk should end; called with
            ``start == len(ids)`` it releases everything.
        chunk: Samples per ``get_many`` call.
        get_columns: A batch of ids as one array per column, equal to what stacking the
            decoded samples gives, or the list of its samples' values (``bytes`` and
            ``str``; any column of a Parquet row group that is not numbers), for the loader
            to collate; set when the schema allows
            (:mod:`~streamx.format.readers.batch_columns`,
            :mod:`~streamx.format.parquet.batch_rows`, the other formats' ``BatchReader``).
        idle: The pass reads nothing (a pipeline stage that needs no data): it yields
            nothing and declares nothing to the shard cache, so nothing is fetched.
        expect: ``expect(ids)`` declares ids the worker's batched pass will read, in
            order, before it reads them; ``expect(None)`` when the pass ends. The reader
            then lets go of what the worker will not read again (Parquet: a decoded row
            group once the worker's last id of it is read), or ``None``.
        expect_samples: As ``expect``, for a pass that reads its ids through ``get_many``
            (:func:`worker_samples`), or ``None``.
        settle: Called once a pass has read its last id (not when it is cut short): waits
            for the downloads of its shards still under way, so that nothing of the pass
            writes into the cache once its loop ends; or ``None``.
    """

    get_one: Callable[[int], Sample]
    get_many: Callable[[list[int]], Iterable[Sample]] | None
    prepare: Callable[[NDArray[np.int64], int, int], int]
    chunk: int
    get_columns: Callable[[list[int]], Columns] | None = None
    idle: bool = False
    expect: Callable[[NDArray[np.int64] | None], None] | None = None
    expect_samples: Callable[[NDArray[np.int64] | None], None] | None = None
    settle: Callable[[], None] | None = None


def worker_samples(
    start: EpochStart, layout: DatasetLayout, world: World, access: SampleAccess
) -> Iterator[Sample]:
    """Yields this worker's samples of the epoch ``start`` describes (padding skipped);
    ``world`` is where this worker reads among the ranks that read distinct samples."""
    if access.idle:
        return
    pieces = _worker_pieces(start, layout, world)
    metrics.begin_epoch(start.epoch)
    ids, release = _NO_IDS, _releaser(access)
    expect, declared = access.expect_samples, 0  # ids[:declared] were declared already
    try:
        # One piece of the worker's ids at a time, the next one behind it for the look-ahead.
        for ids, own in _with_next(pieces, 1):
            if expect is not None:  # the look-ahead too: a row group across two pieces
                expect(ids[declared:])
                declared = len(ids) - own  # the next ids begin with ids[own:]
            if access.get_many is None:
                for position, sample_id in enumerate(ids[:own].tolist()):
                    if position % _CHUNK == 0:
                        access.prepare(ids, position, min(position + _CHUNK, own))
                        metrics.add_samples(min(_CHUNK, own - position))
                    yield access.get_one(sample_id)
                continue
            begin = 0
            while begin < own:
                # Under a cache limit, prepare may shorten the chunk.
                stop = access.prepare(ids, begin, min(begin + access.chunk, own))
                yield from access.get_many(ids[begin:stop].tolist())
                metrics.add_samples(stop - begin)
                begin = stop
        _settle(access)
    finally:
        release(ids)
        if expect is not None:
            expect(None)


def worker_batches(
    start: EpochStart,
    layout: DatasetLayout,
    world: World,
    access: SampleAccess,
    read: Callable[[list[int]], _Part],
    *,
    batch_size: int,
    drop_last: bool,
) -> Iterator[list[_Part]]:
    """Yields this worker's samples of the epoch, as :func:`worker_samples` orders them, in
    batches of ``batch_size`` (a short last one unless ``drop_last``), each as what ``read``
    returned for its pieces: one, unless a cache limit made the shard cache cut it short."""
    if access.idle:
        return
    pieces = _worker_pieces(start, layout, world)
    metrics.begin_epoch(start.epoch)
    ids, release = _NO_IDS, _releaser(access)
    expect, declared = access.expect, 0  # ids[:declared] were declared already
    try:
        for ids, own in _with_next(_whole_batches(pieces, batch_size), batch_size):
            if expect is not None:  # the look-ahead too: a row group across two pieces
                expect(ids[declared:])
                declared = len(ids) - own  # the next ids begin with ids[own:]
            for begin in range(0, own, batch_size):
                end = min(begin + batch_size, own)
                if drop_last and end - begin < batch_size:
                    _settle(access)
                    return
                parts = _read_batch(access, read, ids, begin, end)
                metrics.add_samples(end - begin)
                yield parts
        _settle(access)
    finally:
        release(ids)
        if expect is not None:
            expect(None)


def _settle(access: SampleAccess) -> None:
    if access.settle is not None:
        access.settle()


def _releaser(access: SampleAccess) -> Callable[[NDArray[np.int64]], None]:
    """What ends a pass: an empty window, which releases the shards the pass held.

    An iterator left unfinished at interpreter exit is closed only once the modules were
    torn down (their globals are ``None`` then), so the release and the check are bound
    here, at the pass's start; at exit nothing is left to release, and it does nothing.
    """
    prepare, finalizing = access.prepare, sys.is_finalizing

    def release(ids: NDArray[np.int64]) -> None:
        if not finalizing():
            prepare(ids, len(ids), len(ids))

    return release


def _worker_pieces(
    start: EpochStart, layout: DatasetLayout, world: World
) -> Iterator[NDArray[np.int64]]:
    """The ids :func:`worker_ids` returns, in pieces planned as the pass reaches them."""
    config = plan_config(
        layout.plan_streams(), start.settings, start.epoch, start.sample_in_epoch, world
    )
    cache = count_cache_for(config, layout)
    pieces = worker_id_pieces(config, world, count_cache=cache, resume_marks=start.resume_marks)
    return counting_every_node_ahead(pieces, config, world, cache)


# The shuffles whose pieces count a generator's draws in order (all but ``naive``).
_COUNTED = frozenset({"py1e", "py1s", "py2s", "py1br"})


def count_cache_for(config: PlanConfig, layout: DatasetLayout) -> str | None:
    """Where a shuffle evaluated in pieces keeps counted draws, for an epoch long enough to
    count them for a while (no directory is made for smaller ones)."""
    samples = sum(int(choose) for _, choose, _ in config["streams"])
    counted = config["batching_method"] == "random" and config["shuffle_algo"] in _COUNTED
    if not config["shuffle"] or not counted:
        return None
    if samples < epoch_order.COUNT_CACHE_MIN_SAMPLES or not layout.local_dirs:
        return None
    return count_cache_dir(layout.local_dirs[0])


def _read_batch(
    access: SampleAccess,
    read: Callable[[list[int]], _Part],
    ids: NDArray[np.int64],
    begin: int,
    end: int,
) -> list[_Part]:
    """The batch ``ids[begin:end]`` as what ``read`` returns for its parts: one, unless a
    cache limit made the shard cache hold fewer of its shards at once."""
    parts: list[_Part] = []
    position = begin
    while position < end:
        stop = access.prepare(ids, position, end)  # shorter under a cache limit
        parts.append(read(ids[position:stop].tolist()))
        position = stop
    return parts


def _with_next(
    pieces: Iterator[NDArray[np.int64]], unit: int
) -> Iterator[tuple[NDArray[np.int64], int]]:
    """Each piece joined with the next one, and the piece's own length. Only the piece is
    read; the next one is there for the shard cache's look-ahead (``predownload`` and the
    shards ahead), which would otherwise stop at the piece's end and leave the next piece's
    first shards to be fetched when they are already needed.

    The first piece goes in two parts, cut at a multiple of ``unit`` (a batch: only the
    last part may end inside one): its first half with its second half as the look-ahead,
    then the second half with the next piece. Planning a piece costs about the same whatever
    its size (a shift margin of py1e positions), so the first batch, after a resume too,
    waits for one piece's plan instead of two."""
    current = next(pieces, None)
    if current is None:
        return
    half = len(current) // 2 // unit * unit
    if half:
        yield current, half
        current = current[half:]
    while current is not None:
        following = next(pieces, None)
        if following is None:
            yield current, len(current)
            return
        yield np.concatenate((current, following)), len(current)
        current = following


def _whole_batches(
    pieces: Iterator[NDArray[np.int64]], batch_size: int
) -> Iterator[NDArray[np.int64]]:
    """The pieces regrouped so that only the last may end inside a batch."""
    pending = _NO_IDS
    for piece in pieces:
        ids = np.concatenate((pending, piece)) if len(pending) else piece
        cut = len(ids) - len(ids) % batch_size
        if cut:
            yield ids[:cut]
        pending = ids[cut:]
    if len(pending):
        yield pending


def worker_ids(start: EpochStart, layout: DatasetLayout, world: World) -> NDArray[np.int64]:
    """The ids ``world``'s worker reads in the epoch ``start`` describes (padding skipped)."""
    config = plan_config(
        layout.plan_streams(), start.settings, start.epoch, start.sample_in_epoch, world
    )
    ids = worker_sample_ids(config, world)
    return ids[ids >= 0]


def loader_batches(
    start: EpochStart,
    layout: DatasetLayout,
    world: World,
    access: SampleAccess,
    read: Callable[[list[int]], _Part],
    *,
    num_workers: int,
    batch_size: int,
    drop_last: bool,
    release: Callable[[int], None] | None,
) -> Iterator[list[_Part]]:
    """Yields, in one process, the batches a torch DataLoader with ``num_workers`` workers
    gives over this rank's pass: each worker batches its own ids, and the loader takes one
    batch from each worker in turn, skipping workers that have run out.

    Each batch comes as what ``read`` (``access.get_many`` or ``access.get_columns``)
    returned for its pieces: one, unless a cache limit made the shard cache cut the batch
    short. ``release(shard)`` is called once the pass has read its last sample of ``shard``
    (to unmap it: its pages would otherwise stay in this process's resident set until the
    pass ends).
    """
    if access.idle:
        return
    ids, spans = _interleaved(start, layout, world, num_workers, batch_size, drop_last)
    metrics.begin_epoch(start.epoch)
    done, done_after = _last_reads(layout, ids, spans) if release is not None else ([], [])
    at = 0  # done[at:]: the shards not released yet
    try:
        for number, (begin, end) in enumerate(spans):
            parts = _read_batch(access, read, ids, begin, end)
            metrics.add_samples(end - begin)
            while at < len(done) and done_after[at] == number:
                assert release is not None
                release(done[at])
                at += 1
            yield parts
        _settle(access)
    finally:
        access.prepare(ids, len(ids), len(ids))


def _last_reads(
    layout: DatasetLayout, ids: NDArray[np.int64], spans: list[tuple[int, int]]
) -> tuple[list[int], list[int]]:
    """The shards the pass reads, in the order the pass reads each the last time (shards
    read last by one batch in their order), and that batch's number: worked out once, not
    looked up at every batch."""
    last_use = np.full(len(layout.shards), -1, np.int64)
    np.maximum.at(last_use, layout.shards_of(ids), np.arange(len(ids), dtype=np.int64))
    used = np.flatnonzero(last_use >= 0)
    begins = np.fromiter((begin for begin, _ in spans), np.int64, len(spans))
    batch = np.searchsorted(begins, last_use[used], side="right") - 1
    order = np.argsort(batch, kind="stable")
    return used[order].tolist(), batch[order].tolist()


def _interleaved(
    start: EpochStart,
    layout: DatasetLayout,
    base: World,
    num_workers: int,
    batch_size: int,
    drop_last: bool,
) -> tuple[NDArray[np.int64], list[tuple[int, int]]]:
    """The pass's ids in the loader's order, and each batch's ``(begin, end)`` in them."""
    workers = max(num_workers, 1)
    per_worker = []
    for worker in range(workers):
        world = replace(base, workers_per_rank=workers, worker_of_rank=worker)
        ids = worker_ids(start, layout, world)
        bounds = list(range(0, len(ids), batch_size))
        batches = [ids[b : b + batch_size] for b in bounds]
        if drop_last and batches and len(batches[-1]) < batch_size:
            batches.pop()
        per_worker.append(batches)
    order = [
        batches[k]
        for k in range(max(map(len, per_worker), default=0))
        for batches in per_worker
        if k < len(batches)
    ]
    lengths = np.cumsum([0] + [len(b) for b in order])
    spans = list(zip(lengths[:-1].tolist(), lengths[1:].tolist()))
    merged = np.concatenate(order) if order else np.zeros(0, np.int64)
    return merged.astype(np.int64, copy=False), spans


def chunk_size(layout: DatasetLayout) -> int:
    """Up to ``_CHUNK`` samples, fewer when the average sample is large."""
    total = int(layout.shards.raw_sizes().sum())
    return chunk_samples(total, layout.num_samples)


def chunk_samples(raw_bytes: int, num_samples: int) -> int:
    """Samples a worker declares to the shard cache at once, for a dataset of ``raw_bytes``
    in ``num_samples`` (the simulator models the same chunks)."""
    average = raw_bytes // max(num_samples, 1)
    return max(1, min(_CHUNK, _CHUNK_BYTES // max(average, 1)))

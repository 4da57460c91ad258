"""The epoch sample order, computed by the Rust core from typed settings."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.settings import EpochSettings, PlanConfig, PlanStream
from streamx.order.world import World

__all__ = [
    "COUNT_CACHE_MIN_SAMPLES",
    "emit_planner_messages",
    "plan_config",
    "plan_epoch",
    "resample_streams",
    "worker_id_pieces",
    "worker_sample_ids",
]

# Slots of a worker's share planned at once: the first piece is small, so that the first
# batch comes soon whatever the epoch's size; each next one doubles, up to the cap, which
# bounds the memory a piece needs (its ids, and the shuffle's window around them).
FIRST_PIECE = 1 << 14
MAX_PIECE = 1 << 20
# The most slots the world's shares may hold beyond 16 per sample of the epoch: padding is
# read in pieces like samples, so a batch size or canonical node count that pads a small
# epoch by orders of magnitude (2**60 canonical nodes) would keep a pass reading padding
# for days. The whole plan refused those sizes by memory; pieces refuse them by count.
MAX_PADDED_SLOTS = 1 << 32
# A shuffle's counted draws (py1e, py1s, py2s, py1br) are kept in the count cache once a plan
# counted this many samples' draws (about two draws a sample, 3-6 ns each: some 50 ms), so that
# a later start of the epoch skips them; smaller epochs leave no file.
COUNT_CACHE_MIN_SAMPLES = 5_000_000

logger = logging.getLogger("streamx")


def plan_config(
    streams: Sequence[PlanStream],
    settings: EpochSettings,
    epoch: int,
    sample_in_epoch: int,
    world: World,
) -> PlanConfig:
    """Everything that determines one epoch's order, as the Rust planner takes it.

    Raises:
        ValueError: If ``batch_size`` was not given.
        RuntimeError: If ``settings`` were not resolved for an epoch first.
    """
    if settings.batch_size is None:
        raise ValueError(
            "Please pass `batch_size` to StreamingDataset instead of the DataLoader. Its value "
            "determines the partition of the dataset over ranks and workers, and must be the "
            "same on every rank."
        )
    ncn, block = settings.resolved_sizes()
    return {
        "streams": list(streams),
        "seed": int(settings.shuffle_seed),
        "epoch": int(epoch),
        "shuffle": bool(settings.shuffle),
        "shuffle_algo": settings.shuffle_algo,
        "shuffle_block_size": int(block),
        "num_canonical_nodes": int(ncn),
        "partition_algo": settings.partition_algo,
        "batching_method": settings.batching_method,
        "batch_size": int(settings.batch_size),
        "world": (world.num_nodes, world.ranks_per_node, world.workers_per_rank),
        "sample_in_epoch": int(sample_in_epoch),
        "initial_physical_nodes": settings.initial_physical_nodes,
        "sampling_method": settings.sampling_method,
        "sampling_granularity": int(settings.sampling_granularity),
    }


def emit_planner_messages(messages: list[tuple[str, bool]]) -> None:
    """Passes on what the Rust planner reported: warnings meant for the user as warnings,
    the rest to the ``streamx`` log."""
    for message, is_user in messages:
        if is_user:
            warnings.warn(message, UserWarning, stacklevel=4)
        else:
            logger.warning(message)


def worker_sample_ids(config: PlanConfig, world: World) -> NDArray[np.int64]:
    """This worker's sample ids for the epoch, ``-1`` for padding, in consumption order."""
    ids, messages = _core.plan_worker(config, world.node, world.rank_of_node, world.worker_of_rank)
    emit_planner_messages(messages)
    return ids


def worker_id_pieces(
    config: PlanConfig,
    world: World,
    first: int | None = None,
    cap: int | None = None,
    *,
    count_cache: str | os.PathLike[str] | None = None,
    resume_marks: bytes | None = None,
) -> Iterator[NDArray[np.int64]]:
    """This worker's sample ids for the epoch, as :func:`worker_sample_ids` orders them with
    the padding dropped, in consecutive non-empty pieces of at most ``cap``, each planned when
    it is asked for (with ``random`` batching and any shuffle but ``naive``, or none; other
    configurations are planned whole now and handed out in pieces). The first piece plans
    ``first`` slots (default :data:`FIRST_PIECE`), each next one twice as many, up to ``cap``
    (default :data:`MAX_PIECE`).

    With ``count_cache``, a directory only this user can write, the ``py1e``, ``py1s``,
    ``py2s`` and ``py1br`` shuffles read the epoch's counted draws from there where an earlier
    plan of the same epoch left them, and leave them there once they counted
    :data:`COUNT_CACHE_MIN_SAMPLES` samples' draws themselves (py1e a canonical node at a
    time, the others as far as the pieces asked for reach). Processes that plan the same
    epoch at once (DataLoader workers, the ranks of a node) count the draws once: one counts
    under a lock in that directory while the others wait, then read them. What it did is
    logged to the ``streamx`` logger at debug level; a cache that cannot be used (or a lock
    not had within ten minutes) is counted around, never an error. With ``count_cache``,
    py1e lays out the canonical nodes ``resume_marks`` (from a state dict, see
    :mod:`streamx.order.resume_marks`) hold for this epoch from them, counting nothing
    before; marks of another configuration are ignored (logged like the cache).

    Planning starts here: errors are raised and warnings emitted by this call.

    Raises:
        ValueError: If ``first`` or ``cap`` is not a positive count with ``first <= cap``.
    """
    first = FIRST_PIECE if first is None else first
    cap = MAX_PIECE if cap is None else cap
    if first < 1 or cap < first:
        raise ValueError(f"piece sizes must satisfy 1 <= first <= cap, got {first} and {cap}")
    pieces, messages = _core.plan_worker_pieces(
        config,
        world.node,
        world.rank_of_node,
        world.worker_of_rank,
        count_cache_dir=count_cache,
        count_cache_min_samples=COUNT_CACHE_MIN_SAMPLES,
        resume_marks=resume_marks,
    )
    emit_planner_messages(messages)
    if pieces.resume_marks_nodes:
        logger.debug("py1e: %d canonical nodes from resume marks", pieces.resume_marks_nodes)
    epoch = sum(int(choose) for _, choose, _ in config["streams"])
    nodes, ranks, workers = config["world"]
    slots = len(pieces) * nodes * ranks * workers
    if slots > max(MAX_PADDED_SLOTS, 16 * epoch):
        raise ValueError(
            f"The epoch of {epoch} samples would be padded to {slots} slots across "
            f"{nodes} node(s) x {ranks} rank(s) x {workers} worker(s) "
            f"(batch_size={config['batch_size']}, "
            f"num_canonical_nodes={config['num_canonical_nodes']}): lower them"
        )
    return _pieces(pieces, first, cap, str(config["shuffle_algo"]))


def _pieces(
    pieces: _core.WorkerPieces, size: int, cap: int, algo: str
) -> Iterator[NDArray[np.int64]]:
    logged = _log_count_cache(pieces, None, algo)
    while True:
        ids = pieces.next_piece(size)
        logged = _log_count_cache(pieces, logged, algo)
        if not len(ids):
            return
        ids = ids[ids >= 0]
        if len(ids):
            yield ids
        size = min(2 * size, cap)


_CountCacheStats = tuple[int, int, str | None] | None


def _log_count_cache(
    pieces: _core.WorkerPieces, logged: _CountCacheStats, algo: str
) -> _CountCacheStats:
    """Logs what the count cache did since ``logged`` (each change once); the new stats."""
    stats = pieces.count_cache_stats
    if stats is None or stats == logged:
        return stats
    loaded, saved, problem = stats
    before = logged or (0, 0, None)
    if loaded != before[0]:
        logger.debug("%s: %d canonical nodes' draws read from the count cache", algo, loaded)
    if saved != before[1]:
        logger.debug("%s: %d canonical nodes' draws kept in the count cache", algo, saved)
    if problem != before[2]:
        logger.debug("%s count cache: %s", algo, problem)
    return stats


def plan_epoch(config: PlanConfig) -> NDArray[np.int64]:
    """The whole world's ids: shape (nodes, ranks per node, workers per rank, batches, batch)."""
    ids, messages = _core.plan_epoch(config)
    emit_planner_messages(messages)
    return ids


def resample_streams(
    config: PlanConfig, stream_id: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """mosaicml-streaming's ``resample_streams``: (shuffle units, underlying sample ids)."""
    return _core.resample_streams(config, stream_id)

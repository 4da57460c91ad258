"""The epoch sample order, computed by the Rust core from typed settings."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.settings import EpochSettings, PlanConfig, PlanStream
from streamx.order.world import World

__all__ = [
    "emit_planner_messages",
    "plan_config",
    "plan_epoch",
    "resample_streams",
    "worker_sample_ids",
]

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

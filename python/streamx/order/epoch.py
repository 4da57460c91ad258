"""The epoch sample order, computed by the Rust core from the dataset's resolved settings."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.world import World

__all__ = ["epoch_config", "plan_epoch", "resample_streams", "worker_sample_ids"]

logger = logging.getLogger("streamx")


def epoch_config(ds: Any, epoch: int, sample_in_epoch: int, world: World) -> dict[str, Any]:
    """Everything that determines one epoch's order, as the Rust planner takes it."""
    if ds.batch_size is None:
        raise ValueError(
            "Please pass `batch_size` to StreamingDataset instead of the DataLoader. Its value "
            "determines the partition of the dataset over ranks and workers, and must be the "
            "same on every rank."
        )
    streams = []
    for stream_id, stream in enumerate(ds.streams):
        begin = int(ds.shard_offset_per_stream[stream_id])
        end = begin + int(ds.shards_per_stream[stream_id])
        sizes = ds.samples_per_shard[begin:end].tolist()
        streams.append((sizes, int(stream.choose), float(stream.proportion)))
    return {
        "streams": streams,
        "seed": int(ds.shuffle_seed),
        "epoch": int(epoch),
        "shuffle": bool(ds.shuffle),
        "shuffle_algo": ds.shuffle_algo,
        "shuffle_block_size": int(ds.shuffle_block_size),
        "num_canonical_nodes": int(ds.num_canonical_nodes),
        "partition_algo": ds.partition_algo,
        "batching_method": ds.batching_method,
        "batch_size": int(ds.batch_size),
        "world": (world.num_nodes, world.ranks_per_node, world.workers_per_rank),
        "sample_in_epoch": int(sample_in_epoch),
        "initial_physical_nodes": ds.initial_physical_nodes,
        "sampling_method": ds.sampling_method,
        "sampling_granularity": int(ds.sampling_granularity),
    }


def _emit(messages: list[tuple[str, bool]]) -> None:
    for message, is_user in messages:
        if is_user:
            warnings.warn(message, UserWarning, stacklevel=4)
        else:
            logger.warning(message)


def worker_sample_ids(ds: Any, epoch: int, sample_in_epoch: int, world: World) -> NDArray[np.int64]:
    """This worker's sample ids for the epoch, ``-1`` for padding, in consumption order."""
    config = epoch_config(ds, epoch, sample_in_epoch, world)
    ids, messages = _core.plan_worker(config, world.node, world.rank_of_node, world.worker_of_rank)
    _emit(messages)
    return ids


def plan_epoch(ds: Any, epoch: int, sample_in_epoch: int, world: World) -> NDArray[np.int64]:
    """The whole world's ids: shape (nodes, ranks per node, workers per rank, batches, batch)."""
    ids, messages = _core.plan_epoch(epoch_config(ds, epoch, sample_in_epoch, world))
    _emit(messages)
    return ids


def resample_streams(
    ds: Any, epoch: int, stream_id: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """mosaicml-streaming's ``resample_streams``: (shuffle units, underlying sample ids)."""
    config = epoch_config(ds, epoch, 0, World(1, 1, 0))
    return _core.resample_streams(config, stream_id)

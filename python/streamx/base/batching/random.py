"""mosaicml-streaming's ``streaming.base.batching.random``, planned by streamx's Rust core."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx.base.batching._run import generate
from streamx.dataset.streaming import StreamingDataset
from streamx.order.world import World

__all__ = ["generate_work_random_batching"]


def generate_work_random_batching(
    dataset: StreamingDataset, world: World, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """This epoch's sample ids for every node, rank and worker, with ``'random'`` batching.

    Args:
        dataset: The dataset whose streams, weights and shuffle settings define the epoch.
        world: The job's shape (nodes, ranks per node, workers per rank).
        epoch: The epoch.
        sample_in_epoch: Samples already consumed this epoch, left out.

    Returns:
        Sample ids (``-1`` for padding) shaped (nodes, ranks per node, workers per rank,
        batches per worker, batch size).

    Raises:
        ValueError: ``dataset.batch_size`` is unset, or the settings are inconsistent.
    """
    return generate("random", dataset, world, epoch, sample_in_epoch)

"""mosaicml-streaming's ``streaming.base.batching``: epoch plans from streamx's planner."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streamx.base.batching.device_per_stream import generate_work_device_per_stream_batching
from streamx.base.batching.per_stream import generate_work_per_stream_batching
from streamx.base.batching.random import generate_work_random_batching
from streamx.base.batching.stratified import generate_work_stratified_batching
from streamx.dataset.streaming import StreamingDataset
from streamx.order.world import World

__all__ = ["batching_methods", "generate_work"]

batching_methods: dict[str, Callable[..., NDArray[np.int64]]] = {
    "random": generate_work_random_batching,
    "stratified": generate_work_stratified_batching,
    "per_stream": generate_work_per_stream_batching,
    "device_per_stream": generate_work_device_per_stream_batching,
}


def generate_work(
    batching_method: str,
    dataset: StreamingDataset,
    world: World,
    epoch: int,
    sample_in_epoch: int,
) -> NDArray[np.int64]:
    """Every node's, rank's and worker's sample ids for the epoch, elastically deterministic.

    Args:
        batching_method: ``'random'``, ``'stratified'``, ``'per_stream'`` or
            ``'device_per_stream'``.
        dataset: The dataset whose streams, weights and shuffle settings define the epoch.
        world: The job's shape; :class:`streamx.base.world.World` or streamx's own.
        epoch: The epoch.
        sample_in_epoch: Samples already consumed this epoch, left out.

    Returns:
        Sample ids (``-1`` for padding) shaped (nodes, ranks per node, workers per rank,
        batches per worker, batch size).

    Raises:
        KeyError: Unknown ``batching_method`` (as in mosaicml-streaming).
        ValueError: ``dataset.batch_size`` is unset, or the settings are inconsistent.

    Examples:
        >>> from streamx.base.world import World
        >>> ids = generate_work("random", dataset, World(1, 1, 1, 0), 0, 0)  # doctest: +SKIP
    """
    return batching_methods[batching_method](dataset, world, epoch, sample_in_epoch)

"""Epoch plans with mosaicml-streaming's ``generate_work`` signatures, from streamx's planner.

``streaming.base.batching`` has one module per batching method, each with one
``generate_work_<method>_batching``; here one table makes them all
(``streamx.base.batching`` re-exports them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from streamx.order.epoch import plan_config, plan_epoch
from streamx.order.settings import BATCHING_METHODS, BatchingMethod
from streamx.order.world import World

if TYPE_CHECKING:
    from streamx.dataset.streaming import StreamingDataset

__all__ = ["batching_methods", "generate_work"]

WorkFn = Callable[..., NDArray[np.int64]]


def _generate(
    batching_method: BatchingMethod,
    dataset: StreamingDataset,
    world: World,
    epoch: int,
    sample_in_epoch: int,
) -> NDArray[np.int64]:
    """The whole world's sample ids for ``epoch`` under ``batching_method``.

    The dataset's own settings apply, with ``batching_method`` in place of its own, and
    defaults (``num_canonical_nodes``...) filled for ``world`` as an epoch would fill them.
    """
    settings = dataset._settings.resolve(None, world.num_nodes)
    settings = dataclasses.replace(settings, batching_method=batching_method)
    config = plan_config(dataset._layout.plan_streams(), settings, epoch, sample_in_epoch, world)
    return plan_epoch(config)


def _work_of(method: BatchingMethod) -> WorkFn:
    def generate_work_method(
        dataset: StreamingDataset, world: World, epoch: int, sample_in_epoch: int
    ) -> NDArray[np.int64]:
        return _generate(method, dataset, world, epoch, sample_in_epoch)

    name = f"generate_work_{method}_batching"
    generate_work_method.__name__ = generate_work_method.__qualname__ = name
    generate_work_method.__doc__ = _DOC.format(method=method)
    return generate_work_method


_DOC = """This epoch's sample ids for every node, rank and worker, with ``'{method}'`` batching.

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

batching_methods: dict[str, WorkFn] = {method: _work_of(method) for method in BATCHING_METHODS}

# Module attributes, so the functions pickle by name.
for _fn in batching_methods.values():
    globals()[_fn.__name__] = _fn


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

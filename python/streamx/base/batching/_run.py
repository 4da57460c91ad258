"""The one call into streamx's epoch planner that every ``generate_work_*`` makes."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from streamx.order.epoch import plan_config, plan_epoch
from streamx.order.settings import BatchingMethod
from streamx.order.world import World

if TYPE_CHECKING:
    from streamx.dataset.streaming import StreamingDataset

__all__ = ["generate"]


def generate(
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

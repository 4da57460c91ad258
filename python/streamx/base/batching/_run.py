"""The one call into streamx's epoch planner that every ``generate_work_*`` makes."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.order.epoch import plan_epoch
from streamx.order.world import World

__all__ = ["generate"]


class _WithBatching:
    """The dataset as the planner reads it, with ``batching_method`` replaced."""

    def __init__(self, dataset: Any, batching_method: str) -> None:
        self._dataset = dataset
        self.batching_method = batching_method

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dataset, name)


def generate(
    batching_method: str, dataset: Any, world: World, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """The whole world's sample ids for ``epoch`` under ``batching_method``."""
    if getattr(dataset, "batching_method", None) != batching_method:
        dataset = _WithBatching(dataset, batching_method)
    return plan_epoch(dataset, epoch, sample_in_epoch, world)

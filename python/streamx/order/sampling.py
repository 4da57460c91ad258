"""Which samples a stream contributes to an epoch, with mosaicml-streaming's ``get_sampling``
signature (``streamx.base.sampling`` re-exports it), from ``streamx._core.get_sampling``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx import _core

__all__ = ["get_sampling"]


def get_sampling(
    samples_per_shard: NDArray[np.int64],
    choose: int,
    granularity: int,
    seed: int,
    epoch: int,
    use_epoch: bool,
) -> NDArray[np.int64]:
    """Which samples a stream contributes to an epoch, drawn shard-block by shard-block.

    Args:
        samples_per_shard: Samples in each of the stream's shards.
        choose: How many samples to draw.
        granularity: Samples drawn from one shard at a time.
        seed: The run's shuffle seed.
        epoch: The epoch, mixed into the seed when ``use_epoch``.
        use_epoch: Draw different samples each epoch, as ``sampling_method='balanced'``
            does; ``'fixed'`` draws the same samples every epoch.

    Returns:
        Stream-local sample ids, ``choose`` of them.

    Examples:
        >>> ids = get_sampling(np.array([4, 4]), 6, 1, 9176, 0, False)
        >>> len(ids)
        6
    """
    return _core.get_sampling(
        np.asarray(samples_per_shard, np.int64).tolist(),
        choose,
        granularity,
        seed,
        epoch,
        use_epoch,
    )

"""mosaicml-streaming's ``streaming.base.shuffle.py2s``, computed by streamx's Rust core."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx.base.shuffle._run import shuffle

__all__ = ["get_shuffle_py2s"]


def get_shuffle_py2s(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """The epoch's sample order under the ``py2s`` shuffle, as mosaicml-streaming computes it.

    Args:
        shard_sizes: Samples in each shard, in order.
        num_canonical_nodes: Canonical nodes the shards are divided over.
        seed: The run's base seed.
        epoch: The epoch, added to the seed.
        block_size: Shuffle block size in samples (used by the block-based algorithms).

    Returns:
        A permutation of ``range(sum(shard_sizes))``.
    """
    return shuffle("py2s", shard_sizes, num_canonical_nodes, seed, epoch, block_size)

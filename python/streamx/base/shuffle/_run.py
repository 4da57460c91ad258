"""The one call into the Rust shufflers that every ``get_shuffle_*`` makes."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.epoch import _emit as emit

__all__ = ["shuffle"]


def shuffle(
    algo: str,
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
) -> NDArray[np.int64]:
    """The epoch's shuffled sample ids under ``algo``."""
    sizes = np.asarray(shard_sizes, np.int64).tolist()
    ids, messages = _core.get_shuffle(algo, sizes, num_canonical_nodes, seed, epoch, block_size)
    emit(messages)
    return ids

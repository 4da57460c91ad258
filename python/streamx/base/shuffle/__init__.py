"""mosaicml-streaming's ``streaming.base.shuffle``: the epoch shuffles, from the Rust core."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streamx.base.shuffle.naive import get_shuffle_naive
from streamx.base.shuffle.py1br import get_shuffle_py1br
from streamx.base.shuffle.py1e import get_shuffle_py1e
from streamx.base.shuffle.py1s import get_shuffle_py1s
from streamx.base.shuffle.py2s import get_shuffle_py2s

__all__ = ["algos", "get_shuffle"]

algos: dict[str, Callable[..., NDArray[np.int64]]] = {
    "py1br": get_shuffle_py1br,
    "py1e": get_shuffle_py1e,
    "py1s": get_shuffle_py1s,
    "py2s": get_shuffle_py2s,
    "naive": get_shuffle_naive,
}


def get_shuffle(
    algo: str,
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """The epoch's global sample order: shards stay with their canonical node, and each
    node's samples are reshuffled every epoch.

    Args:
        algo: ``'py1br'``, ``'py1e'``, ``'py1s'``, ``'py2s'`` or ``'naive'``.
        shard_sizes: Samples in each shard, in order.
        num_canonical_nodes: Canonical nodes the shards are divided over.
        seed: The run's base seed.
        epoch: The epoch, added to the seed.
        block_size: Shuffle block size in samples. Defaults to ``1 << 18``.

    Returns:
        A permutation of ``range(sum(shard_sizes))``.

    Raises:
        KeyError: ``algo`` is not one of the above (as in mosaicml-streaming).

    Examples:
        >>> ids = get_shuffle("py1e", np.array([5, 5, 5]), 1, 9176, 0, 8)
        >>> sorted(ids.tolist()) == list(range(15))
        True
    """
    return algos[algo](shard_sizes, num_canonical_nodes, seed, epoch, block_size)

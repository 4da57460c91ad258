"""The epoch shuffles with mosaicml-streaming's function signatures, computed by the Rust core.

``streaming.base.shuffle`` has one module per algorithm, each with one ``get_shuffle_<algo>``;
here one table makes them all (``streamx.base.shuffle`` re-exports them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.epoch import emit_planner_messages as emit

__all__ = ["SHUFFLE_ALGOS", "algos", "get_shuffle"]

ShuffleFn = Callable[..., NDArray[np.int64]]

SHUFFLE_ALGOS = ("py1br", "py1e", "py1s", "py2s", "naive")


def _shuffle_of(algo: str) -> ShuffleFn:
    def get_shuffle_algo(
        shard_sizes: NDArray[np.int64],
        num_canonical_nodes: int,
        seed: int,
        epoch: int,
        block_size: int = 1 << 18,
    ) -> NDArray[np.int64]:
        sizes = np.asarray(shard_sizes, np.int64).tolist()
        ids, messages = _core.get_shuffle(algo, sizes, num_canonical_nodes, seed, epoch, block_size)
        emit(messages)
        return ids

    get_shuffle_algo.__name__ = get_shuffle_algo.__qualname__ = f"get_shuffle_{algo}"
    get_shuffle_algo.__doc__ = _DOC.format(algo=algo)
    return get_shuffle_algo


_DOC = """The epoch's sample order under the ``{algo}`` shuffle, as mosaicml-streaming computes it.

    Args:
        shard_sizes: Samples in each shard, in order.
        num_canonical_nodes: Canonical nodes the shards are divided over.
        seed: The run's base seed.
        epoch: The epoch, added to the seed.
        block_size: Shuffle block size in samples (used by the block-based algorithms).

    Returns:
        A permutation of ``range(sum(shard_sizes))``.
    """

algos: dict[str, ShuffleFn] = {algo: _shuffle_of(algo) for algo in SHUFFLE_ALGOS}

# Module attributes, so the functions pickle and ``streamx.base.shuffle.<algo>`` finds them.
for _fn in algos.values():
    globals()[_fn.__name__] = _fn


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

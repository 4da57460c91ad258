"""mosaicml-streaming's ``streaming.base.partition``: sample partitions, from the Rust core."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streamx.base.partition.orig import get_partitions_orig
from streamx.base.partition.relaxed import get_partitions_relaxed

__all__ = ["algos", "get_partitions"]

algos: dict[str, Callable[..., NDArray[np.int64]]] = {
    "orig": get_partitions_orig,
    "relaxed": get_partitions_relaxed,
}


def get_partitions(
    algo: str,
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int,
    drop_first: int = 0,
    initial_physical_nodes: int | None = None,
) -> NDArray[np.int64]:
    """Splits an epoch's samples over physical nodes, ranks and DataLoader workers.

    Canonical and physical node counts must divide one another; the global order depends
    only on the canonical count, so it survives a change of cluster size.

    Args:
        algo: ``'orig'`` or ``'relaxed'``.
        num_samples: Samples in the epoch.
        num_canonical_nodes: Canonical nodes.
        num_physical_nodes: Physical nodes.
        ranks_per_node: Ranks per node.
        workers_per_rank: DataLoader workers per rank.
        batch_size: Per-rank batch size.
        drop_first: Samples already seen this epoch, left out. Defaults to ``0``.
        initial_physical_nodes: Physical nodes when training started (``'relaxed'`` only).

    Returns:
        Sample ids (``-1`` for padding) shaped (physical nodes, ranks per node, workers per
        rank, batches per worker, batch size).

    Raises:
        KeyError: Unknown ``algo``.
        ValueError: Inconsistent node counts, or ``drop_first`` past the end of the epoch.

    Examples:
        >>> get_partitions("orig", 8, 1, 1, 2, 1, 2).shape
        (1, 2, 1, 2, 2)
    """
    return algos[algo](
        num_samples,
        num_canonical_nodes,
        num_physical_nodes,
        ranks_per_node,
        workers_per_rank,
        batch_size,
        drop_first,
        initial_physical_nodes,
    )

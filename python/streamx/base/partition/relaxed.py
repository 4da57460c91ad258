"""mosaicml-streaming's ``streaming.base.partition.relaxed``, computed by streamx's Rust core."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx.base.partition._run import partition

__all__ = ["get_partitions_relaxed"]


def get_partitions_relaxed(
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int,
    drop_first: int = 0,
    initial_physical_nodes: int | None = None,
) -> NDArray[np.int64]:
    """The ``relaxed`` partition of an epoch's samples over nodes, ranks and workers.

    Args: as :func:`streamx.base.partition.get_partitions` takes them after ``algo``.

    Returns:
        Sample ids (``-1`` for padding) shaped (physical nodes, ranks per node,
        workers per rank, batches per worker, batch size).

    Raises:
        ValueError: The node counts do not divide each other, or ``drop_first`` is past
            the end of the epoch.
    """
    return partition(
        "relaxed",
        num_samples,
        num_canonical_nodes,
        num_physical_nodes,
        ranks_per_node,
        workers_per_rank,
        batch_size,
        drop_first,
        initial_physical_nodes,
    )

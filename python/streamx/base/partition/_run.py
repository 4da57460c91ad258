"""The one call into the Rust partitioner that every ``get_partitions_*`` makes."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.epoch import _emit as emit

__all__ = ["partition"]


def partition(
    algo: str,
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int,
    drop_first: int,
    initial_physical_nodes: int | None,
) -> NDArray[np.int64]:
    """The epoch's ids, shaped (nodes, ranks per node, workers per rank, batches, batch)."""
    ids, messages = _core.get_partitions(
        algo,
        num_samples,
        num_canonical_nodes,
        num_physical_nodes,
        ranks_per_node,
        workers_per_rank,
        batch_size,
        drop_first,
        initial_physical_nodes,
    )
    emit(messages)
    return ids

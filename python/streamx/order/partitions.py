"""The sample partitions with mosaicml-streaming's function signatures, from the Rust core.

``streaming.base.partition`` has one module per algorithm, each with one
``get_partitions_<algo>``; here one table makes them all (``streamx.base.partition``
re-exports them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.epoch import emit_planner_messages as emit

__all__ = ["PARTITION_ALGOS", "algos", "get_partitions"]

PartitionFn = Callable[..., NDArray[np.int64]]

PARTITION_ALGOS = ("orig", "relaxed")


def _partitions_of(algo: str) -> PartitionFn:
    def get_partitions_algo(
        num_samples: int,
        num_canonical_nodes: int,
        num_physical_nodes: int,
        ranks_per_node: int,
        workers_per_rank: int,
        batch_size: int,
        drop_first: int = 0,
        initial_physical_nodes: int | None = None,
    ) -> NDArray[np.int64]:
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

    get_partitions_algo.__name__ = get_partitions_algo.__qualname__ = f"get_partitions_{algo}"
    get_partitions_algo.__doc__ = _DOC.format(algo=algo)
    return get_partitions_algo


_DOC = """The ``{algo}`` partition of an epoch's samples over nodes, ranks and workers.

    Args: as :func:`get_partitions` takes them after ``algo``.

    Returns:
        Sample ids (``-1`` for padding) shaped (physical nodes, ranks per node,
        workers per rank, batches per worker, batch size).

    Raises:
        ValueError: The node counts do not divide each other, or ``drop_first`` is past
            the end of the epoch.
    """

algos: dict[str, PartitionFn] = {algo: _partitions_of(algo) for algo in PARTITION_ALGOS}

# Module attributes, so the functions pickle by name.
for _fn in algos.values():
    globals()[_fn.__name__] = _fn


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

"""Every canonical node of a py1e epoch counted ahead of need on each node, so that the node's
state dicts mark every node (:mod:`streamx.order.resume_marks`).

A node's workers count only the canonical nodes up to the last they read: on node 0 of
eight, one. Its state dict could then mark that one only, and a resume on node 7 would count
every draw before its own (about 0.5 s at 10^9 samples). The node's first worker (rank 0 of
the node, worker 0) therefore counts the rest into the count cache once its first piece is
planned, in a Rust thread that holds no Python state: the count runs beside the reads, not
before the first batch, and a process that ends first leaves only what it wrote whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order import epoch as epoch_order
from streamx.order.settings import PlanConfig
from streamx.order.world import World

__all__ = ["counting_every_node_ahead"]

logger = logging.getLogger("streamx")


def counting_every_node_ahead(
    pieces: Iterator[NDArray[np.int64]], config: PlanConfig, world: World, cache: str | None
) -> Iterator[NDArray[np.int64]]:
    """``pieces``; on the node's first worker of a py1e epoch with a count cache, once the
    first piece is planned, every canonical node is counted into ``cache`` in the
    background."""
    if cache is None or config["shuffle_algo"] != "py1e" or not world.is_local_leader:
        return pieces
    return _after_first_piece(pieces, config, cache)


def _after_first_piece(
    pieces: Iterator[NDArray[np.int64]], config: PlanConfig, cache: str
) -> Iterator[NDArray[np.int64]]:
    first = next(pieces, None)
    minimum = epoch_order.COUNT_CACHE_MIN_SAMPLES
    if not _core.py1e_count_every_node_in_background(config, cache, minimum):
        logger.debug("py1e: no thread to count every canonical node ahead")
    if first is None:
        return
    yield first
    yield from pieces

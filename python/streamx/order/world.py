"""Who this process is: node, rank and DataLoader worker, from torchrun's environment.

Nothing here initialises ``torch.distributed`` or touches a GPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from streamx.runtime.worker_info import get_worker_info

__all__ = ["World"]


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as err:
        raise ValueError(f"Environment variable {name} must be an integer, got {value!r}") from err


@dataclass(frozen=True)
class World:
    """The position of one process (and optionally one DataLoader worker) in the job."""

    num_nodes: int
    ranks_per_node: int
    rank: int
    workers_per_rank: int = 1
    worker_of_rank: int = 0

    @classmethod
    def detect(cls) -> World:
        """Reads ``RANK``/``WORLD_SIZE``/``LOCAL_WORLD_SIZE`` and the DataLoader worker info.

        As in mosaicml-streaming, a missing ``LOCAL_WORLD_SIZE`` means one rank per node.
        """
        world_size = _env_int("WORLD_SIZE", 1)
        rank = _env_int("RANK", 0)
        ranks_per_node = _env_int("LOCAL_WORLD_SIZE", 1)
        if world_size < 1 or ranks_per_node < 1 or world_size % ranks_per_node:
            raise ValueError(
                f"WORLD_SIZE ({world_size}) must be a positive multiple of LOCAL_WORLD_SIZE "
                f"({ranks_per_node})"
            )
        if not 0 <= rank < world_size:
            raise ValueError(f"RANK ({rank}) must be in [0, WORLD_SIZE={world_size})")
        return cls(world_size // ranks_per_node, ranks_per_node, rank).with_workers()

    @property
    def num_ranks(self) -> int:
        """Ranks in the whole job."""
        return self.num_nodes * self.ranks_per_node

    @property
    def node(self) -> int:
        """This rank's node."""
        return self.rank // self.ranks_per_node

    @property
    def rank_of_node(self) -> int:
        """This rank's index within its node."""
        return self.rank % self.ranks_per_node

    @property
    def is_local_leader(self) -> bool:
        """Whether this is local rank 0 (worker 0 when inside a DataLoader worker)."""
        return self.rank_of_node == 0 and self.worker_of_rank == 0

    @property
    def is_multinode(self) -> bool:
        """Whether the job spans more than one node."""
        return self.num_nodes > 1

    @property
    def workers_per_node(self) -> int:
        """DataLoader workers on one node, over all its ranks."""
        return self.ranks_per_node * self.workers_per_rank

    @property
    def num_workers(self) -> int:
        """DataLoader workers in the whole job."""
        return self.num_ranks * self.workers_per_rank

    @property
    def worker(self) -> int:
        """This worker's index in the whole job (rank-major)."""
        return self.rank * self.workers_per_rank + self.worker_of_rank

    @property
    def worker_of_node(self) -> int:
        """This worker's index within its node."""
        return self.worker % self.workers_per_node

    @property
    def is_leader(self) -> bool:
        """Whether this is worker 0 of rank 0 of node 0."""
        return self.worker == 0

    def to_json(self) -> dict[str, Any]:
        """Every count and index, keyed as mosaicml-streaming's ``World.to_json`` keys them."""
        names = (
            *("node", "num_nodes", "is_multinode", "rank", "num_ranks", "rank_of_node"),
            *("ranks_per_node", "worker", "num_workers", "worker_of_node", "workers_per_node"),
            *("worker_of_rank", "workers_per_rank", "is_leader", "is_local_leader"),
        )
        return {name: getattr(self, name) for name in names}

    def with_workers(self) -> World:
        """This rank's world with the current DataLoader worker filled in."""
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        return replace(self, workers_per_rank=workers, worker_of_rank=worker)

    def replicate(self, replication: int | None) -> World:
        """The world after grouping every ``replication`` consecutive ranks into one."""
        if not replication or replication == 1:
            return self
        if replication < 1 or self.num_ranks % replication:
            raise ValueError(
                f"replication ({replication}) must divide the number of ranks ({self.num_ranks})"
            )
        ranks = self.num_ranks // replication
        nodes = (
            ranks // self.ranks_per_node
            if ranks % self.ranks_per_node == 0 and ranks >= self.ranks_per_node
            else 1
        )
        if ranks % max(nodes, 1):
            nodes = 1
        return replace(
            self, num_nodes=nodes, ranks_per_node=ranks // nodes, rank=self.rank // replication
        )

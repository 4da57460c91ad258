"""mosaicml-streaming's :class:`World`, with its constructor (``streamx.base.world`` re-exports it).

mosaic builds a ``World`` from ``(num_nodes, ranks_per_node, workers_per_rank, worker)``,
where ``worker`` is the global worker index; streamx's own :class:`streamx.order.world.World`
holds the rank and the worker within the rank. This subclass only translates the
constructor, so a mosaic-style ``World`` goes wherever streamx expects its own.
"""

from __future__ import annotations

from streamx.order.world import World as _World

__all__ = ["World"]


class World(_World):
    """The nodes, ranks and DataLoader workers of this run, and where this process sits.

    Counts (``num_nodes``, ``num_ranks``, ``num_workers``) are global; ``workers_per_rank``
    is the DataLoader's ``num_workers``.

    Args:
        num_nodes: Nodes in the job.
        ranks_per_node: Ranks (devices) per node.
        workers_per_rank: DataLoader workers per rank.
        worker: This worker's global index, ``rank * workers_per_rank + worker_of_rank``.

    Raises:
        ValueError: A count is below 1 or ``worker`` is outside the job.

    Examples:
        >>> world = World(num_nodes=2, ranks_per_node=8, workers_per_rank=4, worker=37)
        >>> world.node, world.rank, world.rank_of_node, world.worker_of_rank
        (1, 9, 1, 1)
    """

    def __init__(
        self, num_nodes: int, ranks_per_node: int, workers_per_rank: int, worker: int
    ) -> None:
        for name, count in (
            ("num_nodes", num_nodes),
            ("ranks_per_node", ranks_per_node),
            ("workers_per_rank", workers_per_rank),
        ):
            if count < 1:
                raise ValueError(f"{name} must be at least 1, got {count}")
        total = num_nodes * ranks_per_node * workers_per_rank
        if not 0 <= worker < total:
            raise ValueError(f"worker must be in [0, {total}), got {worker}")
        rank, worker_of_rank = divmod(worker, workers_per_rank)
        super().__init__(num_nodes, ranks_per_node, rank, workers_per_rank, worker_of_rank)

    @classmethod
    def _of(cls, world: _World) -> World:
        return cls(world.num_nodes, world.ranks_per_node, world.workers_per_rank, world.worker)

    @classmethod
    def detect(cls) -> World:
        """The world from torchrun's variables and the DataLoader worker info.

        Raises:
            ValueError: ``RANK``, ``WORLD_SIZE`` or ``LOCAL_WORLD_SIZE`` is inconsistent.
        """
        return cls._of(_World.detect())

    def copy(self) -> World:
        """An equal, separate ``World``."""
        return World._of(self)

    def replicate(self, replication: int | None) -> World:
        """The world in which every ``replication`` consecutive ranks act as one.

        Raises:
            ValueError: ``replication`` is not positive or does not divide the rank count.
        """
        if replication is None or replication <= 0:
            raise ValueError("Replication factor must be positive.")
        if self.num_ranks % replication:
            raise ValueError("World size must be divisible by your replication factor.")
        return World._of(_World(*self._fields()).replicate(replication))

    def detect_workers(self) -> World:
        """This rank's world with the current DataLoader worker filled in."""
        return World._of(_World(*self._fields()).with_workers())

    def with_workers(self) -> World:
        """Same as :meth:`detect_workers`."""
        return self.detect_workers()

    def _fields(self) -> tuple[int, int, int, int, int]:
        return (
            self.num_nodes,
            self.ranks_per_node,
            self.rank,
            self.workers_per_rank,
            self.worker_of_rank,
        )

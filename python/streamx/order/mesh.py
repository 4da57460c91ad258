"""N-D parallel meshes: which ranks share a batch, and which data-parallel rank reads what.

A :class:`Mesh` names the data (``dp``), tensor (``tp``), pipeline (``pp``) and context
(``cp``) parallel sizes. Only the data-parallel rank partitions the data: the ranks of one
tensor- or context-parallel group (and every pipeline stage of one data-parallel replica)
get the same samples, in the order a plain ``dp``-rank run gives its ranks.

Ranks map to coordinates by ``order``, fastest-varying first. The default, ``"tp-cp-dp-pp"``,
is Megatron's: ``rank = tp + TP * (cp + CP * (dp + DP * pp))``. torch's ``DeviceMesh`` is
row-major over its named dims, so its last dim varies fastest: a mesh with
``mesh_dim_names=("pp", "dp", "cp", "tp")`` is this same order (see :meth:`Mesh.from_device_mesh`).

A node's ranks keep their data-parallel share together: when every node holds one block of
consecutive dp ranks (Megatron's order with whole tp x cp groups per node), the data world
is those blocks as nodes, exactly as a plain run of ``dp`` ranks on that many nodes, so a
node fetches only the shards its dp ranks read. On one node with ``pp == 1`` that is
exactly mosaic's ``replication=tp * cp``; across nodes ``replication`` folds the nodes
together whenever the replicated ranks do not fill whole nodes, and every node then fetches
every shard. Unlike ``replication``, pipeline stages are not split into different data
(mosaic's issue #827).

As in Megatron, only the first pipeline stage (inputs) and the last (labels) consume
batches: with ``skip_pipeline_middle=True`` the stages between them iterate nothing and
fetch nothing, while their epochs and resume state advance with the others'.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Protocol

from streamx.order.world import World

__all__ = ["Mesh", "data_world", "grouping"]

_DIMS = ("dp", "tp", "pp", "cp")


class _DeviceMeshLike(Protocol):
    """What :meth:`Mesh.from_device_mesh` reads of ``torch.distributed.device_mesh.DeviceMesh``."""

    @property
    def mesh_dim_names(self) -> tuple[str, ...] | None: ...

    def size(self, mesh_dim: int | None = None) -> int: ...


@dataclass(frozen=True)
class Mesh:
    """Data, tensor, pipeline and context parallel sizes, and the rank order over them.

    Args:
        dp: Data-parallel size (the ranks that read different samples).
        tp: Tensor-parallel size.
        pp: Pipeline-parallel size.
        cp: Context-parallel size.
        order: The dims, fastest-varying first, joined by ``-`` (Megatron's default).
        skip_pipeline_middle: Pipeline stages other than the first and the last read no
            data: their passes yield nothing and download nothing (:meth:`reads_data`).

    Raises:
        ValueError: A size is below 1, ``order`` is not a permutation of dp, tp, pp, cp, or
            ``skip_pipeline_middle`` is not a bool.

    Examples:
        >>> mesh = Mesh(dp=2, tp=2, cp=2)
        >>> mesh.world_size, mesh.coords(5)
        (8, {'tp': 1, 'cp': 0, 'dp': 1, 'pp': 0})
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    order: str = "tp-cp-dp-pp"
    skip_pipeline_middle: bool = False

    def __post_init__(self) -> None:
        for name in _DIMS:
            size = getattr(self, name)
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"Mesh {name} must be an integer of at least 1, got {size!r}")
        if sorted(self.order.split("-")) != sorted(_DIMS):
            raise ValueError(
                f"Mesh order must name dp, tp, pp and cp once each joined by '-', "
                f"got {self.order!r}"
            )
        if not isinstance(self.skip_pipeline_middle, bool):
            raise ValueError(
                f"Mesh skip_pipeline_middle must be a bool, got {self.skip_pipeline_middle!r}"
            )

    @classmethod
    def from_device_mesh(
        cls, device_mesh: _DeviceMeshLike, *, skip_pipeline_middle: bool = False
    ) -> Mesh:
        """The mesh of a torch ``DeviceMesh`` whose dims are named among dp, tp, pp, cp.

        Missing dims have size 1. Row-major over the names: the last name varies fastest.
        ``skip_pipeline_middle`` is as in :class:`Mesh`.

        Raises:
            ValueError: The mesh has no dim names, or a name is not one of dp, tp, pp, cp.
        """
        names = device_mesh.mesh_dim_names
        if not names:
            raise ValueError("DeviceMesh needs mesh_dim_names among ('dp', 'tp', 'pp', 'cp')")
        unknown = [name for name in names if name not in _DIMS]
        if unknown:
            raise ValueError(f"DeviceMesh dim names {unknown} are not among {_DIMS}")
        sizes = {name: device_mesh.size(i) for i, name in enumerate(names)}
        fastest_first = [*reversed(names), *(d for d in _DIMS if d not in names)]
        order = "-".join(fastest_first)
        return cls(**sizes, order=order, skip_pipeline_middle=skip_pipeline_middle)

    @property
    def world_size(self) -> int:
        """Ranks the mesh spans."""
        return self.dp * self.tp * self.pp * self.cp

    def coords(self, rank: int) -> dict[str, int]:
        """Rank ``rank``'s index along each dim, in ``order``."""
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} is outside the mesh of {self.world_size} ranks")
        coords = {}
        for name in self.order.split("-"):
            rank, coords[name] = divmod(rank, getattr(self, name))
        return coords

    def check(self, world_size: int) -> None:
        """Raises ValueError unless the mesh spans exactly ``world_size`` ranks."""
        if self.world_size != world_size:
            raise ValueError(
                f"Mesh dp={self.dp} x tp={self.tp} x pp={self.pp} x cp={self.cp} = "
                f"{self.world_size} ranks, but the world size is {world_size}"
            )

    def needs_data(self, rank: int) -> bool:
        """Whether ``rank`` is a pipeline stage that reads data (the first or the last)."""
        stage = self.coords(rank)["pp"]
        return stage in (0, self.pp - 1)

    def reads_data(self, rank: int) -> bool:
        """Whether ``rank``'s passes read samples: every rank, unless ``skip_pipeline_middle``
        leaves out the stages that :meth:`needs_data` says need none."""
        return not self.skip_pipeline_middle or self.needs_data(rank)

    def to_json(self) -> dict[str, int | str]:
        """The fields a state dict records."""
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "cp": self.cp, "order": self.order}


def data_world(world: World, grouping: int | Mesh | None) -> World:
    """The world of data-parallel ranks that partitions the data for ``world``'s rank.

    ``grouping`` is mosaic's ``replication`` (consecutive ranks act as one) or a :class:`Mesh`.
    A mesh's data world has ``dp`` ranks on as many nodes as there are distinct blocks of
    dp ranks on the physical nodes (one node when the nodes do not hold such blocks).
    """
    if not isinstance(grouping, Mesh):
        return world.replicate(grouping)
    grouping.check(world.num_ranks)
    nodes = _dp_blocks(grouping, world.num_nodes, world.ranks_per_node)
    dp_rank = grouping.coords(world.rank)["dp"]
    return replace(world, num_nodes=nodes, ranks_per_node=grouping.dp // nodes, rank=dp_rank)


@functools.lru_cache(maxsize=16)  # a pass of every DataLoader worker asks again
def _dp_blocks(mesh: Mesh, num_nodes: int, ranks_per_node: int) -> int:
    """How many blocks of consecutive dp ranks the nodes hold, when each node holds all of
    one block (nodes of one tp/cp group or pipeline stage may share one); else 1."""
    blocks = set()
    for node in range(num_nodes):
        ranks = range(node * ranks_per_node, (node + 1) * ranks_per_node)
        blocks.add(tuple(sorted({mesh.coords(rank)["dp"] for rank in ranks})))
    if mesh.dp % len(blocks):  # overlapping sets (a tp group across a node boundary)
        return 1
    size = mesh.dp // len(blocks)
    aligned = {tuple(range(first, first + size)) for first in range(0, mesh.dp, size)}
    return len(blocks) if blocks == aligned else 1


def grouping(mesh: Mesh | None, replication: int | None) -> int | Mesh | None:
    """The one of ``mesh`` and ``replication`` given (ValueError when both are)."""
    if mesh is not None and replication is not None:
        raise ValueError(f"Give mesh ({mesh}) or replication ({replication}), not both")
    return mesh if mesh is not None else replication

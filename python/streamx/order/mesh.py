"""N-D parallel meshes: which ranks share a batch, and which data-parallel rank reads what.

A :class:`Mesh` names the data (``dp``), tensor (``tp``), pipeline (``pp``) and context
(``cp``) parallel sizes. Only the data-parallel rank partitions the data: the ranks of one
tensor- or context-parallel group (and every pipeline stage of one data-parallel replica)
get the same samples, in the order a plain ``dp``-rank run gives its ranks.

Ranks map to coordinates by ``order``, fastest-varying first. The default, ``"tp-cp-dp-pp"``,
is Megatron's: ``rank = tp + TP * (cp + CP * (dp + DP * pp))``. torch's ``DeviceMesh`` is
row-major over its named dims, so its last dim varies fastest: a mesh with
``mesh_dim_names=("pp", "dp", "cp", "tp")`` is this same order (see :meth:`Mesh.from_device_mesh`).
With ``pp == 1`` and the default order, a mesh reads exactly as mosaic's
``replication=tp * cp``; unlike ``replication``, pipeline stages are not split into
different data (mosaic's issue #827).
"""

from __future__ import annotations

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

    Raises:
        ValueError: A size is below 1, or ``order`` is not a permutation of dp, tp, pp, cp.

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

    @classmethod
    def from_device_mesh(cls, device_mesh: _DeviceMeshLike) -> Mesh:
        """The mesh of a torch ``DeviceMesh`` whose dims are named among dp, tp, pp, cp.

        Missing dims have size 1. Row-major over the names: the last name varies fastest.

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
        return cls(**sizes, order="-".join(fastest_first))

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

    def to_json(self) -> dict[str, int | str]:
        """The fields a state dict records."""
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "cp": self.cp, "order": self.order}


def data_world(world: World, grouping: int | Mesh | None) -> World:
    """The world of data-parallel ranks that partitions the data for ``world``'s rank.

    ``grouping`` is mosaic's ``replication`` (consecutive ranks act as one) or a :class:`Mesh`.
    A mesh's data world has ``dp`` ranks; a node keeps its ranks' data-parallel share when
    each pipeline stage spans whole nodes (else the data world is one node).
    """
    if not isinstance(grouping, Mesh):
        return world.replicate(grouping)
    grouping.check(world.num_ranks)
    if grouping.pp == 1 and grouping.order.startswith(("tp-cp", "cp-tp")):
        return world.replicate(grouping.tp * grouping.cp)  # exactly mosaic's replication
    dp_rank = grouping.coords(world.rank)["dp"]
    nodes = world.num_nodes // grouping.pp if world.num_nodes % grouping.pp == 0 else 1
    if nodes < 1 or grouping.dp % nodes:
        nodes = 1
    return replace(world, num_nodes=nodes, ranks_per_node=grouping.dp // nodes, rank=dp_rank)


def grouping(mesh: Mesh | None, replication: int | None) -> int | Mesh | None:
    """The one of ``mesh`` and ``replication`` given (ValueError when both are)."""
    if mesh is not None and replication is not None:
        raise ValueError(f"Give mesh ({mesh}) or replication ({replication}), not both")
    return mesh if mesh is not None else replication

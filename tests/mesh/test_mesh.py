"""Mesh arithmetic and bad input: sizes, rank order, the data world, DeviceMesh names."""

from __future__ import annotations

import pytest

from streamx.order.mesh import Mesh, data_world, grouping
from streamx.order.world import World


def test_megatron_order_coords() -> None:
    mesh = Mesh(dp=2, tp=2, pp=2, cp=2)
    # rank = tp + 2 * (cp + 2 * (dp + 2 * pp))
    assert mesh.coords(0) == {"tp": 0, "cp": 0, "dp": 0, "pp": 0}
    assert mesh.coords(13) == {"tp": 1, "cp": 0, "dp": 1, "pp": 1}
    assert [mesh.needs_data(r) for r in (0, 15)] == [True, True]
    assert not Mesh(dp=1, pp=3).needs_data(1)


def test_pp1_mesh_equals_replication() -> None:
    """With pp == 1 a mesh reads as mosaic's replication = tp * cp, node by node."""
    for rank in range(16):
        world = World(num_nodes=2, ranks_per_node=8, rank=rank)
        assert data_world(world, Mesh(dp=4, tp=2, cp=2)) == world.replicate(4)


def test_pipeline_stages_share_dp_rank() -> None:
    """Unlike replication (mosaic #827), both stages of a dp rank get the same data world."""
    mesh = Mesh(dp=2, tp=2, pp=2)
    worlds = [data_world(World(num_nodes=2, ranks_per_node=4, rank=r), mesh) for r in range(8)]
    assert [w.rank for w in worlds] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert {w.num_ranks for w in worlds} == {2}


def test_device_mesh_names_row_major() -> None:
    class FakeDeviceMesh:  # the two members read; torch's DeviceMesh needs a process group
        mesh_dim_names = ("pp", "dp", "tp")

        def size(self, mesh_dim: int | None = None) -> int:
            return (3, 2, 4)[mesh_dim or 0]

    mesh = Mesh.from_device_mesh(FakeDeviceMesh())
    assert (mesh.dp, mesh.tp, mesh.pp, mesh.cp) == (2, 4, 3, 1)
    assert mesh.order == "tp-dp-pp-cp"
    assert mesh.coords(5) == {"tp": 1, "dp": 1, "pp": 0, "cp": 0}


def test_product_not_world_size_names_sizes() -> None:
    with pytest.raises(ValueError, match=r"dp=2 x tp=2 x pp=1 x cp=2 = 8 ranks.*world size is 4"):
        data_world(World(num_nodes=1, ranks_per_node=4, rank=0), Mesh(dp=2, tp=2, cp=2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"dp": 0}, "Mesh dp"), ({"tp": -1}, "Mesh tp"), ({"order": "tp-dp"}, "Mesh order")],
)
def test_bad_mesh(kwargs: dict[str, int | str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Mesh(**kwargs)  # type: ignore[arg-type]


def test_mesh_and_replication_together() -> None:
    with pytest.raises(ValueError, match="mesh .* or replication"):
        grouping(Mesh(dp=2), 2)

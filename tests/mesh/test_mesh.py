"""Mesh arithmetic and bad input: sizes, rank order, the data world, DeviceMesh names."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_reads_data_only_skips_middle_stages_when_asked() -> None:
    """Stage 1 of 3 needs no data; it reads none only with skip_pipeline_middle."""
    assert [Mesh(dp=2, pp=3).reads_data(r) for r in range(6)] == [True] * 6
    skipping = Mesh(dp=2, pp=3, skip_pipeline_middle=True)
    assert [skipping.reads_data(r) for r in range(6)] == [True, True, False, False, True, True]


def test_pp1_mesh_on_one_node_equals_replication() -> None:
    """On one node, with pp == 1, a mesh reads as mosaic's replication = tp * cp."""
    for rank in range(16):
        world = World(num_nodes=1, ranks_per_node=16, rank=rank)
        assert data_world(world, Mesh(dp=4, tp=2, cp=2)) == world.replicate(4)


def test_nodes_keep_their_dp_blocks() -> None:
    """2 nodes of 8 = dp4 x tp2 x cp2: each node holds dp ranks {0, 1} or {2, 3}, so the data
    world is a plain dp run on 2 nodes of 2 (replication folds them into one node of 4)."""
    mesh = Mesh(dp=4, tp=2, cp=2)
    for rank in range(16):
        world = World(num_nodes=2, ranks_per_node=8, rank=rank)
        assert data_world(world, mesh) == World(num_nodes=2, ranks_per_node=2, rank=rank // 4)
    assert World(num_nodes=2, ranks_per_node=8, rank=0).replicate(4).num_nodes == 1


@pytest.mark.parametrize(
    ("mesh", "nodes", "data_nodes"),
    [
        (Mesh(dp=2, tp=4), 4, 2),  # a tp group spans 2 nodes: both fetch its dp rank's share
        (Mesh(dp=4, tp=2, order="dp-tp-cp-pp"), 2, 1),  # every node holds every dp rank
        (Mesh(dp=3, tp=2), 2, 1),  # nodes hold dp {0, 1} and {1, 2}: not blocks
        (Mesh(dp=2, tp=3), 3, 1),  # {0}, {0, 1} and {1}: a tp group straddles two nodes
    ],
)
def test_data_world_nodes(mesh: Mesh, nodes: int, data_nodes: int) -> None:
    ranks = mesh.world_size // nodes
    for rank in range(mesh.world_size):
        world = data_world(World(num_nodes=nodes, ranks_per_node=ranks, rank=rank), mesh)
        assert (world.num_nodes, world.num_ranks) == (data_nodes, mesh.dp)
        assert world.rank == mesh.coords(rank)["dp"]


def test_pipeline_stages_share_dp_rank() -> None:
    """Unlike replication (mosaic #827), both stages of a dp rank get the same data world."""
    mesh = Mesh(dp=2, tp=2, pp=2)
    worlds = [data_world(World(num_nodes=2, ranks_per_node=4, rank=r), mesh) for r in range(8)]
    assert [w.rank for w in worlds] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert {w.num_ranks for w in worlds} == {2}


_DEVICE_MESH = """
import json
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore
from streamx.order.mesh import Mesh
# torch's own one-process backend for meshes wider than the processes at hand
dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=24)
dm = init_device_mesh("cpu", (3, 2, 4), mesh_dim_names=("pp", "dp", "tp"))
mesh = Mesh.from_device_mesh(dm)
where = {r: dict(zip(dm.mesh_dim_names, (dm.mesh == r).nonzero()[0].tolist())) for r in range(24)}
skipping = Mesh.from_device_mesh(dm, skip_pipeline_middle=True)
print(json.dumps({"sizes": [mesh.dp, mesh.tp, mesh.pp, mesh.cp], "order": mesh.order,
                  "ours": {r: mesh.coords(r) for r in range(24)}, "torch": where,
                  "reads": [skipping.reads_data(r) for r in range(24)]}))
"""


def test_device_mesh_names_row_major() -> None:
    """A real DeviceMesh (24 ranks on torch's fake process group, in a child process): the
    sizes come from its named dims, every rank's coordinates equal torch's own layout, and
    with skip_pipeline_middle only its first and last pp stages read."""
    run = subprocess.run(
        [sys.executable, "-c", _DEVICE_MESH], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["sizes"] == [2, 4, 3, 1]
    assert got["order"] == "tp-dp-pp-cp"
    for rank, coords in got["torch"].items():
        assert got["ours"][rank] == {**coords, "cp": 0}, rank
        # skip_pipeline_middle passes through: only torch's stages 0 and 2 read.
        assert got["reads"][int(rank)] == (coords["pp"] != 1), rank


def test_product_not_world_size_names_sizes() -> None:
    with pytest.raises(ValueError, match=r"dp=2 x tp=2 x pp=1 x cp=2 = 8 ranks.*world size is 4"):
        data_world(World(num_nodes=1, ranks_per_node=4, rank=0), Mesh(dp=2, tp=2, cp=2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dp": 0}, "Mesh dp"),
        ({"tp": -1}, "Mesh tp"),
        ({"order": "tp-dp"}, "Mesh order"),
        ({"skip_pipeline_middle": 1}, "Mesh skip_pipeline_middle must be a bool, got 1"),
    ],
)
def test_bad_mesh(kwargs: dict[str, int | str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Mesh(**kwargs)  # type: ignore[arg-type]


def test_mesh_and_replication_together() -> None:
    with pytest.raises(ValueError, match="mesh .* or replication"):
        grouping(Mesh(dp=2), 2)

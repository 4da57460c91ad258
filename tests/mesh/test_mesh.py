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
print(json.dumps({"sizes": [mesh.dp, mesh.tp, mesh.pp, mesh.cp], "order": mesh.order,
                  "ours": {r: mesh.coords(r) for r in range(24)}, "torch": where}))
"""


def test_device_mesh_names_row_major() -> None:
    """A real DeviceMesh (24 ranks on torch's fake process group, in a child process): the
    sizes come from its named dims, and every rank's coordinates equal torch's own layout."""
    run = subprocess.run(
        [sys.executable, "-c", _DEVICE_MESH], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["sizes"] == [2, 4, 3, 1]
    assert got["order"] == "tp-dp-pp-cp"
    for rank, coords in got["torch"].items():
        assert got["ours"][rank] == {**coords, "cp": 0}, rank


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

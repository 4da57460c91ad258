"""One rank of a mesh job: joins a gloo group, reads one epoch, gathers every rank's ids."""

from __future__ import annotations

import json
import sys

import torch.distributed as dist

import streamx
from streamx.order.mesh import Mesh


def main() -> None:
    local, remote, out, mesh_json, ds_json = sys.argv[1:6]
    dist.init_process_group("gloo")
    sizes = json.loads(mesh_json)
    mesh = Mesh(**sizes) if sizes else None
    options = json.loads(ds_json)
    dataset = streamx.StreamingDataset(local=local, remote=remote or None, mesh=mesh, **options)
    ids = [int(sample["id"]) for sample in dataset]
    gathered: list[list[int] | None] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, ids)
    if dist.get_rank() == 0:
        with open(out, "w") as file:
            json.dump(gathered, file)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

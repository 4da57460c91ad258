"""One rank of a mesh job: joins a gloo group, reads one epoch, gathers every rank's ids.

With a sixth argument ``first:K:STATE``, it reads only ``K`` samples and rank 0 saves the
dataset's resumption state to ``STATE`` (``K`` x the dp size global samples); with
``rest:STATE`` it loads that state first and reads what is left of the epoch; with
``workers:N`` it reads the epoch through a ``StreamingDataLoader`` of ``N`` worker processes."""

from __future__ import annotations

import itertools
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
    phase = sys.argv[6].split(":") if len(sys.argv) > 6 else ["all"]
    if phase[0] == "rest":
        with open(phase[1]) as file:
            dataset.load_state_dict(json.load(file))
    if phase[0] == "workers":  # through a loader with that many worker processes
        loader = streamx.StreamingDataLoader(
            dataset, batch_size=options["batch_size"], num_workers=int(phase[1])
        )
        ids = [int(i) for batch in loader for i in batch["id"]]
    else:
        samples = itertools.islice(dataset, int(phase[1])) if phase[0] == "first" else dataset
        ids = [int(sample["id"]) for sample in samples]
    if phase[0] == "first" and dist.get_rank() == 0:
        dp = mesh.dp if mesh is not None else dist.get_world_size()
        with open(phase[2], "w") as file:
            json.dump(dataset.state_dict(int(phase[1]) * dp, False), file)
    gathered: list[list[int] | None] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, ids)
    if dist.get_rank() == 0:
        with open(out, "w") as file:
            json.dump(gathered, file)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""One rank of a mesh job on simulated nodes (torchrun's variables, no process group).

It reads epoch 0 through ``iter(dataset)`` and epoch 1 through a ``StreamingDataLoader``
(read in this process), takes the state 8 global samples into epoch 1, loads it into a
new instance (a restarted job) and reads the rest of that epoch. It writes what it saw to
``OUT/rank<R>.json``.

Usage: ``stage_rank.py LOCAL REMOTE OUT MESH_JSON DATASET_JSON``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import streamx
from streamx.order.mesh import Mesh
from streamx.torch.dataloader import StreamingDataLoader

RESUME_AT = 8  # global samples into epoch 1: whole batches of every dp rank


def main() -> None:
    local, remote, out, mesh_json, ds_json = sys.argv[1:6]
    mesh = Mesh(**json.loads(mesh_json))
    options = json.loads(ds_json)
    dataset = streamx.StreamingDataset(local=local, remote=remote, mesh=mesh, **options)
    epoch0 = [int(sample["id"]) for sample in dataset]
    loader = StreamingDataLoader(dataset, batch_size=options["batch_size"])
    epoch1 = [int(i) for batch in loader for i in batch["id"]]
    state = dataset.state_dict(RESUME_AT, True)
    # A restarted job: this instance is past epoch 1, so the state would be stale here.
    resumed = streamx.StreamingDataset(local=local, remote=remote, mesh=mesh, **options)
    resumed.load_state_dict(state)
    rest = [int(sample["id"]) for sample in resumed]
    seen = {
        "epoch0": epoch0,
        "epoch1": epoch1,
        "rest": rest,
        "state": state,
        "after": resumed.state_dict(0, False),
    }
    rank = int(os.environ["RANK"])
    Path(out, f"rank{rank}.json").write_text(json.dumps(seen))


if __name__ == "__main__":
    main()

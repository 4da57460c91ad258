"""One rank of a mixture job (a real process, torch.distributed on gloo): reads a
``MixedDataset`` over the MDS sources through a ``StreamingDataLoader`` with the per-rank
batch ``global_batch_size / world`` and ``workers`` workers, and writes each batch's uids
(``"sequences"``) and, after ``stop`` batches, its state, as JSON.

    python mixed_rank.py <sources dir> <out json> <config json> [<state json to load>]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch.distributed as dist
from mixture_data import collate_uids, mixed, uids

from streamx import StreamingDataLoader


def main() -> None:
    root, out, config = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    dist.init_process_group("gloo")
    stop = config.pop("stop", None)
    workers = config.pop("workers")
    points = config.pop("points")
    data = mixed(root, points, **config)
    batch = config["global_batch_size"] // dist.get_world_size()
    loader = StreamingDataLoader(
        data,
        batch_size=batch,
        num_workers=workers,
        collate_fn=collate_uids,
        multiprocessing_context="fork" if workers else None,
    )
    if len(sys.argv) > 4:
        loader.load_state_dict(json.loads(Path(sys.argv[4]).read_text()))
    got = []
    for b in loader:
        got.append(uids(b))
        if stop is not None and len(got) == stop:
            break
    with open(out, "w") as f:
        json.dump({"sequences": got, "state": loader.state_dict()}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

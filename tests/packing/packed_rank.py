"""One rank of a packing job (run as a real process, torch.distributed on gloo): packs the MDS
token dataset and writes the sequences it got, and its state after ``stop`` of them, as JSON.
With ``workers`` in the config, the rank reads through a ``StreamingDataLoader`` with that
many DataLoader workers (``batch_size=None``: one sequence a batch) and saves its state;
``"source": "streaming"`` reads the documents as a ``StreamingDataset``, not a ``LocalDataset``.

    python packed_rank.py <mds dir> <out json> <config json> [<state json to load>]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

import torch.distributed as dist

from streamx import LocalDataset, PackedDataset, StreamingDataLoader, StreamingDataset


def main() -> None:
    local, out, config = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    dist.init_process_group("gloo")
    stop = config.pop("stop", None)
    workers = config.pop("workers", None)
    # "streaming": the documents are a StreamingDataset (whose len is this rank's share).
    if config.pop("source", "local") == "streaming":
        documents: LocalDataset | StreamingDataset = StreamingDataset(local=local, batch_size=1)
    else:
        documents = LocalDataset(local)
    packed = PackedDataset(documents, **config)
    loader = None
    if workers is not None:
        loader = StreamingDataLoader(packed, batch_size=None, num_workers=workers)
    if len(sys.argv) > 4:
        with open(sys.argv[4]) as f:
            (packed if loader is None else loader).load_state_dict(json.load(f))
    items: Iterable[Any] = packed if loader is None else loader
    got = []
    for seq in items:  # a sequence handed out counts as consumed: stop right after one
        got.append(seq["input_ids"][: seq["num_tokens"]].tolist())
        if stop is not None and len(got) == stop:
            break
    state = packed.state_dict() if loader is None else loader.state_dict()
    with open(out, "w") as f:
        json.dump({"sequences": got, "state": state}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""One rank of a real multi-process run that stops or resumes: ``first`` iterates ``K``
samples and (rank 0) saves the dataset's resumption state; ``rest`` loads that state (at
another world size) and iterates what is left. Writes the ids it saw."""

from __future__ import annotations

import itertools
import json
import os
import sys
from typing import Any

from streamx import ParquetStream, Stream, StreamingDataset, WebDatasetStream


def main(kind: str, source: str, local: str, out: str, phase: str, state: str, k: str) -> None:
    stream: Stream
    if kind == "parquet":
        stream = ParquetStream(remote=source, local=local, columns=["id"])
    elif kind == "wds":
        stream = WebDatasetStream(remote=source, local=local)
    else:
        stream = Stream(local=source)
    ds = StreamingDataset(
        streams=[stream], shuffle=True, shuffle_seed=11, batch_size=4, num_canonical_nodes=8
    )
    if phase == "first":
        ids = [_id(s) for s in itertools.islice(ds, int(k))]
        if os.environ["RANK"] == "0":
            world = int(os.environ["WORLD_SIZE"])
            with open(state, "w") as f:
                json.dump(ds.state_dict(int(k) * world, False), f)
    else:
        with open(state) as f:
            ds.load_state_dict(json.load(f))
        ids = [_id(s) for s in ds]
    with open(out, "w") as f:
        json.dump(ids, f)


def _id(sample: dict[str, Any]) -> int:
    return int(sample["cls" if "cls" in sample else "id"])


if __name__ == "__main__":
    main(*sys.argv[1:8])

"""One rank of a real multi-process run that stops or resumes: ``first`` iterates ``K``
samples and (rank 0) saves the dataset's resumption state; ``rest`` loads that state (at
another world size) and iterates what is left. Writes the ids it saw."""

from __future__ import annotations

import itertools
import json
import os
import sys

from rank_dataset import rank_dataset, sample_id


def main(kind: str, source: str, local: str, out: str, phase: str, state: str, k: str) -> None:
    ds = rank_dataset(kind, source, local)
    if phase == "first":
        ids = [sample_id(s) for s in itertools.islice(ds, int(k))]
        if os.environ["RANK"] == "0":
            world = int(os.environ["WORLD_SIZE"])
            with open(state, "w") as f:
                json.dump(ds.state_dict(int(k) * world, False), f)
    else:
        with open(state) as f:
            ds.load_state_dict(json.load(f))
        ids = [sample_id(s) for s in ds]
    with open(out, "w") as f:
        json.dump(ids, f)


if __name__ == "__main__":
    main(*sys.argv[1:8])

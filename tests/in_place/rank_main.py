"""One rank of a real multi-process run: iterates a Parquet or MDS dataset, writes its ids."""

from __future__ import annotations

import json
import sys

from streamx import ParquetStream, Stream, StreamingDataset


def main(kind: str, source: str, local: str, out: str) -> None:
    stream: Stream
    if kind == "parquet":
        stream = ParquetStream(remote=source, local=local, columns=["id"])
    else:
        stream = Stream(local=source)
    ds = StreamingDataset(
        streams=[stream], shuffle=True, shuffle_seed=11, batch_size=4, num_canonical_nodes=8
    )
    with open(out, "w") as f:
        json.dump([int(s["id"]) for s in ds], f)


if __name__ == "__main__":
    main(*sys.argv[1:5])

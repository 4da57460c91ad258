"""One rank of a real multi-process run: iterates a Parquet, tar or MDS dataset, writes its ids."""

from __future__ import annotations

import json
import sys
from typing import Any

from streamx import ParquetStream, Stream, StreamingDataset, WebDatasetStream


def main(kind: str, source: str, local: str, out: str) -> None:
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
    with open(out, "w") as f:
        json.dump([_id(s) for s in ds], f)


def _id(sample: dict[str, Any]) -> int:
    return int(sample["cls" if "cls" in sample else "id"])


if __name__ == "__main__":
    main(*sys.argv[1:5])

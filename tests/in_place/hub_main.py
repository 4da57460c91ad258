"""A real process reading an ``hf://`` source in place through ``HF_ENDPOINT``: prints the
ids it streamed (shuffled, seed 5) and the shard sizes as JSON, or the error it raised."""

from __future__ import annotations

import json
import sys

from streamx import ParquetStream, Stream, StreamingDataset, WebDatasetStream


def main(kind: str, source: str, local: str) -> None:
    stream: Stream
    if kind == "parquet":
        stream = ParquetStream(remote=source, local=local, columns=["id", "text"])
    elif kind == "narrow":  # two narrow columns of a wide table
        stream = ParquetStream(remote=source, local=local, columns=["id", "w0"])
    else:
        stream = WebDatasetStream(remote=source, local=local)
    try:
        ds = StreamingDataset(streams=[stream], shuffle=True, shuffle_seed=5, batch_size=4)
        ids = [int(s["id"] if "id" in s else s["cls"]) for s in ds]
        texts_match = all(s["text"] == f"row {s['id']}" for s in ds) if kind == "parquet" else True
        if kind == "narrow":
            texts_match = all(s["w0"] == 2 * s["id"] for s in ds)
        print(json.dumps({"ids": ids, "shards": ds.samples_per_shard.tolist(), "ok": texts_match}))
    except Exception as err:  # reported to the test, which checks type and message
        print(json.dumps({"error": type(err).__name__, "message": str(err)}))


if __name__ == "__main__":
    main(*sys.argv[1:4])

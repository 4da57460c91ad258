"""The dataset every rank of the multi-process in-place tests reads, and a sample's id."""

from __future__ import annotations

from typing import Any

from streamx import LitDataStream, ParquetStream, Stream, StreamingDataset, WebDatasetStream


def rank_dataset(kind: str, source: str, local: str) -> StreamingDataset:
    """``source`` as Parquet, tars (``wds``), LitData or MDS, shuffled as every run is."""
    stream: Stream
    if kind == "parquet":
        stream = ParquetStream(remote=source, local=local, columns=["id"])
    elif kind == "wds":
        stream = WebDatasetStream(remote=source, local=local)
    elif kind == "litdata":
        stream = LitDataStream(remote=source, local=local)
    else:
        stream = Stream(local=source)
    return StreamingDataset(
        streams=[stream], shuffle=True, shuffle_seed=11, batch_size=4, num_canonical_nodes=8
    )


def sample_id(sample: dict[str, Any]) -> int:
    return int(sample["cls" if "cls" in sample else "id"])

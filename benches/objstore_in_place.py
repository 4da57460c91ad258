"""streamx reading the peers' own copies in place, for ``bench_objstore.py``: WebDataset's
tars (by brace notation, or through a wids shard index written beside them) and LitData's
chunks."""

from __future__ import annotations

from typing import Any

import wds_peer

IN_PLACE_LIBS = ("streamx-wds", "streamx-wds-index", "streamx-lit")


class _WdsFields:
    """A batch of samples read from WebDataset's tars, named as the bench's fields."""

    def __init__(self, workload: str) -> None:
        self.names = wds_peer.EXTENSIONS[workload]

    def __call__(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{f: s[f"{f}.{ext}"] for f, ext in self.names.items()} for s in batch]


def _wds_fields(spec: dict[str, Any]) -> _WdsFields:
    if spec.get("collate") == "default":
        raise ValueError("streamx-wds runs with the identity collation only")
    return _WdsFields(spec["workload"])


def in_place_loader(
    spec: dict[str, Any], bucket: str, batch: int, workers: int, collate: dict[str, Any]
) -> Any:
    """streamx's loader over the peer's copy that ``spec["lib"]`` names."""
    if spec["lib"] == "streamx-lit":
        import streamx

        stream = streamx.LitDataStream(
            remote=f"s3://{bucket}/litdata-{spec['workload']}", local=spec["local"]
        )
        ds = streamx.StreamingDataset(streams=[stream], batch_size=batch, shuffle=False)
        return streamx.StreamingDataLoader(ds, batch_size=batch, num_workers=workers, **collate)
    if spec["lib"] in ("streamx-wds", "streamx-wds-index"):
        import streamx

        count = len(spec["wds_shards"])
        names = f"shard-{{000000..{count - 1:06d}}}.tar"
        if spec["lib"] == "streamx-wds-index":
            names = "index.json"
        tars = streamx.WebDatasetStream(
            remote=f"s3://{bucket}/wds-{spec['workload']}/{names}", local=spec["local"]
        )
        ds = streamx.StreamingDataset(streams=[tars], batch_size=batch, shuffle=False)
        return streamx.StreamingDataLoader(
            ds, batch_size=batch, num_workers=workers, collate_fn=_wds_fields(spec)
        )
    raise ValueError(f"not an in-place reader: {spec['lib']}")


WDS_COLUMNS = [
    ("streamx_wds_sps", "streamx on the tars samples/s", ",.0f"),
    ("wds_vs_webdataset", "tars: vs WebDataset", ".2f"),
    ("wds_vs_litdata", "tars: vs LitData", ".2f"),
    ("streamx_wds_ttfs", "streamx on the tars TTFS s", ".2f"),
    ("streamx_wds_index_sps", "tars + wids index samples/s", ",.0f"),
    ("wds_index_vs_webdataset", "tars + index: vs WebDataset", ".2f"),
    ("wds_index_vs_litdata", "tars + index: vs LitData", ".2f"),
    ("streamx_wds_index_ttfs", "tars + index TTFS s", ".2f"),
]
LIT_COLUMNS = [
    ("streamx_lit_sps", "streamx on LitData's chunks samples/s", ",.0f"),
    ("lit_vs_litdata", "chunks: vs LitData", ".2f"),
    ("streamx_lit_ttfs", "streamx on LitData's chunks TTFS s", ".2f"),
]

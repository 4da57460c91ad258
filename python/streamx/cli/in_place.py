"""``streamx inspect`` and ``verify`` over sources read in place: Parquet files and
WebDataset tars (which targets are, :mod:`streamx.format.in_place` decides)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from streamx.format.in_place import Kind, in_place_kind
from streamx.format.index import ShardInfo

if TYPE_CHECKING:
    from streamx.dataset.streaming import StreamingDataset

__all__ = ["FORMATS", "Kind", "check_format", "in_place_kind", "in_place_summary"]

FORMATS = ("auto", "mds", "parquet", "wds", "litdata")


def check_format(given: str) -> None:
    """Refuses a ``--format`` that ``inspect`` and ``verify`` do not know.

    Raises:
        typer.BadParameter: Listing the formats.
    """
    if given not in FORMATS:
        listed = f"{', '.join(FORMATS[:-1])} or {FORMATS[-1]}"
        raise typer.BadParameter(f"--format must be {listed}: {given}")


def _dataset(target: str, kind: Kind, scratch: str) -> StreamingDataset:
    """``target`` as one stream (imported here: torch loads with the dataset)."""
    from streamx.dataset.litdata_stream import LitDataStream
    from streamx.dataset.parquet_stream import ParquetStream
    from streamx.dataset.streaming import StreamingDataset
    from streamx.dataset.webdataset_stream import WebDatasetStream

    streams = {"parquet": ParquetStream, "wds": WebDatasetStream, "litdata": LitDataStream}
    stream = streams[kind](remote=target, local=scratch)
    return StreamingDataset(streams=[stream], batch_size=1)


def _columns(kind: Kind, shards: list[ShardInfo], first: dict[str, Any] | None) -> list[Any]:
    if kind == "parquet":
        types = shards[0].extra["columns"] if shards else {}
        return [{"name": n, "encoding": t, "size": None} for n, t in types.items()]
    if kind == "litdata":  # a sample's keys and the types they come back as
        leaves = first if isinstance(first, dict) else {}
        return [{"name": n, "encoding": type(v).__name__, "size": None} for n, v in leaves.items()]
    fields = [k for k in first or {} if not k.startswith("__")]
    return [{"name": n, "encoding": n.rsplit(".", 1)[-1], "size": None} for n in fields]


def in_place_summary(target: str, kind: Kind, samples: int, scratch: str) -> dict[str, Any]:
    """What ``target`` holds, as ``inspect --json`` reports a split, plus up to ``samples``
    decoded samples (which fetches the shards they lie in)."""
    dataset = _dataset(target, kind, scratch)
    shards = list(dataset.shards)
    shown = [dataset[i] for i in range(min(samples, dataset.num_samples))]
    first = shown[0] if shown else (dataset[0] if kind != "parquet" and shards else None)
    sizes = [s.raw_data.bytes for s in shards]
    return {
        "split": "",
        "format_version": None,
        "formats": [kind],
        "shards": len(shards),
        "samples": int(dataset.num_samples),
        "raw_bytes": sum(sizes),
        "zip_bytes": None,
        "largest_shard_raw_bytes": max(sizes, default=0),
        "largest_shard_zip_bytes": None,
        "compression": ["none"],
        "hashes": [],
        "size_limit": None,
        "columns": _columns(kind, shards, first),
        "schemas": 1,
        "decoded": shown,
    }


def in_place_problems(
    target: str, kind: Kind, scratch: str, quick: bool
) -> tuple[int, int, list[tuple[str, int | None, str]]]:
    """Reads ``target``'s metadata and, unless ``quick``, decodes every sample, shard by
    shard. Returns the shard and sample counts and ``(shard, sample, problem)`` for each
    shard that failed (its first failure; the rest of that shard is skipped)."""
    from streamx.exceptions import StreamxError

    dataset = _dataset(target, kind, scratch)
    shards = list(dataset.shards)
    problems: list[tuple[str, int | None, str]] = []
    first = 0
    for shard in shards:
        name = shard.raw_data.basename
        if kind == "parquet":
            name = f"{shard.extra['source']} row group {shard.extra['row_group']}"
        else:
            name = str(shard.extra["source"])
        if not quick:
            for local in range(shard.samples):
                try:
                    dataset[first + local]
                except (StreamxError, OSError, ValueError) as err:
                    problems.append((name, local, f"{type(err).__name__}: {err}"))
                    break
        first += shard.samples
    return len(shards), int(dataset.num_samples), problems

"""WebDataset 1.0.2 as a peer of the reading benches: tar shards written by its
``ShardWriter``, read by ``WebDataset`` through torch's ``DataLoader``.

Samples carry the same fields as the MDS and LitData copies (``label``/``data`` for img,
``tokens`` for tokens, ``id``/``text`` for text), stored under the extensions WebDataset's
default decoders read back to the same types: ``.cls`` (int), ``.bin`` (bytes), ``.npy``
(numpy array), ``.txt`` (str). Shards are split between DataLoader workers by WebDataset
itself (``split_by_worker``), so its order is shard-interleaved: the benches check it reads
every sample once, not mosaic's order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Field -> extension, per workload.
EXTENSIONS = {
    "img": {"label": "cls", "data": "bin"},
    "tokens": {"tokens": "npy"},
    "text": {"id": "cls", "text": "txt"},
}


def write(out: str, workload: str, samples: Iterator[dict[str, Any]], shard_bytes: int) -> None:
    """Writes ``samples`` as tar shards of at most ``shard_bytes`` into ``out``."""
    import webdataset as wds

    Path(out).mkdir(parents=True, exist_ok=True)
    names = EXTENSIONS[workload]
    pattern = str(Path(out) / "shard-%06d.tar")
    with wds.ShardWriter(pattern, maxsize=shard_bytes, maxcount=1 << 40, verbose=0) as sink:
        for i, sample in enumerate(samples):
            record = {"__key__": f"{i:09d}"}
            for field, value in sample.items():
                record[f"{field}.{names[field]}"] = value
            sink.write(record)


def shard_urls(base: str, out: Path) -> list[str]:
    """The URLs of the shards in ``out`` (written by :func:`write`), under ``base``."""
    return [f"{base}/{p.name}" for p in sorted(out.glob("shard-*.tar"))]


class _Fields:
    """Maps a decoded WebDataset sample to the bench's field names (a picklable callable)."""

    def __init__(self, workload: str) -> None:
        self.names = EXTENSIONS[workload]

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        return {field: sample[f"{field}.{ext}"] for field, ext in self.names.items()}


def dataset(urls: list[str], workload: str) -> Any:
    """The ``WebDataset`` pipeline over ``urls``, in shard order, decoded to the fields."""
    import webdataset as wds

    return (
        wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode().map(_Fields(workload))
    )


def loader(urls: list[str], workload: str, batch: int, workers: int, **kwargs: Any) -> Any:
    """torch's ``DataLoader`` over :func:`dataset` (torch's default collation unless
    ``kwargs`` passes a ``collate_fn``)."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset(urls, workload), batch_size=batch, num_workers=workers, **kwargs)

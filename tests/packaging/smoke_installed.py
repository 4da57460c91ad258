"""Runs inside a fresh venv with streamx installed: write a dataset, read it back, report.

Prints one JSON line: where streamx was imported from and the versions it reports. With
``--torch`` it also reads the dataset through a two-worker torch DataLoader.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import streamx

NUM_SAMPLES = 300


def write(out: Path) -> None:
    columns = {"id": "int", "x": "ndarray:float32:4", "text": "str", "blob": "bytes"}
    with streamx.MDSWriter(
        out=str(out), columns=columns, compression="zstd", hashes=["sha1"], size_limit=4096
    ) as writer:
        for i in range(NUM_SAMPLES):
            x = np.arange(4, dtype=np.float32) + i
            writer.write({"id": i, "x": x, "text": f"sample {i}", "blob": bytes([i % 256]) * 7})


def check(sample: dict[str, Any]) -> int:
    i = int(sample["id"])
    assert sample["text"] == f"sample {i}", sample
    assert sample["blob"] == bytes([i % 256]) * 7, sample
    assert np.array_equal(sample["x"], np.arange(4, dtype=np.float32) + i), sample
    return i


def read_plain(local: Path) -> None:
    dataset = streamx.StreamingDataset(local=str(local), shuffle=True, shuffle_seed=7, batch_size=4)
    assert len(dataset) == NUM_SAMPLES
    ids = [check(sample) for sample in dataset]
    assert sorted(ids) == list(range(NUM_SAMPLES)), "every sample exactly once"
    assert ids != sorted(ids), "shuffled"


def read_torch(local: Path) -> str:
    import torch

    from streamx.torch.dataloader import StreamingDataLoader

    dataset = streamx.StreamingDataset(local=str(local), shuffle=True, batch_size=5)
    loader = StreamingDataLoader(dataset, batch_size=5, num_workers=2)
    ids: list[int] = []
    for batch in loader:
        assert isinstance(batch["id"], torch.Tensor)
        ids.extend(int(i) for i in batch["id"])
    assert sorted(ids) == list(range(NUM_SAMPLES)), "every sample exactly once"
    return str(torch.__version__)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp, "data"))
        read_plain(Path(tmp, "data"))
        torch_version = read_torch(Path(tmp, "data")) if "--torch" in sys.argv else None
    report = {
        "file": streamx.__file__,
        "prefix": sys.prefix,
        "version": streamx.__version__,
        "metadata_version": metadata.version("streamx-data"),
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "torch": torch_version,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()

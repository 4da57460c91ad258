"""WebDataset tars for the tests, written with Python's own ``tarfile``."""

from __future__ import annotations

import io
import json
import os
import tarfile

import numpy as np


def fields(i: int) -> dict[str, bytes]:
    """Sample ``i``'s members: a label, JSON, text, an array and bytes of an unknown kind."""
    buf = io.BytesIO()
    np.save(buf, np.arange(i % 4 + 1, dtype=np.int32) * i)
    return {
        "cls": str(i).encode(),
        "json": json.dumps({"id": i, "tags": ["a"] * (i % 3)}).encode(),
        "txt": f"row {i}".encode(),
        "npy": buf.getvalue(),
        "seg.bin": np.random.default_rng(i).bytes(100 + i % 50),
    }


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    tar.addfile(info, io.BytesIO(data))


def tar_bytes(ids: range, form: int = tarfile.GNU_FORMAT) -> bytes:
    """A tar of samples ``ids``, keyed ``sample-00042``, as ``tarfile`` writes it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=form) as tar:
        for i in ids:
            for ext, data in fields(i).items():
                add(tar, f"sample-{i:05d}.{ext}", data)
    return buf.getvalue()


def write_tars(folder: str, sizes: list[int]) -> None:
    """One tar per entry of ``sizes``, ids numbered on across them."""
    os.makedirs(folder, exist_ok=True)
    start = 0
    for number, size in enumerate(sizes):
        with open(os.path.join(folder, f"shard-{number:04d}.tar"), "wb") as f:
            f.write(tar_bytes(range(start, start + size)))
        start += size

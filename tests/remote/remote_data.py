"""Deterministic datasets for the remote tests: written once, checked sample by sample."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

COLUMNS = {"id": "int", "blob": "bytes", "tokens": "ndarray:int32:16"}


def sample(i: int, blob_bytes: int = 600) -> dict[str, Any]:
    """Sample ``i``: its id, a blob whose length and content depend on ``i``, and tokens."""
    seed = hashlib.blake2s(str(i).encode(), digest_size=8).digest()
    size = blob_bytes + (i * 37) % 200
    blob = (seed * (size // len(seed) + 1))[:size]
    tokens = (np.arange(16, dtype=np.int32) * 7 + i).astype(np.int32)
    return {"id": i, "blob": blob, "tokens": tokens}


def write(
    out: str | tuple[str, str],
    count: int,
    *,
    compression: str | None = "zstd",
    hashes: tuple[str, ...] = ("sha1", "xxh64"),
    size_limit: int = 8_000,
    blob_bytes: int = 600,
    first: int = 0,
    **kwargs: Any,
) -> Any:
    """Writes samples ``first .. first + count`` with ``streamx.MDSWriter``; returns the writer."""
    import streamx

    with streamx.MDSWriter(
        out=out,
        columns=COLUMNS,
        compression=compression,
        hashes=list(hashes),
        size_limit=size_limit,
        **kwargs,
    ) as writer:
        for i in range(first, first + count):
            writer.write(sample(i, blob_bytes))
    return writer


def check(got: dict[str, Any], blob_bytes: int = 600) -> int:
    """Asserts ``got`` is exactly the sample its id names; returns the id."""
    i = int(got["id"])
    want = sample(i, blob_bytes)
    assert bytes(got["blob"]) == want["blob"], f"sample {i}: blob differs"
    np.testing.assert_array_equal(np.asarray(got["tokens"]), want["tokens"])
    return i


def ids_of_batches(batches: Any, blob_bytes: int = 600) -> list[int]:
    """Ids of every sample in DataLoader batches (collated to lists), each value checked."""
    out: list[int] = []
    for batch in batches:
        for got in batch:
            out.append(check(got, blob_bytes))
    return out


def list_collate(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keeps a batch as a list of sample dicts (bytes columns do not collate)."""
    return batch

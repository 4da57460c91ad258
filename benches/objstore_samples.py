"""The samples of the ``img`` and ``tokens`` workloads (``bench_objstore.py`` and
``bench_dataloader.py``), and the checks that each epoch read them back whole: ``img`` (about
100 KB of bytes and an int label) and ``tokens`` (``uint32[2048]``, the first token the
sample's id)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "CHECK_EVERY",
    "blob_pool",
    "check_token_columns",
    "expected_tokens",
    "make_sample",
]


def blob_pool(seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(int(rng.integers(90_000, 110_000))) for _ in range(32)]


def _tokens(i: int) -> np.ndarray[Any, np.dtype[np.uint32]]:
    tokens = np.random.default_rng(i).integers(0, 50_257, 2048, dtype=np.uint32)
    tokens[0] = i
    return tokens


_POOL: list[bytes] = []


def make_sample(workload: str, i: int) -> dict[str, Any]:
    if workload == "img":
        if not _POOL:
            _POOL.extend(blob_pool())
        return {"label": i, "data": _POOL[i % len(_POOL)]}
    return {"tokens": _tokens(i)}


# Every CHECK_EVERY-th token sample is compared whole with what was written.
CHECK_EVERY = 97


def expected_tokens(count: int) -> dict[int, np.ndarray[Any, np.dtype[np.uint32]]]:
    """The samples compared whole, made before the clock starts: generating one costs the
    training process more than a fast loader spends reading a whole batch."""
    return {i: _tokens(i) for i in range(0, count, CHECK_EVERY)}


def check_token_columns(
    tokens: np.ndarray[Any, Any],
    seen: np.ndarray[Any, Any],
    expected: dict[int, np.ndarray[Any, Any]],
) -> bool:
    """The per-sample token checks of :func:`epoch`, on a collated batch at once (the same
    checks for every library; per sample they cost the training process as much as a
    fast loader's own work). A sample repeated within one batch is counted once here; the
    epoch's total count catches it."""
    if tokens.shape[1:] != (2048,):
        return False
    ids = tokens[:, 0].astype(np.int64)  # uint32: never negative
    try:
        seen[ids] += 1
    except IndexError:  # an id past the dataset
        return False
    rows = np.flatnonzero(ids % CHECK_EVERY == 0).tolist()
    return all(np.array_equal(tokens[row], expected[int(ids[row])]) for row in rows)

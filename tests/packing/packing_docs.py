"""Helpers of the packing tests: MDS token documents with a realistic length mix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from streamx import MDSWriter


def write_docs(out: Path, lengths: list[int], seed: int = 0) -> list[NDArray[np.int32]]:
    """Writes one document per length (token ids from ``seed``) and returns them."""
    rng = np.random.default_rng(seed)
    docs = [rng.integers(1, 50_000, size=n, dtype=np.int32) for n in lengths]
    with MDSWriter(out=str(out), columns={"tokens": "ndarray:int32"}, size_limit=1 << 16) as w:
        for doc in docs:
            w.write({"tokens": doc})
    return docs


def doc_lengths(n: int, seed: int = 1) -> list[int]:
    """A realistic long-tailed (log-normal) length distribution, capped at 2048."""
    rng = np.random.default_rng(seed)
    return [int(x) for x in np.clip(rng.lognormal(5.5, 1.0, size=n), 1, 2048)]

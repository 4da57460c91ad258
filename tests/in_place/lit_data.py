"""LitData optimized datasets for the tests, written by ``litdata.optimize`` itself."""

from __future__ import annotations

import functools
import io
from typing import Any

import numpy as np


def sample(i: int, images: bool = True) -> dict[str, Any]:
    """Sample ``i``: every leaf format LitData's default loader writes for these types."""
    import torch
    from PIL import Image

    row: dict[str, Any] = {
        "id": i,
        "text": f"row {i}",
        "score": i / 4,
        "flag": bool(i % 2),
        "blob": bytes([i % 256]) * (i % 7),
        "vec": np.arange(i % 5, dtype=np.int32) * i,
        "grid": np.full((2, 3), i, dtype=np.float64),
        "tokens": torch.arange(4, dtype=torch.int64) + i,
        "mask": torch.ones((2, 2), dtype=torch.bool),
        "nested": {"pair": (i, f"{i}")},
    }
    if images:
        row["pil"] = Image.new("RGB", (5, 4), (i % 256, 7, 9))
        jpeg = io.BytesIO()
        Image.new("RGB", (8, 8), (200, 30, i % 256)).save(jpeg, format="JPEG")
        row["jpeg"] = Image.open(io.BytesIO(jpeg.getvalue()))
    return row


def _optimize(fn: Any, out: str, count: int, chunk_size: int) -> None:
    """``fn(i)`` for ``i < count`` in chunks of ``chunk_size``, by one LitData worker."""
    import litdata

    litdata.optimize(
        fn=fn,
        inputs=list(range(count)),
        output_dir=out,
        chunk_size=chunk_size,
        num_workers=1,
        mode="overwrite",
        verbose=False,
    )


def write_litdata(out: str, count: int, chunk_size: int, images: bool = True) -> None:
    """``count`` samples of :func:`sample` in chunks of ``chunk_size``."""
    _optimize(functools.partial(sample, images=images), out, count, chunk_size)


def row(i: int) -> dict[str, Any]:
    """A tabular sample (numbers, strings, a list): LitData stores these as Arrow rows."""
    return {"id": i, "name": f"n{i}", "weight": i * 1.5, "tags": [i, i + 1], "ok": i % 3 == 0}


def write_rows(out: str, count: int, chunk_size: int) -> None:
    """``count`` samples of :func:`row` in chunks of ``chunk_size``."""
    _optimize(row, out, count, chunk_size)

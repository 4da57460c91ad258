"""Reading a converted dataset back with streamx and with mosaicml-streaming, and comparing
output trees byte for byte."""

from __future__ import annotations

import os
from typing import Any

import streaming

from streamx import StreamingDataset


def read_both(local: str, remote: str | None = None) -> list[dict[str, Any]]:
    """Every sample, read by streamx; asserts mosaicml-streaming reads the same."""
    ours = StreamingDataset(local=local, remote=remote, batch_size=1, shuffle=False)
    rows = [ours[i] for i in range(len(ours))]
    local_theirs = local + "-mosaic" if remote is not None else local
    theirs = streaming.StreamingDataset(
        local=local_theirs, remote=remote, batch_size=1, shuffle=False
    )
    assert len(theirs) == len(rows)
    for i, row in enumerate(rows):
        other = theirs[i]
        assert set(other) == set(row)
        for key, value in row.items():
            assert _plain(other[key]) == _plain(value), (i, key)
    return rows


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "tobytes"):  # PIL images
        return value.tobytes()
    return value


def tree_bytes(root: str) -> dict[str, bytes]:
    """Relative path -> contents of every file below ``root``."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out

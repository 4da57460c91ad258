"""Rows for the engine tests and readers of what the engines wrote, by both libraries."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

ROWS = 60


def make_rows(n: int = ROWS) -> list[dict[str, Any]]:
    """Rows covering the inferred encodings: int, str, float, bytes and a fixed-length list."""
    return [
        {
            "id": i,
            "text": f"row {i} " + "x" * (i % 7),
            "score": i / 4,
            "blob": bytes([i % 256]) * (i % 5 + 1),
            "vec": [i, i + 1, i + 2],
        }
        for i in range(n)
    ]


def read_streamx(remote: str | None, local: str | None = None) -> list[dict[str, Any]]:
    """Every sample of the dataset, in index order, read by streamx."""
    from streamx import StreamingDataset

    if local is None:  # a cache of its own, removed once read
        with tempfile.TemporaryDirectory(prefix="engines-sx-") as cache:
            return read_streamx(remote, cache)
    ds = StreamingDataset(
        remote=remote, local=local, shuffle=False, batch_size=1, allow_unsafe_types=True
    )
    return [ds[i] for i in range(len(ds))]


def read_mosaic(remote: str | None, local: str | None = None) -> list[dict[str, Any]]:
    """Every sample of the dataset, in index order, read by mosaicml-streaming."""
    from streaming import StreamingDataset

    if local is None:  # a cache of its own, removed once read
        with tempfile.TemporaryDirectory(prefix="engines-ms-") as cache:
            return read_mosaic(remote, cache)
    ds = StreamingDataset(
        remote=remote, local=local, shuffle=False, batch_size=1, allow_unsafe_types=True
    )
    return [ds[i] for i in range(len(ds))]


def ids_of(samples: list[dict[str, Any]]) -> list[int]:
    return sorted(int(s["id"]) for s in samples)


def same_sample(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """A read-back sample equals the row it came from (lists come back as arrays)."""
    for key, value in want.items():
        have = got[key]
        if isinstance(value, list):
            if not np.array_equal(np.asarray(have), np.asarray(value)):
                return False
        elif have != value:
            return False
    return True


def files_under(root: str) -> dict[str, bytes]:
    """Relative path to content, for every file below `root`."""
    found = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def die_once(marker: str) -> None:
    """Ends this process at once (``os._exit``, as the OOM killer would: no ``finally``, no
    clean-up) unless ``marker`` exists; creates it first, so a retried task lives."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def no_index_visible(out: str) -> None:
    """Asserts that ``out`` has no merged ``index.json`` and that every partition index
    left below it is whole JSON (written by rename, never seen half-written)."""
    assert not os.path.exists(os.path.join(out, "index.json"))
    for dirpath, _, names in os.walk(out):
        for name in names:
            if name.startswith("index.json"):
                assert name == "index.json", f"a temporary index left: {dirpath}/{name}"
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    json.load(f)


class DiesWhenEncoded(dict[str, Any]):
    """A ``json`` column's value whose encoding (``json.dumps`` reads its ``items``) ends
    the process once (:func:`die_once`), unless that process is ``spare`` (the test's own):
    a task killed mid-partition. Pickled as a plain rebuild, so that moving it between
    processes reads no ``items``."""

    def __init__(self, value: dict[str, Any], marker: str, spare: int) -> None:
        super().__init__(value)
        self.marker, self.spare = marker, spare

    def items(self) -> Any:
        if os.getpid() != self.spare:
            die_once(self.marker)
        return super().items()

    def __reduce__(self) -> Any:
        return (DiesWhenEncoded, (dict(self), self.marker, self.spare))

"""Helpers of the mixture tests: MDS sources whose every document names itself, and the
mixed datasets built over them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from streamx import LocalDataset, MDSWriter, MixedDataset, MixtureSchedule, StreamingDataset

SOURCES = ("web", "code", "math")


def write_sources(root: Path, sizes: dict[str, int]) -> None:
    """One MDS directory per source: ``uid`` (``"<source>-<i>"``) and ``tokens``, whose
    first token encodes the source and index, so that packed tokens can be traced."""
    for s, (name, n) in enumerate(sizes.items()):
        rng = np.random.default_rng(s)
        with MDSWriter(
            out=str(root / name),
            columns={"uid": "str", "tokens": "ndarray:int32"},
            size_limit=1 << 14,
        ) as writer:
            for i in range(n):
                length = int(rng.integers(5, 300))
                tokens = rng.integers(1, 50_000, size=length, dtype=np.int32)
                tokens[0] = 100_000 * (s + 1) + i
                writer.write({"uid": f"{name}-{i}", "tokens": tokens})


def schedule(points: list[list[Any]], interpolate: str = "step") -> MixtureSchedule:
    """A schedule from JSON-able ``[[step, {name: weight}], ...]``."""
    return MixtureSchedule([(int(s), w) for s, w in points], interpolate=interpolate)  # type: ignore[arg-type]


def mixed(
    root: Path, points: list[list[Any]], streaming: bool = False, **kwargs: Any
) -> MixedDataset:
    """A ``MixedDataset`` over the sources under ``root``: a ``LocalDataset`` each, or with
    ``streaming`` a ``StreamingDataset`` (whose ``len`` is this rank's share)."""
    interpolate = kwargs.pop("interpolate", "step")
    sources: dict[str, Any] = {
        name: StreamingDataset(local=str(root / name), batch_size=1)
        if streaming
        else LocalDataset(str(root / name))
        for name in SOURCES
    }
    return MixedDataset(sources, schedule(points, interpolate), **kwargs)


def collate_uids(samples: list[dict[str, Any]]) -> list[str]:
    """A batch's ``uid``s (the token arrays vary in length: torch's collate cannot stack
    them)."""
    return [s["uid"] for s in samples]


def uid_only(sample: dict[str, Any]) -> list[str]:
    """The ``collate_fn`` of a loader without batching: the sample's ``uid``."""
    return [sample["uid"]]


def uids(batch: Any) -> list[str]:
    """The ``uid``s of a batch (from :func:`collate_uids`) or of one sample."""
    return [batch["uid"]] if isinstance(batch, dict) else list(batch)

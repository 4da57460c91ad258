"""A LitData chunk directory (written by ``litdata.optimize``): one part per chunk, read back
through LitData's own ``StreamingDataset`` so every LitData serializer is understood."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streamx.convert.errors import ConvertError
from streamx.convert.sources.base import Part, Row, with_overrides
from streamx.convert.sources.files import open_fs
from streamx.convert.values import infer_from_sample, to_arrays

__all__ = ["LitDataSource", "is_litdata_dir"]

_DATASETS: dict[str, Any] = {}  # one LitData reader per directory and process


def is_litdata_dir(url: str) -> bool:
    """Whether ``url`` holds a LitData ``index.json`` (with ``chunks`` and ``config``)."""
    fs, path = open_fs(url)
    index = f"{path.rstrip('/')}/index.json"
    try:
        if not fs.isfile(index):
            return False
        with fs.open(index, "rb") as f:
            obj = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and "chunks" in obj and "config" in obj


@dataclass(frozen=True)
class LitDataSource:
    """A directory of LitData chunks and its ``index.json``."""

    url: str
    chunks: tuple[tuple[str, int], ...]  # (filename, samples) in index order

    @classmethod
    def open(cls, url: str) -> LitDataSource:
        """Reads the chunk list from ``index.json``."""
        fs, path = open_fs(url)
        index = f"{path.rstrip('/')}/index.json"
        try:
            with fs.open(index, "rb") as f:
                chunks = json.load(f)["chunks"]
            return cls(url, tuple((c["filename"], int(c["chunk_size"])) for c in chunks))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ConvertError(f"Cannot read LitData index {url}/index.json: {err}") from err

    def describe(self) -> Mapping[str, Any]:
        return {"kind": "litdata", "url": self.url, "chunks": [list(c) for c in self.chunks]}

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        return with_overrides(infer_from_sample(self._sample(0)), overrides)

    def parts(self) -> list[Part]:
        parts, start = [], 0
        for i, (filename, size) in enumerate(self.chunks):
            parts.append(Part(i, f"{self.url}/{filename}", (start, start + size)))
            start += size
        return parts

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        start, end = part.spec
        for row in range(start, end):
            yield part.label, row - start, to_arrays(self._sample(row), columns)

    def _sample(self, row: int) -> dict[str, Any]:
        dataset = _DATASETS.get(self.url)
        if dataset is None:
            from litdata import StreamingDataset  # optional: only LitData inputs need it

            dataset = _DATASETS[self.url] = StreamingDataset(self.url)
        try:
            sample = dataset[row]
        except Exception as err:
            raise ConvertError(f"Cannot read sample {row} of LitData {self.url}: {err}") from err
        if not isinstance(sample, dict):
            raise ConvertError(
                f"LitData {self.url}, sample {row}: a {type(sample).__name__}, not a dict; "
                "only dict samples map to MDS columns."
            )
        return dict(sample)

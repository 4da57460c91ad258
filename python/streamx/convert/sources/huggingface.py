"""A Hugging Face ``datasets.Dataset``, in memory or saved with ``save_to_disk``: parts are
row ranges of its Arrow table, whose schema gives the columns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streamx.convert.errors import ConvertError
from streamx.convert.infer import infer_columns
from streamx.convert.sources.base import Part, Row, chunk_ranges
from streamx.convert.sources.files import open_fs
from streamx.convert.values import arrow_rows

__all__ = ["HFSource", "is_saved_hf_dir"]

_LOADED: dict[str, Any] = {}  # one loaded dataset per saved directory and process


def is_saved_hf_dir(url: str) -> bool:
    """Whether ``url`` is a directory written by ``Dataset.save_to_disk``."""
    fs, path = open_fs(url)
    base = path.rstrip("/")
    return bool(fs.isfile(f"{base}/state.json") and fs.isfile(f"{base}/dataset_info.json"))


@dataclass(frozen=True)
class HFSource:
    """A ``datasets.Dataset`` (``dataset``) or a ``save_to_disk`` directory (``path``)."""

    path: str | None
    dataset: Any  # a datasets.Dataset (not imported: the dependency is optional)
    num_rows: int
    per_part: int | None = None

    @classmethod
    def open(cls, obj: Any, per_part: int | None = None) -> HFSource:
        """From a ``Dataset``, or a path given to ``save_to_disk``."""
        if isinstance(obj, str):
            return cls(obj, None, len(_load(obj)), per_part)
        if getattr(obj, "_indices", None) is not None:
            obj = obj.flatten_indices()  # select/shuffle views: make the table the row order
        return cls(None, obj, len(obj), per_part)

    def _table(self) -> Any:
        dataset = self.dataset if self.path is None else _load(self.path)
        return dataset.data.table

    def describe(self) -> Mapping[str, Any]:
        if self.path is not None:
            return {"kind": "hf", "path": self.path, "rows": self.num_rows}
        return {"kind": "hf", "fingerprint": getattr(self.dataset, "_fingerprint", None)}

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        return infer_columns(self._table().schema, overrides)

    def parts(self) -> list[Part]:
        name = self.path or "Dataset"
        return [
            Part(i, f"{name} (rows {start} to {end - 1})", (start, end))
            for i, (start, end) in enumerate(chunk_ranges(self.num_rows, self.per_part))
        ]

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        start, end = part.spec
        table = self._table().slice(start, end - start)
        name = self.path or "Dataset"
        for row, sample in enumerate(arrow_rows(table, columns), start):
            yield name, row, sample


def _load(path: str) -> Any:
    dataset = _LOADED.get(path)
    if dataset is None:
        import datasets  # optional: only Hugging Face inputs need it

        try:
            dataset = _LOADED[path] = datasets.load_from_disk(path)
        except Exception as err:
            raise ConvertError(f"Cannot load the saved Hugging Face dataset {path}: {err}") from err
        if not isinstance(dataset, datasets.Dataset):
            raise ConvertError(f"{path} holds a {type(dataset).__name__}; pick one split.")
    return dataset

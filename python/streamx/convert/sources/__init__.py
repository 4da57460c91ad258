"""Input kinds of the converter, and picking one for an input."""

from __future__ import annotations

from typing import Any, Literal

from streamx.convert.errors import ConvertError
from streamx.convert.sources.base import Part, Row, Source
from streamx.convert.sources.files import open_fs
from streamx.convert.sources.huggingface import HFSource, is_saved_hf_dir
from streamx.convert.sources.images import ImageFolderSource
from streamx.convert.sources.litdata_dir import LitDataSource, is_litdata_dir
from streamx.convert.sources.tables import SUFFIXES, TableSource
from streamx.convert.sources.webdataset import WebDatasetSource

__all__ = ["InputFormat", "Part", "Row", "Source", "open_source"]

InputFormat = Literal[
    "auto", "parquet", "arrow", "jsonl", "csv", "images", "webdataset", "litdata", "hf"
]


def open_source(obj: Any, format: InputFormat = "auto", per_part: int | None = None) -> Source:
    """The source reading ``obj``: a path or URL, or a ``datasets.Dataset``.

    ``auto`` picks by content: a ``datasets.Dataset`` object, a ``save_to_disk`` directory, a
    LitData directory, then the file suffixes found (Parquet, Arrow, JSONL, CSV, tar), then
    an image folder.

    Raises:
        ConvertError: Nothing readable is found, or the format cannot be guessed.
    """
    if not isinstance(obj, str):
        if format not in ("auto", "hf") or not hasattr(obj, "data"):
            raise ConvertError(f"Cannot convert a {type(obj).__name__}; pass a path or URL.")
        return HFSource.open(obj, per_part)
    chosen = _detect(obj) if format == "auto" else format
    if chosen == "hf":
        return HFSource.open(obj, per_part)
    if chosen == "litdata":
        return LitDataSource.open(obj)
    if chosen == "images":
        return ImageFolderSource.open(obj, per_part)
    if chosen == "webdataset":
        return WebDatasetSource.open(obj)
    return TableSource.open(obj, chosen)  # type: ignore[arg-type]


def _detect(url: str) -> InputFormat:
    if is_saved_hf_dir(url):
        return "hf"
    if is_litdata_dir(url):
        return "litdata"
    fs, path = open_fs(url)
    try:
        names = [path] if fs.isfile(path) else (fs.glob(path) if "*" in path else fs.find(path))
    except Exception as err:
        raise ConvertError(f"Cannot list input {url}: {err}") from err
    lowered = [n.lower() for n in names]
    for kind in ("parquet", "arrow", "jsonl", "csv"):
        if any(n.endswith(SUFFIXES[kind]) for n in lowered):
            return kind  # type: ignore[return-value]
    if any(n.endswith(".tar") for n in lowered):
        return "webdataset"
    if names:
        return "images"
    raise ConvertError(f"Input {url} does not exist or is empty.")

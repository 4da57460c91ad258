"""WebDataset tar shards: one part per tar; a sample is the members sharing a key (the name
up to its first dot), one column per extension."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streamx.convert.errors import ConvertError
from streamx.convert.sources.base import Part, Row, with_overrides
from streamx.convert.sources.files import list_files, open_fs
from streamx.convert.sources.image_check import check_image
from streamx.convert.values import to_arrays

__all__ = ["WebDatasetSource"]

#: Extension -> (encoding, how the member's bytes become the column's value).
_KINDS: dict[str, str] = {
    "jpg": "jpeg",
    "jpeg": "jpeg",
    "png": "png",
    "txt": "str",
    "text": "str",
    "cls": "int",
    "cls2": "int",
    "index": "int",
    "json": "json",
}


@dataclass(frozen=True)
class WebDatasetSource:
    """``*.tar`` shards at a local path or fsspec URL."""

    url: str
    files: tuple[str, ...]

    @classmethod
    def open(cls, url: str) -> WebDatasetSource:
        """Lists the tar shards (sorted)."""
        return cls(url, tuple(list_files(url, (".tar",))))

    def describe(self) -> Mapping[str, Any]:
        return {"kind": "webdataset", "files": list(self.files)}

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        for _, _, sample in _samples(self.files[0]):
            return with_overrides({ext: _KINDS.get(ext, "bytes") for ext in sample}, overrides)
        raise ConvertError(f"WebDataset shard {self.files[0]} holds no samples.")

    def parts(self) -> list[Part]:
        return [Part(i, f, (f,)) for i, f in enumerate(self.files)]

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        name = part.spec[0]
        for row, key, raw in _samples(name):
            missing = sorted(set(columns) - set(raw))
            if missing:
                raise ConvertError(f"{name}, sample {key!r} (row {row}): lacks {missing}.")
            sample = {col: _value(raw[col], columns[col], name, key) for col in columns}
            yield name, row, to_arrays(sample, columns)


def _value(data: bytes, encoding: str, name: str, key: str) -> Any:
    try:
        if encoding == "str":
            return data.decode("utf-8")
        if encoding == "int":
            return int(data.decode("utf-8").strip())
        if encoding == "json":
            return json.loads(data)
        if encoding in ("jpeg", "png"):  # stored as they are: decoded once to check them
            check_image(data, f"{name}, sample {key!r}")
    except (UnicodeDecodeError, ValueError) as err:
        raise ConvertError(f"{name}, sample {key!r}: cannot read as {encoding}: {err}") from err
    return data


def _samples(name: str) -> Iterator[tuple[int, str, dict[str, bytes]]]:
    """``(row, key, {extension: bytes})`` for each run of members sharing a key."""
    fs, path = open_fs(name)
    row, key = 0, None
    sample: dict[str, bytes] = {}
    try:
        with fs.open(path, "rb") as f, tarfile.open(fileobj=f, mode="r|*") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                base = member.name.rsplit("/", 1)[-1]
                stem, dot, ext = base.partition(".")
                prefix = member.name[: len(member.name) - len(base)] + stem
                if not dot:
                    continue
                if prefix != key and sample:
                    yield row, str(key), sample
                    row, sample = row + 1, {}
                key = prefix
                extracted = tar.extractfile(member)
                assert extracted is not None
                sample[ext.lower()] = extracted.read()
    except (tarfile.TarError, OSError, EOFError) as err:
        raise ConvertError(f"Cannot read WebDataset shard {name}: {err}") from err
    if sample:
        yield row, str(key), sample

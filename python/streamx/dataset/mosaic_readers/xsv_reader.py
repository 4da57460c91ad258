"""mosaicml-streaming's XSV readers (``streamx.base.format.xsv.reader`` re-exports them)."""

from __future__ import annotations

from typing import Any, ClassVar

from streamx.dataset.mosaic_readers.reader import SplitReader, file_info

__all__ = ["CSVReader", "TSVReader", "XSVReader"]


def _fields(
    column_encodings: list[str],
    column_names: list[str],
    compression: str | None,
    hashes: list[str],
    newline: str,
    samples: int,
) -> dict[str, Any]:
    return {
        "column_encodings": column_encodings,
        "column_names": column_names,
        "compression": compression,
        "hashes": hashes,
        "newline": newline,
        "samples": samples,
    }


def _entry(fmt: str, fields: dict[str, Any], files: tuple[Any, ...]) -> dict[str, Any]:
    """The index entry of a shard, its ``FileInfo`` objects turned into JSON."""
    keys = ("raw_data", "raw_meta", "zip_data", "zip_meta")
    return {"format": fmt, "version": 2, **fields, **{k: file_info(f) for k, f in zip(keys, files)}}


class XSVReader(SplitReader):
    """Random access to the samples of one separated-values shard (see :class:`Reader`).

    Args: the fields of the shard's ``index.json`` entry; the ``raw_*``/``zip_*`` files
    are ``FileInfo`` objects.
    """

    formats: ClassVar[tuple[str, ...]] = ("xsv",)

    def __init__(
        self,
        dirname: str,
        split: str | None,
        column_encodings: list[str],
        column_names: list[str],
        compression: str | None,
        hashes: list[str],
        newline: str,
        raw_data: Any,
        raw_meta: Any,
        samples: int,
        separator: str,
        size_limit: int | str | None,
        zip_data: Any | None,
        zip_meta: Any | None,
    ) -> None:
        fields = _fields(column_encodings, column_names, compression, hashes, newline, samples)
        fields.update(separator=separator, size_limit=size_limit)
        files = (raw_data, raw_meta, zip_data, zip_meta)
        self._attach(dirname, split, _entry("xsv", fields, files))


class _FixedSeparatorReader(XSVReader):
    def __init__(
        self,
        dirname: str,
        split: str | None,
        column_encodings: list[str],
        column_names: list[str],
        compression: str | None,
        hashes: list[str],
        newline: str,
        raw_data: Any,
        raw_meta: Any,
        samples: int,
        size_limit: int | None,
        zip_data: Any | None,
        zip_meta: Any | None,
    ) -> None:
        fields = _fields(column_encodings, column_names, compression, hashes, newline, samples)
        fields.update(size_limit=size_limit)
        files = (raw_data, raw_meta, zip_data, zip_meta)
        self._attach(dirname, split, _entry(self.formats[0], fields, files))


class CSVReader(_FixedSeparatorReader):
    """Random access to the samples of one CSV shard."""

    formats: ClassVar[tuple[str, ...]] = ("csv",)


class TSVReader(_FixedSeparatorReader):
    """Random access to the samples of one TSV shard."""

    formats: ClassVar[tuple[str, ...]] = ("tsv",)

"""JSON, CSV, TSV and XSV shards: identical files to mosaicml-streaming's, readable both ways."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import streamx

streaming = pytest.importorskip("streaming")
pytestmark = pytest.mark.compat

COLUMNS = {"id": "int", "name": "str", "score": "float"}
SAMPLES = [{"id": i, "name": f"n{i}", "score": i / 3} for i in range(25)]


def _write(cls: Any, out: Path, **kwargs: Any) -> None:
    with cls(
        out=str(out), columns=COLUMNS, size_limit=120, hashes=["md5", "xxh64"], **kwargs
    ) as writer:
        for sample in SAMPLES:
            writer.write(sample)


@pytest.mark.parametrize(
    ("name", "extra"),
    [("JSONWriter", {}), ("CSVWriter", {}), ("TSVWriter", {}), ("XSVWriter", {"separator": "|"})],
)
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_split_writer_files_match(
    tmp_path: Path, name: str, extra: dict[str, Any], compression: str | None
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _write(getattr(streamx, name), ours, compression=compression, **extra)
    _write(getattr(streaming, name), theirs, compression=compression, **extra)
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    if compression is None:
        for file in os.listdir(theirs):
            assert (ours / file).read_bytes() == (theirs / file).read_bytes(), file
    got = streamx.LocalDataset(str(theirs))
    assert len(got) == len(SAMPLES)
    for i, sample in enumerate(SAMPLES):
        assert got[i] == sample

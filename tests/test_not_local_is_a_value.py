"""A shard not on local disk yet is an answer of the Rust reader, not an exception its
callers catch (issue 22): each ``*_if_local`` read gives ``None`` then, and every other
failure (a corrupt shard) still raises."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import streamx
from streamx.exceptions import CorruptShardError
from streamx.format.index import parse_index
from streamx.format.readers.mds import MDSSampleReader


def _reader(tmp_path: Path) -> MDSSampleReader:
    with streamx.MDSWriter(
        out=str(tmp_path), columns={"x": "int", "b": "bytes"}, size_limit=200
    ) as writer:
        for i in range(40):
            writer.write({"x": i, "b": bytes([i]) * 10})
    return MDSSampleReader(parse_index(str(tmp_path), None, str(tmp_path / "index.json")))


def test_a_missing_shard_is_none_on_every_read(tmp_path: Path) -> None:
    reader = _reader(tmp_path)
    core = reader._core
    assert reader.get_if_local(0) == {"x": 0, "b": bytes(10)}
    last = reader.num_samples - 1
    shard, _ = core.locate(last)
    os.remove(tmp_path / f"shard.{shard:05}.mds")
    assert core.get_if_local(last) is None
    assert core.get_item_if_local(-1) is None
    assert core.get_many_if_local([0, last]) is None
    rows = np.empty((2, 8), np.uint8)
    assert core.gather_if_local([0, last], [1], [rows]) is None
    assert reader.get_if_local(last) is None
    assert reader.get_many([0, last], lambda i: ("fetched", i))[1] == ("fetched", last)
    # The plain reads still raise, for callers that want an error.
    with pytest.raises(FileNotFoundError):
        core.get(last)


def test_a_corrupt_shard_still_raises(tmp_path: Path) -> None:
    reader = _reader(tmp_path)
    shard, _ = reader._core.locate(0)
    path = tmp_path / f"shard.{shard:05}.mds"
    path.write_bytes(path.read_bytes()[:10])
    with pytest.raises(CorruptShardError):
        reader.get_if_local(0)

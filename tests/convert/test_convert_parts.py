"""How many parts a sized input (an image folder) is cut into by default: by its bytes, so a
small input is one part, written as one process would, and the same input gives the same
shards whatever the number of workers."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
import pytest
from convert_helpers import read_both, tree_bytes
from PIL import Image

from streamx.convert import convert
from streamx.convert.sources import base


def _folder(root: Any, count: int = 10) -> int:
    """``count`` noise JPEGs in two classes; returns their total size in bytes."""
    rng = np.random.default_rng(7)
    total = 0
    for i in range(count):
        os.makedirs(root / f"c{i % 2}", exist_ok=True)
        out = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(out, "JPEG")
        (root / f"c{i % 2}" / f"{i:03d}.jpg").write_bytes(out.getvalue())
        total += len(out.getvalue())
    return total


def test_small_folder_is_one_part(tmp_path: Any) -> None:
    _folder(tmp_path / "imgs")
    result = convert(str(tmp_path / "imgs"), str(tmp_path / "out"), num_workers=2, progress=False)
    assert (result.parts, result.samples) == (1, 10)
    assert [p for p in os.listdir(tmp_path / "out") if p.startswith("part-")] == ["part-00000"]
    assert len(read_both(str(tmp_path / "out"))) == 10


def test_parts_follow_input_bytes_not_workers(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    total = _folder(tmp_path / "imgs")
    # A part holds at least a third of the input here: three parts, whatever the workers.
    monkeypatch.setattr(base, "MIN_PART_BYTES", total // 3 + 1)
    trees = []
    for workers in (1, 2):
        out = str(tmp_path / f"out-{workers}")
        result = convert(str(tmp_path / "imgs"), out, num_workers=workers, progress=False)
        assert (result.parts, result.samples) == (3, 10)
        trees.append(tree_bytes(out))
    assert trees[0] == trees[1]
    assert sorted({name.split("/")[0] for name in trees[0]}) == [
        "index.json",
        "part-00000",
        "part-00001",
        "part-00002",
    ]

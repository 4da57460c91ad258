"""``ds[i]`` through the Rust fast path behaves exactly as the general ``get_item`` route."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx

N = 40


def _write(out: Path, columns: dict[str, str]) -> str:
    with streamx.MDSWriter(out=str(out), columns=columns, size_limit=600) as writer:
        for i in range(N):
            sample: dict[str, Any] = {"id": i, "text": f"t{i}" * (i % 4 + 1)}
            if "meta" in columns:
                sample["meta"] = {"i": i}
            writer.write(sample)
    return str(out)


@pytest.fixture
def plain_dir(tmp_path: Path) -> str:
    return _write(tmp_path / "plain", {"id": "int", "text": "str"})


@pytest.mark.parametrize("kind", ["streaming", "local"])
def test_fast_path_matches_general_route(plain_dir: str, kind: str) -> None:
    if kind == "streaming":
        ds: Any = streamx.StreamingDataset(local=plain_dir)
    else:
        ds = streamx.LocalDataset(plain_dir)
    assert ds._fast_get is not None
    for i in (0, 1, 17, N - 1):
        assert ds[i] == ds.get_item(i) == ds[np.int64(i)] == ds[i - N]
    assert ds[True] == ds.get_item(1)
    assert ds[[3, -1]] == [ds.get_item(3), ds.get_item(N - 1)]
    for bad in (N, -N - 1, 2**70, -(2**70)):
        with pytest.raises(IndexError, match=f"Sample index {bad} out of range for {N} samples"):
            ds[bad]


def test_subclass_get_item_override_is_used(plain_dir: str) -> None:
    class Tagged(streamx.StreamingDataset):
        def get_item(self, sample_id: int, retry: int = 7) -> Any:
            return {"tag": sample_id, **super().get_item(sample_id, retry)}

    ds = Tagged(local=plain_dir)
    assert ds._fast_get is None
    assert ds[5]["tag"] == 5
    assert ds[-1]["tag"] == N - 1


def test_subclass_size_override_is_used(plain_dir: str) -> None:
    class Shorter(streamx.LocalDataset):
        @property
        def size(self) -> int:
            return 10

    ds = Shorter(plain_dir)
    assert ds._fast_get is None
    assert ds[-1]["id"] == 9
    with pytest.raises(IndexError):
        ds[10]


def test_python_decoded_columns_take_the_general_route(tmp_path: Path) -> None:
    local = _write(tmp_path / "json", {"id": "int", "meta": "json", "text": "str"})
    ds = streamx.StreamingDataset(local=local)
    assert ds._fast_get is None
    assert ds[7]["meta"] == {"i": 7}
    assert ds[-1]["id"] == N - 1

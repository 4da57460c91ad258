"""A dataset constructed over a warm cache lists its cache directory a fixed number of
times, whatever its shard count (it was once per shard: 8,001 shards took 72 s)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from warm_cache import make_warm

import streamx


def _count_scans(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts listings per directory (the real calls still run)."""
    scans: Counter[str] = Counter()
    listdir, scandir = os.listdir, os.scandir

    def count(path: Any) -> None:
        scans[str(path) if isinstance(path, int) else os.path.realpath(path)] += 1

    def counted_listdir(path: Any = ".") -> list[str]:
        count(path)
        return listdir(path)

    def counted_scandir(path: Any = ".") -> Any:
        count(path)
        return scandir(path)

    monkeypatch.setattr(os, "listdir", counted_listdir)
    monkeypatch.setattr(os, "scandir", counted_scandir)
    return scans


def _construct(tmp_path: Path, shards: int, monkeypatch: pytest.MonkeyPatch) -> None:
    remote, local = make_warm(tmp_path, shards)
    scans = _count_scans(monkeypatch)
    ds = streamx.StreamingDataset(remote=remote, local=local, batch_size=4)
    assert ds.num_shards == shards
    assert ds.cache_usage > 0
    # The cache directory is listed once (its killed downloads' leftovers), not per shard.
    assert 1 <= scans[os.path.realpath(local)] <= 2, scans.most_common(3)
    # No directory of the dataset is listed per shard either (imports list their own).
    ours = {p: n for p, n in scans.items() if p.startswith(os.path.realpath(tmp_path))}
    assert max(ours.values()) <= 2, ours
    assert ds[shards - 1]["id"] == 0


def test_ten_thousand_shards_list_the_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _construct(tmp_path, 10_000, monkeypatch)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_hundred_thousand_shards_list_the_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _construct(tmp_path, 100_000, monkeypatch)

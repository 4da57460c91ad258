"""Constructing a remote dataset costs what the rank's work costs, not one Python object per
shard (issue 24): over a 200k-shard index served by nginx (no shard files), no
:class:`~streamx.format.index.ShardInfo` is built and Python allocates a few numpy columns'
worth (the old per-shard walk built a ShardInfo, its FileInfos, paths and ledger lists for
every shard: several kilobytes each)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from big_index import shard_samples, write_big_index  # tests/format, on the path by conftest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import StreamingDataset
from streamx.format.index import ShardInfo
from streamx.format.lazy_shards import ShardList

pytestmark = [pytest.mark.remote, pytest.mark.timeout(300)]

SHARDS = 200_000
# Bytes Python may allocate per shard: a few int64 columns (8 bytes a shard each).
PER_SHARD = 100


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    write_big_index(str(tmp_path / "served" / "big"), SHARDS)
    with Nginx(tmp_path / "served") as server:
        yield f"{server.endpoint}/big"


def test_construction_builds_no_object_per_shard(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    build = ShardList._build

    def counted(self: ShardList, number: int) -> ShardInfo:
        built.append(number)
        return build(self, number)

    monkeypatch.setattr(ShardList, "_build", counted)
    StreamingDataset(remote=served, local=str(tmp_path / "warm-up"), batch_size=8)  # imports
    built.clear()
    tracemalloc.start()
    try:
        ds = StreamingDataset(remote=served, local=str(tmp_path / "cache"), batch_size=8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ds.num_shards == SHARDS
    assert ds.size == sum(shard_samples(i) for i in range(SHARDS))
    assert built == []
    assert peak < PER_SHARD * SHARDS, f"{peak / SHARDS:.0f} bytes a shard"

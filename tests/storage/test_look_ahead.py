"""A pass fetches the next shards of its order while it still reads the current one, even
when ``predownload`` is shorter than a shard (served by nginx, as S3 would)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from nginx_server import Nginx
from served_mds import requested_files, wait_for_request, write_served

import streamx

pytestmark = pytest.mark.remote

SAMPLES = 4_000


@pytest.fixture
def served(tmp_path: Path) -> Path:
    served = write_served(tmp_path, "ds", SAMPLES, 1_000, 1 << 20)
    assert len(list((served / "bucket" / "ds").glob("shard.*.mds"))) == 4
    return served


@pytest.mark.parametrize("shards_ahead", [1, 2])
def test_the_next_shards_arrive_while_the_first_is_read(
    served: Path, tmp_path: Path, shards_ahead: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", str(shards_ahead))
    cache = tmp_path / "cache"
    with Nginx(served) as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds",
            local=str(cache),
            batch_size=4,
            predownload=4,  # 4 samples ahead: never reaches past shard 0 on its own
            shuffle=False,
        )
        # Past the first chunk the pass declares (its first shard is read by range, then
        # fetched), still far from the end of shard 0.
        read = 300
        assert ds.shards[0].samples > read + 500
        samples = iter(ds)
        first = [next(samples)["i"] for _ in range(read)]
        assert first == list(range(read))
        # The next shards are fetched without the reader coming near them.
        wanted = [f"shard.{n:05d}.mds" for n in range(1, shards_ahead + 1)]
        for name in wanted:
            assert wait_for_request(server, name, 10.0)
            deadline = time.monotonic() + 10
            while not (cache / name).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert (cache / name).exists()
        # As many shards beyond the window as asked, no more: the next waits for the reader.
        assert f"shard.{shards_ahead + 1:05d}.mds" not in requested_files(server)
        rest = [sample["i"] for sample in samples]
    assert first + rest == list(range(SAMPLES))


def test_each_shard_is_fetched_once_over_a_pass(served: Path, tmp_path: Path) -> None:
    with Nginx(served) as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds",
            local=str(tmp_path / "cache"),
            batch_size=4,
            shuffle=False,
        )
        loader = streamx.StreamingDataLoader(ds, batch_size=4, num_workers=0)
        ids = [int(i) for batch in loader for i in batch["i"]]
        whole = [e for e in server.log() if e.method == "GET" and e.uri.endswith(".mds")]
    assert ids == list(range(SAMPLES))
    # Shard 0 is read by range before its download starts; every other shard is fetched
    # whole once (a shard fetched twice would show up as more than one whole-file GET).
    fetched_whole = [e.uri for e in whole if e.range in ("-", "")]
    assert sorted(fetched_whole) == sorted(set(fetched_whole))

"""While a store throttles, a pass fetches twice as many shards past its window: the pace
limits how often requests start, not how many run, so more whole shards in flight keep the
link busy (served by nginx, whose ``limit_req`` answers 503 as S3's SlowDown)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from nginx_server import Nginx
from served_mds import requested_files, wait_for_request, write_served

import streamx
from streamx.storage import throttle
from streamx.storage.request_pace import any_paced, pace_for

pytestmark = pytest.mark.remote

SAMPLES = 8_000  # 8 shards of 1 MiB


@pytest.fixture
def served(tmp_path: Path) -> Path:
    served = write_served(tmp_path, "ds", SAMPLES, 1_000, 1 << 20)
    assert len(list((served / "bucket" / "ds").glob("shard.*.mds"))) == 8
    return served


@pytest.fixture(autouse=True)
def calm_hosts() -> Iterator[None]:
    throttle.forget_hosts()
    yield
    throttle.forget_hosts()


@pytest.mark.parametrize("limit_req", [None, "5r/s"])
def test_a_paced_pass_fetches_twice_the_shards_ahead(
    served: Path, tmp_path: Path, limit_req: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "1")
    with Nginx(served, limit_req=limit_req) as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds",
            local=str(tmp_path / "cache"),
            batch_size=4,
            predownload=4,  # never reaches past shard 0 on its own
            shuffle=False,
        )
        assert ds.shards[0].samples > 800
        samples = iter(ds)
        first = [next(samples)["i"] for _ in range(300)]
        assert wait_for_request(server, "shard.00001.mds", 15.0)
        paced = any_paced()
        if limit_req is None:
            # A calm host: one shard past the window, the next waits for the reader.
            assert not paced
            time.sleep(0.5)  # room for a wrong request to show up; not a timing assertion
            assert "shard.00002.mds" not in requested_files(server)
        else:
            # The first clump met 503s: the host is paced, and two shards go ahead while
            # the reader is still in shard 0.
            assert paced
            assert any(e.status == 503 for e in server.log())
            assert wait_for_request(server, "shard.00002.mds", 15.0)
            assert "shard.00003.mds" not in requested_files(server)
        rest = [sample["i"] for sample in samples]
    assert first + rest == list(range(SAMPLES))


def test_the_paced_look_ahead_doubles_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamx.storage import settings

    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "3")
    assert (settings.shards_ahead(), settings.shards_ahead(paced=True)) == (3, 6)
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "0")  # only the window, paced or not
    assert settings.shards_ahead(paced=True) == 0


def test_the_look_ahead_starts_while_the_first_shard_downloads_once_paced(
    served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold pass fetches the shards it reads now first and holds the look-ahead back;
    once the store is seen throttling (here: a throttled answer noted while shard 0 still
    downloads, each connection at 400 KB/s), the look-ahead starts at once, its requests
    behind shard 0's on the pace, instead of after shard 0."""
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "1")
    with Nginx(served, limit_rate="400k") as server:
        host = urlparse(server.endpoint).netloc
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds",
            local=str(tmp_path / "cache"),
            batch_size=4,
            predownload=4,
            shuffle=False,
        )
        cache = tmp_path / "cache"

        def throttle_once_shard_0_downloads() -> None:
            while not any("shard.00000" in p.name for p in cache.rglob("*")):
                time.sleep(0.01)
            pace = pace_for(host)
            pace.throttled(pace.take())  # what a 503 does

        cutter = threading.Thread(target=throttle_once_shard_0_downloads, daemon=True)
        cutter.start()
        samples = iter(ds)
        assert next(samples)["i"] == 0
        cutter.join(timeout=30)
        assert any_paced()
        assert wait_for_request(server, "shard.00001.mds", 15.0)
        entries = [e for e in server.log() if e.method == "GET"]
    shard_0 = [e for e in entries if e.uri.endswith("shard.00000.mds")]
    shard_1 = [e for e in entries if e.uri.endswith("shard.00001.mds")]
    # Shard 1 was asked for before shard 0's download ended.
    assert min(e.start for e in shard_1) < max(e.end for e in shard_0)

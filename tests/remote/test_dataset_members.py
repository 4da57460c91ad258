"""mosaicml-streaming's shard-level members against the loopback S3 server: ``prepare_shard``,
``evict_shard``, ``evict_coldest_shard`` and ``cache_usage`` (checked against mosaicml-streaming
itself), a Stream subclass's ``_download_file`` used for every download, one cache directory
refused to two remotes, shards deleted mid-epoch fetched again, and a stale cached index."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

import pytest
import remote_data
from s3_bucket import S3

import streamx
from streamx.exceptions import StaleIndexError
from streamx.storage.download import download_file

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]

N = 90


@pytest.fixture(scope="module", params=[None, "zstd"])
def remote(module_s3: S3, request: pytest.FixtureRequest) -> str:
    url: str = module_s3.url(f"members-{request.param}")
    remote_data.write(url, N, compression=request.param, size_limit=6_000)
    return url


def _user_files(local: Path) -> dict[str, int]:
    """File name -> size of the dataset's files under ``local`` (not streamx's bookkeeping)."""
    return {f: (local / f).stat().st_size for f in os.listdir(local) if f != ".streamx"}


def _kept(ds: Any, keep_zip: bool) -> int:
    """The bytes mosaicml-streaming counts for every shard present: raw, plus zip if kept."""
    return sum(s.get_raw_size() + ((s.get_zip_size() or 0) if keep_zip else 0) for s in ds.shards)


@pytest.mark.parametrize("keep_zip", [False, True])
def test_manual_prepare_and_evict(remote: str, tmp_path: Path, keep_zip: bool) -> None:
    local = tmp_path / "ours"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), keep_zip=keep_zip, batch_size=4)
    index_bytes = (local / "index.json").stat().st_size
    assert ds.cache_usage == index_bytes
    for shard_id in range(ds.num_shards):
        ds.prepare_shard(shard_id)
    full = _user_files(local)
    assert ds.cache_usage == sum(full.values()) == index_bytes + _kept(ds, keep_zip)
    zips = {s.zip_data.basename for s in ds.shards if s.zip_data}
    assert bool(zips & set(full)) == (keep_zip and bool(zips))

    streaming = pytest.importorskip("streaming")
    theirs = streaming.StreamingDataset(
        remote=remote, local=str(tmp_path / "theirs"), keep_zip=keep_zip, batch_size=4
    )
    for shard_id in range(theirs.num_shards):
        theirs.prepare_shard(shard_id)
    assert ds.cache_usage == theirs.cache_usage

    for shard_id, shard in enumerate(ds.shards):
        before = ds.cache_usage
        ds.evict_shard(shard_id)
        theirs.evict_shard(shard_id)
        assert before - ds.cache_usage == _kept_one(shard, keep_zip)
    assert set(_user_files(local)) == {"index.json"}
    assert ds.cache_usage == theirs.cache_usage == index_bytes
    ds.evict_shard(0)  # evicting an absent shard is a no-op
    assert ds.cache_usage == index_bytes

    # Random access brings every shard back, exactly as before.
    assert [remote_data.check(ds[i]) for i in range(ds.num_samples)] == list(range(N))
    assert _user_files(local) == full
    assert ds.cache_usage == sum(full.values())


def _kept_one(shard: Any, keep_zip: bool) -> int:
    return int(shard.get_raw_size() + ((shard.get_zip_size() or 0) if keep_zip else 0))


def test_evict_coldest_shard(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    for shard_id in (0, 1, 2):
        ds.prepare_shard(shard_id)
        time.sleep(0.01)  # distinct access times, whatever the clock's resolution
    ds.prepare_shard(0)  # already local: only its access time moves; 1 is now the coldest
    raw = [ds.shards[i].raw_data.basename for i in range(3)]
    ds.evict_coldest_shard()
    assert set(_user_files(local)) == {"index.json", raw[0], raw[2]}
    ds.evict_coldest_shard()
    ds.evict_coldest_shard()
    assert set(_user_files(local)) == {"index.json"}
    with pytest.raises(ValueError, match="no shards present locally to evict"):
        ds.evict_coldest_shard()
    with pytest.raises(IndexError, match="out of range"):
        ds.prepare_shard(ds.num_shards)


def test_prepare_shard_nonblocking_downloads_when_free(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    ds.prepare_shard(3, blocking=False)
    assert ds.shards[3].raw_data.basename in _user_files(local)


class MirrorStream(streamx.Stream):
    """Fetches from ``mirror`` whatever ``remote`` says, counting the files it fetches."""

    def __init__(self, *, mirror: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mirror = mirror
        self.fetched: list[str] = []

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        self.fetched.append(from_basename)
        local = os.path.join(self.local, self.split, to_basename or from_basename)
        download_file(f"{self.mirror}/{from_basename}", local)
        return local


@pytest.mark.parametrize("cache_limit", [None, 40_000])
def test_stream_subclass_download_hook_is_used(
    remote: str, tmp_path: Path, cache_limit: int | None
) -> None:
    stream = MirrorStream(mirror=remote, remote="s3://no-such-bucket/data", local=str(tmp_path))
    ds = streamx.StreamingDataset(streams=[stream], batch_size=4, cache_limit=cache_limit)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    wanted = {s.zip_data.basename if s.zip_data else s.raw_data.basename for s in ds.shards}
    assert stream.fetched[0] == "index.json"
    assert set(stream.fetched[1:]) == wanted
    if cache_limit is None:
        assert len(stream.fetched) == 1 + ds.num_shards  # each file fetched once


def test_one_local_refused_to_two_remotes(remote: str, module_s3: S3, tmp_path: Path) -> None:
    other = module_s3.url("members-other")
    remote_data.write(other, 10, size_limit=6_000)
    local = str(tmp_path / "shared")
    with pytest.raises(ValueError, match="Reused local directory"):
        streamx.StreamingDataset(
            streams=[
                streamx.Stream(remote=remote, local=local),
                streamx.Stream(remote=other, local=local),
            ],
            batch_size=4,
        )
    first = streamx.StreamingDataset(remote=remote, local=local, batch_size=4)
    with pytest.raises(ValueError, match="Reused local directory"):
        streamx.StreamingDataset(remote=other, local=local, batch_size=4)
    # The same remote may share the directory (mosaicml-streaming refuses that too).
    again = streamx.StreamingDataset(remote=remote, local=local, batch_size=4)
    assert remote_data.check(again[5]) == remote_data.check(first[5])

    streaming = pytest.importorskip("streaming")
    theirs_local = str(tmp_path / "theirs")
    theirs = streaming.StreamingDataset(remote=remote, local=theirs_local, batch_size=4)
    with pytest.raises(ValueError, match="Reused local directory"):
        streaming.StreamingDataset(remote=other, local=theirs_local, batch_size=4)
    del theirs


def test_shards_deleted_mid_epoch_are_fetched_again(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    seen = []
    for position, sample in enumerate(ds):
        seen.append(remote_data.check(sample))
        if position in (10, N // 2):
            for name in _user_files(local):
                if name != "index.json":
                    os.remove(local / name)
    assert sorted(seen) == list(range(N))
    for name in _user_files(local):  # and by random access
        if name != "index.json":
            os.remove(local / name)
    assert remote_data.check(ds[N - 1]) == N - 1


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_stale_cached_index_is_named(
    module_s3: S3, tmp_path: Path, compression: str | None
) -> None:
    url = module_s3.url(f"rewritten-{time.monotonic_ns()}")
    remote_data.write(url, 40, compression=compression, size_limit=6_000)
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=url, local=str(local), batch_size=4)
    assert remote_data.check(ds[0]) == 0
    del ds
    gc.collect()
    # Rewritten: fewer, larger shards under the same names. (A file whose size did not change
    # is caught only by validate_hash.)
    remote_data.write(url, 40, compression=compression, size_limit=12_000, blob_bytes=900)
    ds = streamx.StreamingDataset(remote=url, local=str(local), batch_size=4)
    second = ds.shards[1]
    name = (second.zip_data or second.raw_data).basename
    with pytest.raises(StaleIndexError, match="appears stale") as info:
        ds[int(ds.sample_offset_per_shard[1])]
    message = str(info.value)
    assert str(local / "index.json") in message
    assert "fresh `local`" in message and name in message
    assert name not in _user_files(local)  # the mismatched file is not left behind
    # A shard the remote no longer has: its absence points at the stale index too.
    last = ds.shards[-1]
    prefix = url.split("/", 3)[3]
    module_s3.client.delete_object(
        Bucket=module_s3.bucket, Key=f"{prefix}/{(last.zip_data or last.raw_data).basename}"
    )
    with pytest.raises(FileNotFoundError, match="not found.*is stale"):
        ds[39]
    with pytest.raises((FileNotFoundError, StaleIndexError), match="stale"):
        list(ds)

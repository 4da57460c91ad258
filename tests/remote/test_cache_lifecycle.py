"""The cache over an epoch, as mosaicml-streaming's tests see it: ``cache_limit=0`` means no
limit, a shard deleted from the cache mid-epoch is fetched again, and a missing remote file
fails with mosaicml-streaming's wording (its ``test_reader_download_fail``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import remote_data
from s3_bucket import S3

import streamx

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]

N = 90
BLOB = 2_000


@pytest.fixture(scope="module")
def remote(module_s3: S3) -> str:
    remote_data.write(
        module_s3.url("lifecycle"), N, compression=None, size_limit=24_000, blob_bytes=BLOB
    )
    return str(module_s3.url("lifecycle"))


BIG = 100_000


@pytest.fixture(scope="module")
def big_remote(module_s3: S3) -> str:
    """Samples of 100 kB, 10 per shard: a pass reads about one shard per chunk, so shards
    after the one being read are opened later."""
    url = module_s3.url("lifecycle-big")
    remote_data.write(url, N, compression=None, size_limit=10 * BIG + 8_000, blob_bytes=BIG)
    return str(url)


def _shard_files(ds: streamx.StreamingDataset) -> list[str]:
    return [shard.local_path(shard.raw_data) for shard in ds.shards]


def test_cache_limit_zero_means_no_limit(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(
        remote=remote, local=str(local), batch_size=4, shuffle=False, cache_limit=0
    )
    assert ds.num_shards >= 3
    got = [remote_data.check(s, BLOB) for s in ds]
    assert got == list(range(N))
    assert all(os.path.exists(path) for path in _shard_files(ds))
    assert ds.cache_usage == sum(os.path.getsize(p) for p in _shard_files(ds)) + os.path.getsize(
        local / "index.json"
    )
    # The oracle: 0 is falsy there, so no limit applies either.
    streaming = pytest.importorskip("streaming")
    theirs = streaming.StreamingDataset(
        remote=remote, local=str(tmp_path / "theirs"), batch_size=4, shuffle=False, cache_limit=0
    )
    assert len(list(theirs)) == N
    mine = sorted(n for n in os.listdir(local) if n != ".streamx")
    assert sorted(os.listdir(tmp_path / "theirs")) == mine


@pytest.mark.parametrize("workers", [0, 2])
def test_shard_deleted_mid_epoch_is_fetched_again(
    big_remote: str, tmp_path: Path, workers: int
) -> None:
    """mosaicml-streaming's ``test_accidental_shard_delete``: every shard file deleted by
    hand mid-epoch; those read after that are fetched again, and the epoch finishes."""
    local = tmp_path / "cache"
    warm = streamx.StreamingDataset(remote=big_remote, local=str(local), batch_size=4)
    assert sorted(remote_data.check(s, BIG) for s in warm) == list(range(N))
    del warm
    ds = streamx.StreamingDataset(remote=big_remote, local=str(local), batch_size=4, shuffle=False)
    files = _shard_files(ds)
    assert all(os.path.exists(p) for p in files)
    if workers:
        pytest.importorskip("torch")
        loader: Any = streamx.StreamingDataLoader(
            ds, batch_size=4, num_workers=workers, collate_fn=remote_data.list_collate
        )
    else:
        loader = ([s] for s in ds)
    got: list[int] = []
    for batch in loader:
        got += [remote_data.check(s, BIG) for s in batch]
        if len(got) == 12:  # reading shard 1: every shard file goes
            for path in files:
                os.remove(path)
    assert sorted(got) == list(range(N))
    back = [os.path.exists(p) for p in files]
    # Workers decode a few batches ahead (the shards they opened read on from their maps):
    # the shards of the epoch's second half were opened only after the deletion.
    first_after = 2 if workers == 0 else ds.num_shards // 2
    assert all(back[first_after:]), back
    # The next epoch brings back the rest.
    again = [remote_data.check(s, BIG) for s in ds]
    assert sorted(again) == list(range(N))
    assert all(os.path.exists(p) for p in files), [os.path.exists(p) for p in files]


def _local_remote(tmp_path: Path) -> Path:
    out = tmp_path / "remote"
    remote_data.write(str(out), 40, compression=None, size_limit=8_000)
    return out


@pytest.mark.parametrize(
    ("package", "missing"),
    # mosaicml-streaming only logs a missing shard from its download thread (its epoch ends
    # early without an error): only its missing index is an oracle.
    [("streamx", "index"), ("streamx", "shard"), ("streaming", "index")],
)
def test_download_fail_message_matches_mosaic(tmp_path: Path, missing: str, package: str) -> None:
    """mosaicml-streaming's own test asserts ``FileNotFoundError`` matching
    ``.*No such file or directory*`` for a local remote missing a file."""
    mod: Any = streamx if package == "streamx" else pytest.importorskip("streaming")
    remote = _local_remote(tmp_path)
    if missing == "index":
        os.remove(remote / "index.json")
    else:
        os.remove(remote / "shard.00000.mds")
    with pytest.raises(FileNotFoundError) as exc_info:
        dataset = mod.StreamingDataset(
            local=str(tmp_path / "local"),
            remote=str(remote),
            shuffle=False,
            download_timeout=1,
            batch_size=4,
        )
        for _ in dataset:
            pass
    assert exc_info.match(r".*No such file or directory*")
    assert str(remote) in str(exc_info.value)


def test_download_fail_names_the_s3_object(remote: str, module_s3: S3, tmp_path: Path) -> None:
    """From S3 both packages say ``Object <url> not found.``."""
    prefix = "lifecycle-missing"
    source = tmp_path / "src"
    remote_data.write(str(source), 20, compression=None, size_limit=8_000)
    for name in os.listdir(source):
        if name != "shard.00000.mds":
            module_s3.put(f"{prefix}/{name}", (source / name).read_bytes())
    shutil.rmtree(source)
    with pytest.raises(FileNotFoundError, match=r"Object s3://\S+/shard\.00000\.mds not found"):
        for _ in streamx.StreamingDataset(
            remote=module_s3.url(prefix), local=str(tmp_path / "local"), batch_size=4
        ):
            pass

"""Write a dataset to a loopback S3 server, then stream it back: every sample once, correct,
in mosaicml-streaming's order, single process and with DataLoader workers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import remote_data
from s3_bucket import S3
from s3_fault_proxy import FaultProxy

import streamx

pytestmark = pytest.mark.remote

N = 300


def _keys(s3: S3, prefix: str) -> list[str]:
    listed = s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=prefix)
    return sorted(obj["Key"][len(prefix) :] for obj in listed.get("Contents", []))


def test_writer_to_url_uploads_index_last(faulty_s3: S3, fault_proxy: FaultProxy) -> None:
    writer = remote_data.write(faulty_s3.url("ds"), N, progress_bar=False)
    index = json.loads(faulty_s3.get("ds/index.json"))
    shard_names = [shard["zip_data"]["basename"] for shard in index["shards"]]
    assert len(shard_names) > 3
    assert _keys(faulty_s3, "ds/") == sorted([*shard_names, "index.json"])
    for shard in index["shards"]:
        assert shard["compression"] == "zstd"
        assert set(shard["zip_data"]["hashes"]) == {"sha1", "xxh64"}
    puts = [path for _t, method, path, status, _f in fault_proxy.log.entries if method == "PUT"]
    uploaded = [p.split("?")[0].rsplit("/", 1)[-1] for p in puts]
    assert uploaded[-1] == "index.json"
    assert sorted(uploaded[:-1]) == sorted(shard_names)
    # A URL `out` stages in a temporary directory, removed after upload.
    assert not os.path.exists(writer.local)


@pytest.mark.parametrize("keep_local", [False, True])
def test_writer_tuple_keep_local(s3: S3, tmp_path: Path, keep_local: bool) -> None:
    local = tmp_path / "staging"
    remote_data.write((str(local), s3.url("ds")), N, keep_local=keep_local)
    index = json.loads(s3.get("ds/index.json"))
    names = {shard["zip_data"]["basename"] for shard in index["shards"]}
    assert set(_keys(s3, "ds/")) == names | {"index.json"}
    left = set(os.listdir(local))
    if keep_local:
        assert left == names | {"index.json"}
        assert (local / "index.json").read_bytes() == s3.get("ds/index.json")
    else:
        assert left <= {"index.json"}


@pytest.fixture
def remote_ds(s3: S3) -> str:
    remote_data.write(s3.url("ds"), N)
    return s3.url("ds")


def _mosaic() -> Any:
    streaming = pytest.importorskip("streaming")
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    return streaming


def test_single_process_epoch_matches_mosaic(remote_ds: str, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"batch_size": 8, "shuffle": True, "shuffle_block_size": 64}
    ours = streamx.StreamingDataset(remote=remote_ds, local=str(tmp_path / "ours"), **kwargs)
    got = [remote_data.check(s) for s in ours]
    assert sorted(got) == list(range(N))
    assert ours.cache_usage > 0
    streaming = _mosaic()
    theirs = streaming.StreamingDataset(remote=remote_ds, local=str(tmp_path / "theirs"), **kwargs)
    assert [int(s["id"]) for s in theirs] == got
    # The same files end up in both caches (raw shards only: keep_zip is off).
    ours_files = {f for f in os.listdir(tmp_path / "ours") if not f.startswith(".")}
    assert ours_files == set(os.listdir(tmp_path / "theirs"))
    assert not any(f.endswith(".zstd") for f in ours_files)


def test_dataloader_two_workers_matches_mosaic(
    remote_ds: str, tmp_path: Path, s3_route: str
) -> None:
    pytest.importorskip("torch")
    kwargs: dict[str, Any] = {"batch_size": 8, "shuffle": True, "shuffle_block_size": 64}

    def loader(lib: Any, local: str) -> Any:
        ds = lib.StreamingDataset(remote=remote_ds, local=local, **kwargs)
        return lib.StreamingDataLoader(
            ds,
            batch_size=8,
            num_workers=2,
            collate_fn=remote_data.list_collate,
            multiprocessing_context="fork",
        )

    got = remote_data.ids_of_batches(loader(streamx, str(tmp_path / "ours")))
    assert sorted(got) == list(range(N))
    streaming = _mosaic()
    want = [int(s["id"]) for b in loader(streaming, str(tmp_path / "theirs")) for s in b]
    assert got == want


def test_random_access_downloads_on_demand(remote_ds: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote_ds, local=str(local), batch_size=8)
    shards = [f for f in os.listdir(local) if f.endswith(".mds")]
    assert shards == []  # only index.json so far
    last = ds.shards[-1]
    i = N - 1
    assert remote_data.check(ds[i]) == i
    assert os.path.exists(local / last.raw_data.basename)
    assert sum(f.endswith(".mds") for f in os.listdir(local)) == 1
    assert remote_data.check(ds[-N]) == 0
    assert remote_data.check(ds[N // 2]) == N // 2
    assert [remote_data.check(s) for s in ds[[5, 250, 5]]] == [5, 250, 5]

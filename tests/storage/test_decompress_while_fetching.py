"""A compressed shard is decompressed while its parts download, from nginx capped per
connection (as S3 caps each GET)."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx

import streamx
from streamx.exceptions import CorruptShardError

pytestmark = pytest.mark.remote

MIB = 1 << 20


@pytest.fixture
def served(tmp_path: Path) -> Path:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    out = tmp_path / "served" / "bucket" / "ds"
    rng = random.Random(3)
    with streamx.MDSWriter(
        out=str(out), columns={"x": "bytes"}, compression="zstd", size_limit=64 * MIB
    ) as writer:
        for _ in range(12):  # random bytes: the compressed shard is as large as the raw one
            writer.write({"x": rng.randbytes(MIB // 2)})
    return tmp_path / "served"


def _watch(directory: Path, stop: threading.Event, seen: list[tuple[bool, int]]) -> None:
    """Records (is the compressed file still downloading, bytes decompressed so far)."""
    while not stop.is_set():
        names = os.listdir(directory) if directory.exists() else []
        downloading = any(n.endswith(".tmp") and n.lstrip(".").startswith("shard.") for n in names)
        out = 0
        for name in names:
            if name.startswith("shard.00000.mds.tmp."):
                try:
                    out = max(out, (directory / name).stat().st_size)
                except FileNotFoundError:
                    pass
        seen.append((downloading, out))
        time.sleep(0.005)


@pytest.mark.parametrize("keep_zip", [False, True])
def test_output_grows_before_the_download_ends(
    served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_zip: bool
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "2")
    from streamx.storage import pool

    monkeypatch.setattr(pool, "_POOLS", {})
    cache = tmp_path / "cache"
    seen: list[tuple[bool, int]] = []
    stop = threading.Event()
    with Nginx(served, limit_rate="4m") as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds", local=str(cache), keep_zip=keep_zip
        )
        watcher = threading.Thread(target=_watch, args=(cache, stop, seen))
        watcher.start()
        try:
            first = ds[0]["x"]
        finally:
            stop.set()
            watcher.join()
    assert len(first) == MIB // 2
    # While the compressed file was still arriving, its decompressed output already grew.
    assert max(out for downloading, out in seen if downloading) >= MIB
    names = sorted(n for n in os.listdir(cache) if n != ".streamx")  # the cache's ledger
    expected = ["index.json", "shard.00000.mds", *(["shard.00000.mds.zstd"] if keep_zip else [])]
    assert names == expected
    local = streamx.StreamingDataset(local=str(served / "bucket" / "ds"))
    assert all(ds[i]["x"] == local[i]["x"] for i in range(12))


def test_a_corrupt_compressed_file_names_the_shard_and_leaves_nothing(
    served: Path, tmp_path: Path
) -> None:
    zip_path = served / "bucket" / "ds" / "shard.00000.mds.zstd"
    data = bytearray(zip_path.read_bytes())
    data[:4] = bytes(4)  # no zstd frame; the size stays the index's
    zip_path.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with Nginx(served) as server:
        ds = streamx.StreamingDataset(remote=f"{server.endpoint}/bucket/ds", local=str(cache))
        with pytest.raises(CorruptShardError, match=r"shard\.00000\.mds\.zstd"):
            ds[0]
    assert sorted(n for n in os.listdir(cache) if n != ".streamx") == ["index.json"]

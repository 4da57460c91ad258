"""A compressed shard file being downloaded keeps a staging name until its raw file is in
place: a reader that found ``shard.*.mds.zstd`` under its own name decompressed it a second
time, outside the download's ``cache_limit`` reservation (issue 27)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import streamx


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("zips") / "data"
    with streamx.MDSWriter(
        out=str(out), columns={"id": "int", "blob": "bytes"}, compression="zstd", size_limit=4096
    ) as writer:
        for i in range(40):
            writer.write({"id": i, "blob": bytes([i]) * 500})
    return out


class Watching(streamx.Stream):
    """Records the cache's file names when decompression starts (mosaic's hook)."""

    seen: list[list[str]]

    def _decompress_shard_part(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append(sorted(os.listdir(os.path.join(self.local, self.split or ""))))
        super()._decompress_shard_part(*args, **kwargs)


@pytest.mark.parametrize("keep_zip", [False, True])
def test_no_zip_under_its_name_until_the_raw_file_is_in(
    remote: Path, tmp_path: Path, keep_zip: bool
) -> None:
    cache = tmp_path / "cache"
    stream = Watching(remote=str(remote), local=str(cache), keep_zip=keep_zip)
    stream.seen = []
    ds = streamx.StreamingDataset(streams=[stream], batch_size=4, validate_hash=None)
    ids = [int(s["id"]) for s in ds]
    assert sorted(ids) == list(range(40))
    assert len(stream.seen) == ds.num_shards  # each shard decompressed once, by its holder
    for names in stream.seen:
        # A compressed file under its name is only one kept beside its raw file.
        zipped = [n for n in names if n.endswith(".mds.zstd")]
        assert all(n.removesuffix(".zstd") in names for n in zipped), names
        assert any(n.endswith(".verify") for n in names), names  # the staged download
    left = sorted(n for n in os.listdir(cache) if n != ".streamx")
    raw = [f"shard.{i:05d}.mds" for i in range(ds.num_shards)]
    zips = [f"{n}.zstd" for n in raw] if keep_zip else []
    assert left == sorted(["index.json", *raw, *zips])

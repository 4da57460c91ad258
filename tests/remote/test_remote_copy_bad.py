"""A shard truncated on the remote is named as a bad remote copy, not a stale cache (issue 25
item 6): deleting the cache would only fetch the same bytes again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from s3_bucket import S3

from streamx import MDSWriter, StreamingDataset
from streamx.exceptions import CorruptShardError, StaleIndexError


def _upload(s3: S3, root: Path, prefix: str, truncate: str | None = None) -> str:
    for path in sorted(root.iterdir()):
        data = path.read_bytes()
        if path.name == truncate:
            data = data[: len(data) // 2]
        s3.put(f"{prefix}/{path.name}", data)
    return str(s3.url(prefix))


def _dataset(root: Path) -> Path:
    with MDSWriter(out=str(root), columns={"x": "int", "b": "bytes"}, size_limit=1 << 12) as w:
        for i in range(40):
            w.write({"x": i, "b": bytes(200)})
    return root


@pytest.mark.remote
def test_a_truncated_remote_shard_is_named_as_the_bad_remote_copy(s3: S3, tmp_path: Path) -> None:
    src = _dataset(tmp_path / "src")
    remote = _upload(s3, src, "ds", truncate="shard.00001.mds")
    for _attempt in range(2):  # the advice holds: a fresh cache gets the same answer
        local = tmp_path / "cache"
        data = StreamingDataset(remote=remote, local=str(local), batch_size=1)
        with pytest.raises(CorruptShardError) as caught:
            list(data)
        text = str(caught.value)
        assert f"{remote}/shard.00001.mds" in text, text
        assert "remote copy" in text and "will not help" in text
        shutil.rmtree(local)


@pytest.mark.remote
def test_a_rewritten_remote_still_reads_as_a_stale_cached_index(s3: S3, tmp_path: Path) -> None:
    src = _dataset(tmp_path / "src")
    remote = _upload(s3, src, "ds2")
    local = tmp_path / "cache"
    first = StreamingDataset(remote=remote, local=str(local), batch_size=1)
    assert first[0]["x"] == 0  # the index is cached now, shard 1 is not
    index = json.loads((src / "index.json").read_text())
    index["shards"][1]["raw_data"]["bytes"] += 7
    s3.put("ds2/index.json", json.dumps(index).encode())
    s3.put("ds2/shard.00001.mds", (src / "shard.00001.mds").read_bytes() + bytes(7))
    # The remote was rewritten: its index and shard agree, the cached index is stale.
    with pytest.raises(StaleIndexError, match="stale"):
        list(StreamingDataset(remote=remote, local=str(local), batch_size=1))

"""Background uploads: index.json last, keep_local, staging cleanup, failures surfacing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from s3_bucket import S3
from s3_fault_proxy import FaultConfig, FaultProxy

from streamx.storage.upload import Uploader, UploadFailedError

pytestmark = pytest.mark.remote

SHARDS = [f"shard.{i:05}.mds" for i in range(6)]


def _write(directory: str, names: list[str]) -> dict[str, bytes]:
    data = {name: os.urandom(50_000 + i) for i, name in enumerate(names)}
    for name, blob in data.items():
        Path(directory, name).write_bytes(blob)
    return data


def _run_writer(uploader: Uploader) -> dict[str, bytes]:
    data: dict[str, bytes] = {}
    for name in SHARDS:
        data |= _write(uploader.local, [name])
        uploader.upload_file(name)
    data |= _write(uploader.local, ["index.json"])
    uploader.finish()
    return data


def test_remote_out_uploads_everything_index_last(faulty_s3: S3, fault_proxy: FaultProxy) -> None:
    # Occasional 503s and dropped connections on PUT must only delay uploads.
    fault_proxy.config = FaultConfig(
        probability=0.3, kinds=("503", "drop"), methods=("PUT",), seed=5, max_per_key=1
    )
    uploader = Uploader(faulty_s3.url("ds"), max_workers=4, retry=3, progress_bar=True)
    staging = uploader.local
    data = _run_writer(uploader)
    for name, blob in data.items():
        assert faulty_s3.get(f"ds/{name}") == blob
    puts = [e for e in fault_proxy.log.entries if e[1] == "PUT" and e[3] == 200]
    assert puts[-1][2].endswith("/ds/index.json")
    assert len({e[2] for e in puts}) == len(SHARDS) + 1
    assert not os.path.exists(staging), "temporary staging dir must be removed"


def test_tuple_out_and_keep_local(s3: S3, tmp_path: Path) -> None:
    keep = Uploader((str(tmp_path / "keep"), s3.url("k")), keep_local=True)
    _run_writer(keep)
    assert sorted(os.listdir(tmp_path / "keep")) == sorted([*SHARDS, "index.json"])
    drop = Uploader((str(tmp_path / "drop"), s3.url("d")))
    data = _run_writer(drop)
    assert os.listdir(tmp_path / "drop") == []
    assert s3.get("d/index.json") == data["index.json"]


def test_local_out_uploads_nothing(tmp_path: Path) -> None:
    uploader = Uploader(str(tmp_path / "out"))
    assert uploader.remote is None
    _run_writer(uploader)
    assert len(os.listdir(tmp_path / "out")) == len(SHARDS) + 1


def test_local_to_local_remote(tmp_path: Path) -> None:
    uploader = Uploader((str(tmp_path / "l"), str(tmp_path / "r" / "sub")), keep_local=True)
    data = _run_writer(uploader)
    for name, blob in data.items():
        assert (tmp_path / "r" / "sub" / name).read_bytes() == blob


def test_a_failed_upload_surfaces(s3: S3, tmp_path: Path) -> None:
    missing_bucket = f"s3://{s3.bucket}-missing/ds"
    uploader = Uploader((str(tmp_path / "l"), missing_bucket), retry=2)
    _write(uploader.local, [*SHARDS[:2], "index.json"])
    uploader.upload_file(SHARDS[0])
    with pytest.raises(UploadFailedError, match="^One of the threads failed"):
        uploader.upload_file(SHARDS[1])
        uploader.finish()
    assert uploader._failed.is_set()
    with pytest.raises(UploadFailedError, match="^One of the threads failed"):
        uploader.finish()
    # Nothing was deleted locally, and no index was published.
    assert (tmp_path / "l" / "index.json").exists()
    assert (tmp_path / "l" / SHARDS[0]).exists()


def test_zero_retries_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="num_attempts must be at-least 1"):
        Uploader(str(tmp_path), retry=0)

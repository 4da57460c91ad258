"""One exception hierarchy: every class under StreamxError and a builtin, raised where meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import streamx
from streamx import _core, exceptions
from streamx.exceptions import (
    ChecksumError,
    CorruptIndexError,
    CorruptShardError,
    IndexJSONError,
    StreamxError,
)


def test_every_name_rust_raises_resolves_to_a_streamx_error() -> None:
    names = _core.exception_names()
    assert names
    for name in names:
        cls = getattr(exceptions, name)
        assert issubclass(cls, StreamxError), name
        assert name in exceptions.__all__


def test_every_class_also_derives_from_a_builtin_users_catch() -> None:
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        assert issubclass(cls, StreamxError)
        if cls is not StreamxError:
            builtins = [b for b in cls.__mro__ if b.__module__ == "builtins"]
            assert builtins[0] not in (Exception, BaseException, object), name


def test_storage_errors_keep_their_old_import_paths() -> None:
    from streamx.storage import UploadFailedError, download, s3_direct, upload

    assert download.DownloadTimeoutError is exceptions.DownloadTimeoutError
    assert download.TruncatedDownloadError is exceptions.TruncatedDownloadError
    assert upload.UploadFailedError is UploadFailedError is exceptions.UploadFailedError
    assert s3_direct.ChecksumMismatchError is exceptions.ChecksumMismatchError
    assert s3_direct.S3ResponseError is exceptions.S3ResponseError
    assert issubclass(exceptions.DownloadTimeoutError, TimeoutError)
    assert issubclass(exceptions.TruncatedDownloadError, OSError)


def _write(out: Path, hashes: list[str] | None = None) -> None:
    with streamx.MDSWriter(out=str(out), columns={"x": "int"}, hashes=hashes) as writer:
        for i in range(10):
            writer.write({"x": i})


def test_verify_file_raises_checksum_error(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    digest = _core.hash_file("sha1", str(path))
    _core.verify_file("sha1", str(path), digest)
    with pytest.raises(ChecksumError, match=r"Checksum failure: .*f$") as info:
        _core.verify_file("sha1", str(path), "0" * 40)
    assert isinstance(info.value, ValueError)


def test_corrupt_download_raises_checksum_error_and_is_deleted(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    _write(remote, hashes=["sha1"])
    shard = remote / "shard.00000.mds"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    local = tmp_path / "local"
    dataset = streamx.StreamingDataset(
        remote=str(remote), local=str(local), validate_hash="sha1", batch_size=1
    )
    with pytest.raises(ChecksumError, match="shard.00000.mds"):
        dataset[0]
    assert not (local / "shard.00000.mds").exists()


def test_index_without_shards_is_a_corrupt_index(tmp_path: Path) -> None:
    (tmp_path / "index.json").write_text(json.dumps({"version": 2}))
    with pytest.raises(CorruptIndexError, match="no `shards` list"):
        streamx.LocalDataset(str(tmp_path))


def test_bad_shard_entry_names_the_entry(tmp_path: Path) -> None:
    _write(tmp_path)
    index = json.loads((tmp_path / "index.json").read_text())
    index["shards"][0]["raw_data"]["bytes"] = "many"
    (tmp_path / "index.json").write_text(json.dumps(index))
    with pytest.raises(CorruptIndexError, match="shard 0"):
        streamx.LocalDataset(str(tmp_path))


def test_empty_index_is_also_a_json_decode_error(tmp_path: Path) -> None:
    (tmp_path / "index.json").write_text("")
    with pytest.raises(IndexJSONError, match="empty or corrupted") as info:
        streamx.LocalDataset(str(tmp_path))
    assert isinstance(info.value, json.JSONDecodeError)
    assert isinstance(info.value, CorruptIndexError)


def test_truncated_split_meta_is_a_corrupt_shard(tmp_path: Path) -> None:
    with streamx.CSVWriter(out=str(tmp_path), columns={"x": "int"}) as writer:
        for i in range(4):
            writer.write({"x": i})
    meta = tmp_path / "shard.00000.csv.meta"
    meta.write_bytes(meta.read_bytes()[:2])
    with pytest.raises(CorruptShardError, match=r"shard\.00000\.csv\.meta"):
        streamx.LocalDataset(str(tmp_path))[0]

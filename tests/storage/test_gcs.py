"""gs:// and gcs:// through gcsfs against gcp-storage-emulator on loopback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamx.storage.download import download_file
from streamx.storage.filesystems import get_filesystem
from streamx.storage.upload import Uploader

pytestmark = pytest.mark.remote


def test_gcs_roundtrip(gcs_emulator: str, tmp_path: Path) -> None:
    fs, _ = get_filesystem("gs://bucket-a/x")
    assert get_filesystem("gcs://bucket-a/y")[0] is fs
    fs.mkdir("bucket-a")
    staging = tmp_path / "staging"
    uploader = Uploader((str(staging), "gs://bucket-a/ds"), keep_local=True)
    blobs = {"shard.00000.mds": os.urandom(70_000), "index.json": b'{"version": 2, "shards": []}'}
    for name, data in blobs.items():
        (staging / name).write_bytes(data)
    uploader.upload_file("shard.00000.mds")
    uploader.finish()
    for name, data in blobs.items():
        download_file(f"gcs://bucket-a/ds/{name}", str(tmp_path / "cache" / name))
        assert (tmp_path / "cache" / name).read_bytes() == data
    with pytest.raises(FileNotFoundError, match="Object gs://bucket-a/ds/missing not found."):
        download_file("gs://bucket-a/ds/missing", str(tmp_path / "m"))

"""Upload errors name the file and the URL, even when the transport's own error names only a
host (issue 27, "errors without context")."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from streamx.exceptions import UploadFailedError
from streamx.storage import filesystems
from streamx.storage.merge_index import merge_index
from streamx.storage.upload import Uploader, upload_file


@pytest.fixture
def dead_endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    """An S3 endpoint on a loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("S3_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    for name, value in (("AWS_ACCESS_KEY_ID", "t"), ("AWS_SECRET_ACCESS_KEY", "t")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    filesystems.clear_cache()
    return f"http://127.0.0.1:{port}"


def test_upload_file_names_file_and_url(dead_endpoint: str, tmp_path: Path) -> None:
    src = tmp_path / "a.bin"
    src.write_bytes(b"abc")
    with pytest.raises(UploadFailedError) as caught:
        upload_file(str(src), "s3://bucket/ds/a.bin", retry=1)
    assert "s3://bucket/ds/a.bin" in str(caught.value)
    assert str(src) in str(caught.value)
    assert isinstance(caught.value.__cause__, OSError)


def test_uploader_failure_names_the_file(dead_endpoint: str, tmp_path: Path) -> None:
    local = tmp_path / "stage"
    local.mkdir()
    (local / "shard.00000.mds").write_bytes(b"x" * 10)
    up = Uploader((str(local), "s3://bucket/ds"), retry=1)
    up.upload_file("shard.00000.mds")
    with pytest.raises(UploadFailedError, match="^One of the threads failed") as caught:
        up.finish()
    assert "shard.00000.mds" in str(caught.value)


def test_merge_index_upload_names_the_url(dead_endpoint: str, tmp_path: Path) -> None:
    part = tmp_path / "root" / "p0"
    part.mkdir(parents=True)
    (part / "index.json").write_text('{"version": 2, "shards": []}')
    with pytest.raises(UploadFailedError, match="s3://bucket/ds/index.json"):
        merge_index([str(part / "index.json")], (str(tmp_path / "root"), "s3://bucket/ds"))

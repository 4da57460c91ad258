"""A body that never ends (no length, or chunks without end) is cut at the size the index
declares, on every route (plain HTTP, fsspec's HTTP, signed S3 GETs, s3fs): the file on disk
never grows past that size, not even for a moment, and the error names the URL."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from scripted_http import Request, ScriptedServer

from streamx.exceptions import TruncatedDownloadError
from streamx.storage import filesystems
from streamx.storage.download import download_file

pytestmark = pytest.mark.remote

DECLARED = 2_000  # the shard's size in its index
BLOCK = b"y" * 16_384


class Watcher:
    """Stats every file in ``where`` between the blocks the server sends."""

    def __init__(self, where: Path) -> None:
        self.where, self.largest, self.sent = where, 0, 0
        self._lock = threading.Lock()

    def look(self) -> None:
        for entry in os.scandir(self.where):
            try:
                size = entry.stat().st_size
            except FileNotFoundError:
                continue
            with self._lock:
                self.largest = max(self.largest, size)


def _endless(watcher: Watcher, chunked: bool) -> ScriptedServer:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD":
            handler.send_response(200)
            handler.send_header("Content-Length", str(DECLARED))
            handler.end_headers()
            return
        handler.send_response(200)
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        for _ in range(2_000):  # 32 MB at most, then the test fails on its own
            block = b"%x\r\n%s\r\n" % (len(BLOCK), BLOCK) if chunked else BLOCK
            handler.wfile.write(block)
            handler.wfile.flush()
            watcher.sent += len(BLOCK)
            watcher.look()

    return ScriptedServer(answer)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield
    filesystems.clear_cache()


@pytest.mark.usefixtures("aws_env")
@pytest.mark.parametrize("route", ["http", "http-fsspec", "s3-direct", "s3fs"])
@pytest.mark.parametrize("chunked", [False, True], ids=["until-close", "chunked"])
def test_an_endless_body_never_grows_the_file_past_the_declared_size(
    route: str, chunked: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    watcher = Watcher(cache)
    with _endless(watcher, chunked) as server:
        if route.startswith("http"):
            # A query string (a presigned URL, say) takes fsspec's HTTP filesystem.
            query = "?X-Signature=1" if route == "http-fsspec" else ""
            url = server.url("/ds/shard.00000.mds" + query)
        else:
            monkeypatch.setenv("S3_ENDPOINT_URL", server.endpoint)
            monkeypatch.setenv("STREAMX_S3_DIRECT", "1" if route == "s3-direct" else "0")
            filesystems.clear_cache()
            url = "s3://bucket/ds/shard.00000.mds"
        with pytest.raises(TruncatedDownloadError) as caught:
            download_file(
                url, str(cache / "shard.00000.mds"), retry=1, timeout=30, expected_size=DECLARED
            )
    watcher.look()
    assert watcher.largest <= DECLARED, f"{watcher.largest} bytes on disk"
    named = url if route.startswith("http") else "bucket/ds/shard.00000.mds"
    assert named in str(caught.value)
    assert os.listdir(cache) == []

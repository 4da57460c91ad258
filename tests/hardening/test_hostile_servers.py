"""Servers that trickle a body or send without end: ``download_timeout`` bounds the whole
transfer on every route (direct HTTP, direct S3, s3fs), each attempt is one request, and no
more than the expected size is ever written."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from trickle_server import TrickleServer

from streamx.exceptions import DownloadTimeoutError, TruncatedDownloadError
from streamx.storage import filesystems
from streamx.storage.download import download_file

SIZE = 100_000
Route = str


@pytest.fixture
def route_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
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


def _url(server: TrickleServer, route: Route, monkeypatch: pytest.MonkeyPatch) -> str:
    if route == "http":
        return f"{server.endpoint}/obj.bin"
    monkeypatch.setenv("S3_ENDPOINT_URL", server.endpoint)
    monkeypatch.setenv("STREAMX_S3_DIRECT", "1" if route == "s3-direct" else "0")
    filesystems.clear_cache()
    return "s3://bucket/obj.bin"


@pytest.mark.usefixtures("route_env")
@pytest.mark.parametrize("route", ["http", "s3-direct", "s3fs"])
@pytest.mark.parametrize("size", [SIZE, None])
def test_a_trickling_body_hits_the_whole_transfer_deadline(
    route: Route, size: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = TrickleServer(SIZE, "trickle")  # 100 kB at 20 B/s: over an hour if allowed
    try:
        url = _url(server, route, monkeypatch)
        with pytest.raises(DownloadTimeoutError):
            download_file(url, str(tmp_path / "out"), retry=3, timeout=1.0, expected_size=size)
        assert 1 <= server.gets() <= 3  # at most one request per attempt
    finally:
        server.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.usefixtures("route_env")
@pytest.mark.parametrize("route", ["http", "s3-direct", "s3fs"])
def test_an_endless_body_stops_at_the_expected_size(
    route: Route, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = TrickleServer(SIZE, "endless")
    try:
        url = _url(server, route, monkeypatch)
        with pytest.raises(TruncatedDownloadError):
            download_file(url, str(tmp_path / "out"), retry=1, timeout=30, expected_size=SIZE)
    finally:
        server.close()
    assert os.listdir(tmp_path) == []

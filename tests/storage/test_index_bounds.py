"""A file whose size nothing declares (``index.json``) is bounded by
``STREAMX_MAX_INDEX_BYTES`` (default 1 GiB): a server claiming 3 GiB is refused before a
file is made or a body read, a body running past the bound stops there, and the error names
the URL and the bound. Over plain HTTP and both S3 routes (moto)."""

from __future__ import annotations

import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from s3_bucket import S3
from scripted_http import Request, ScriptedServer

from streamx.exceptions import RemoteTooLargeError, TruncatedDownloadError
from streamx.storage.download import download_file
from streamx.storage.settings import DEFAULT_MAX_INDEX_BYTES, max_index_bytes

pytestmark = pytest.mark.remote

CLAIMED = 3 << 30


def _claims_3_gib(head: bool) -> ScriptedServer:
    """HEAD (or, when ``head`` is False, only GET: HEAD is refused) announces 3 GiB."""

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD" and not head:
            handler.send_response(405)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response(200)
        handler.send_header("Content-Length", str(CLAIMED))
        handler.end_headers()
        if request.method == "GET":
            handler.wfile.write(b"{" * 65536)  # the start of a body no one should read

    return ScriptedServer(answer)


@pytest.mark.parametrize("head", [True, False], ids=["head", "head-refused"])
def test_a_server_claiming_3_gib_is_refused_before_any_file_is_made(
    head: bool, tmp_path: Path
) -> None:
    with _claims_3_gib(head) as server:
        url = server.url("/ds/index.json")
        with pytest.raises(RemoteTooLargeError) as caught:
            download_file(url, str(tmp_path / "index.json"), retry=2, timeout=10)
        gets = server.count("GET")
    message = str(caught.value)
    assert url in message
    assert str(CLAIMED) in message
    assert str(DEFAULT_MAX_INDEX_BYTES) in message
    assert "STREAMX_MAX_INDEX_BYTES" in message
    assert gets == (0 if head else 1)  # not retried, and with HEAD not even asked
    assert os.listdir(tmp_path) == []


def test_an_unannounced_body_stops_at_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_MAX_INDEX_BYTES", "100000")
    largest = [0]

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD":
            handler.send_response(403)  # HEAD refused: one GET, checked as it goes
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for _ in range(1_000):
            handler.wfile.write(b"4000\r\n" + b"[" * 0x4000 + b"\r\n")
            handler.wfile.flush()
            for entry in os.scandir(tmp_path):
                largest[0] = max(largest[0], entry.stat().st_size)

    with ScriptedServer(answer) as server:
        url = server.url("/ds/index.json")
        with pytest.raises(TruncatedDownloadError, match="more than 100000 bytes") as caught:
            download_file(url, str(tmp_path / "index.json"), retry=1, timeout=10)
    assert url in str(caught.value)
    assert largest[0] <= 100_000
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("route", ["direct", "s3fs"])
def test_s3_index_over_the_bound_is_refused_unread(
    route: str, s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_S3_DIRECT", "1" if route == "direct" else "0")
    monkeypatch.setenv("STREAMX_MAX_INDEX_BYTES", "10000")
    url = s3.put("ds/index.json", b"[" * 20_000)
    with pytest.raises(RemoteTooLargeError, match="over the bound of 10000 bytes") as caught:
        download_file(url, str(tmp_path / "index.json"), retry=2, timeout=10)
    assert "ds/index.json" in str(caught.value)
    assert os.listdir(tmp_path) == []
    # Under the bound it arrives whole.
    monkeypatch.setenv("STREAMX_MAX_INDEX_BYTES", "20000")
    download_file(url, str(tmp_path / "index.json"), retry=2, timeout=10)
    assert (tmp_path / "index.json").read_bytes() == b"[" * 20_000


@pytest.mark.parametrize("raw", ["0", "-5", "lots"])
def test_a_bad_bound_is_named(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_MAX_INDEX_BYTES", raw)
    with pytest.raises(ValueError, match=f"STREAMX_MAX_INDEX_BYTES must be .*{raw!r}"):
        max_index_bytes()

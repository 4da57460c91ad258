"""A download of a file whose size no index gives (``index.json``) asks for it with a
``HEAD``. A throttled ``HEAD`` (503, 429) is waited out and asked again, as a throttled GET
is, and not taken as a server that refuses ``HEAD`` (whose file would then come in one GET
of unknown size). A server that throttles every try fails the download naming the URL."""

from __future__ import annotations

import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from scripted_http import Request, ScriptedServer, serve_bytes

from streamx.storage import http_pool
from streamx.storage.download import download_file
from streamx.storage.throttle import ThrottledError

pytestmark = pytest.mark.remote

DATA = os.urandom(40_000)


def _throttling_heads(throttled: int, status: int) -> ScriptedServer:
    """Answers the first ``throttled`` HEADs with ``status`` (``Retry-After: 0``)."""
    heads = [0]

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD":
            heads[0] += 1
            if heads[0] <= throttled:
                handler.send_response(status)
                handler.send_header("Retry-After", "0")
                handler.send_header("Content-Length", "0")
                handler.end_headers()
                return
        serve_bytes(handler, request, DATA)

    return ScriptedServer(answer)


@pytest.mark.parametrize("status", [429, 503])
def test_a_throttled_head_is_asked_again_before_the_get(status: int, tmp_path: Path) -> None:
    http_pool._close_all()
    with _throttling_heads(2, status) as server:
        download_file(server.url("/index.json"), str(tmp_path / "index.json"), timeout=10)
        heads = server.count("HEAD")
    assert (tmp_path / "index.json").read_bytes() == DATA
    assert heads == 3  # two throttled, then the size (before: one, then a GET of any size)


def test_a_head_throttled_every_try_fails_naming_the_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    http_pool._close_all()
    monkeypatch.setenv("STREAMX_THROTTLE_RETRIES", "3")
    with _throttling_heads(100, 503) as server:
        url = server.url("/index.json")
        with pytest.raises(ThrottledError, match=url):
            download_file(url, str(tmp_path / "index.json"), timeout=10)
        assert (server.count("HEAD"), server.count("GET")) == (3, 0)
    assert not (tmp_path / "index.json").exists()

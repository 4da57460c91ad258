"""A download of a file whose size no index gives (``index.json``) asks for it with a
``HEAD``. A throttled ``HEAD`` (503, 429) is waited out and asked again, as a throttled GET
is, and not taken as a server that refuses ``HEAD`` (whose file would then come in one GET
of unknown size). A server that throttles every try fails the download naming the URL."""

from __future__ import annotations

import os
import threading
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


def test_a_head_waiting_out_throttling_holds_no_connection_slot(tmp_path: Path) -> None:
    """While one file's HEAD waits out a ``Retry-After``, another file's GET runs on the
    only connection slot: the server sees it before the HEAD is asked again."""
    from streamx.storage.slots import LocalSlots

    http_pool._close_all()
    heads = [0]

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD":
            heads[0] += 1
            if heads[0] == 1:
                handler.send_response(503)
                handler.send_header("Retry-After", "1")
                handler.send_header("Content-Length", "0")
                handler.end_headers()
                return
        serve_bytes(handler, request, DATA)

    slots = LocalSlots(1)
    with ScriptedServer(answer) as server:
        index = tmp_path / "index.json"
        waiting = threading.Thread(
            target=download_file,
            args=(server.url("/index.json"), str(index)),
            kwargs={"timeout": 10, "slots": slots},
        )
        waiting.start()
        for _ in range(10_000):  # until the first HEAD was answered 503
            if heads[0]:
                break
            threading.Event().wait(0.001)
        other = tmp_path / "other.bin"
        download_file(
            server.url("/other.bin"), str(other), timeout=10, expected_size=len(DATA), slots=slots
        )
        waiting.join()
        asked = [(r.method, r.path) for r in server.requests]
    assert index.read_bytes() == DATA and other.read_bytes() == DATA
    # The second file's GET came while the first file's HEAD waited, not after it.
    assert asked.index(("GET", "/other.bin")) < asked.index(("HEAD", "/index.json"), 1)
    assert asked.count(("HEAD", "/index.json")) == 2

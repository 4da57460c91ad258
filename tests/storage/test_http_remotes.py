"""Plain HTTP remotes as ``curl -L`` meets them: redirects followed (bounded), a refused
``HEAD`` and a chunked answer handled, a server that ignores ``Range`` noticed once per host,
and every network error naming the URL."""

from __future__ import annotations

import os
import random
import socket
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from scripted_http import Request, ScriptedServer, serve_bytes

from streamx.exceptions import HttpResponseError
from streamx.storage import download
from streamx.storage.download import download_file
from streamx.storage.http_source import MAX_REDIRECTS

pytestmark = pytest.mark.remote

SIZE = 1 << 20
PART = 64 << 10  # 16 parts
DATA = random.Random(7).randbytes(SIZE)


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(PART))


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("sized", [True, False], ids=["in-parts", "one-get"])
def test_a_redirect_is_followed_to_another_host(status: int, sized: bool, tmp_path: Path) -> None:
    def final(request: Request, handler: BaseHTTPRequestHandler) -> None:
        serve_bytes(handler, request, DATA, etag='"one"')

    with ScriptedServer(final) as target:

        def moved(request: Request, handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(status)
            handler.send_header("Location", target.url("/new" + request.path))
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        with ScriptedServer(moved) as origin:
            dest = tmp_path / "shard.mds"
            download_file(
                origin.url("/ds/shard.mds"),
                str(dest),
                retry=1,
                timeout=30,
                expected_size=SIZE if sized else None,
            )
            first_hops = len(origin.requests)
    assert dest.read_bytes() == DATA
    assert all(r.path.startswith("/new/ds/") for r in target.requests)
    # The redirect is learned once per object, not once per part.
    assert first_hops <= (16 if sized else 1)


def test_a_relative_redirect_chain_is_followed(tmp_path: Path) -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        hops = request.path.count("/again")
        if hops < 3:
            handler.send_response(302)
            handler.send_header("Location", "again" + ("/again" * hops) + "/obj.bin")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        serve_bytes(handler, request, DATA)

    with ScriptedServer(answer) as server:
        dest = tmp_path / "obj.bin"
        download_file(server.url("/ds/obj.bin"), str(dest), retry=1, timeout=30)
    assert dest.read_bytes() == DATA


def test_a_redirect_loop_ends_naming_the_url(tmp_path: Path) -> None:
    def loop(request: Request, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(307)
        handler.send_header("Location", request.path)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with ScriptedServer(loop) as server:
        url = server.url("/ds/obj.bin")
        with pytest.raises(HttpResponseError, match=f"more than {MAX_REDIRECTS} redirects") as e:
            download_file(url, str(tmp_path / "obj.bin"), retry=1, timeout=30)
        asked = len(server.requests)
    assert url in str(e.value)
    assert asked == MAX_REDIRECTS + 1
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("refusal", [405, 403, 501])
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_a_refused_head_and_a_chunked_answer_take_one_get(
    refusal: int, chunked: bool, tmp_path: Path
) -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD":
            handler.send_response(refusal)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if not chunked:
            serve_bytes(handler, request, DATA)
            return
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for start in range(0, SIZE, 100_000):
            piece = DATA[start : start + 100_000]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")

    with ScriptedServer(answer) as server:
        dest = tmp_path / "index.json"
        download_file(server.url("/ds/index.json"), str(dest), retry=1, timeout=30)
        gets = server.count("GET")
    assert dest.read_bytes() == DATA
    assert gets == 1


def test_a_chunked_answer_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (1000, DATA[:1000]))

    with ScriptedServer(answer) as server:
        url = server.url("/ds/shard.mds")
        with pytest.raises(OSError, match="received 1000 of 2000 bytes") as caught:
            download_file(url, str(tmp_path / "shard.mds"), retry=1, expected_size=2000)
    assert url in str(caught.value)


@pytest.mark.parametrize("etag", [None, '"e1"'], ids=["no-etag", "etag"])
def test_a_server_ignoring_range_is_noticed_once_per_host(
    etag: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})  # the default 32 connections

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        serve_bytes(handler, request, DATA, etag=etag, honor_range=False)

    with ScriptedServer(answer) as server:
        first, second = tmp_path / "a.mds", tmp_path / "b.mds"
        download_file(server.url("/ds/a.mds"), str(first), retry=2, expected_size=SIZE)
        gets_first = server.count("GET")
        download_file(server.url("/ds/b.mds"), str(second), retry=2, expected_size=SIZE)
        gets_second = server.count("GET") - gets_first
    assert first.read_bytes() == DATA
    assert second.read_bytes() == DATA
    # One part's GET (the others of its 16 wait for its answer, then ask nothing) and one
    # whole GET; the next object of that host takes one GET straight away.
    assert gets_first == 2
    assert gets_second == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("sized", [True, False], ids=["sized", "head"])
def test_no_server_names_the_url(sized: bool, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/ds/index.json"
    with pytest.raises(ConnectionRefusedError) as caught:
        download_file(
            url, str(tmp_path / "index.json"), retry=1, expected_size=100 if sized else None
        )
    assert url in str(caught.value)
    assert caught.value.errno == 111

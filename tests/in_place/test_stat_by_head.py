"""An in-place source's http(s) files are looked at with one ``HEAD`` on the downloader's
own connections: the size and version fsspec's HTTP file system would report, without
importing aiohttp. A server that refuses ``HEAD`` or announces no length is asked through
fsspec as before; other failures are errors that name the file."""

from __future__ import annotations

import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx, max_overlap  # tests/storage, on the path by conftest
from scripted_http import Request, ScriptedServer, serve_bytes

from streamx.exceptions import HttpResponseError
from streamx.format.remote_files import stat_file
from streamx.storage.filesystems import get_filesystem

pytestmark = pytest.mark.remote

needs_nginx = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")
DATA = bytes(range(256)) * 40


@needs_nginx
def test_size_and_version_are_fsspecs(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(DATA)
    with Nginx(tmp_path) as nginx:
        url = f"{nginx.endpoint}/a.bin"
        found = stat_file(url)
        ours = nginx.log_when(lambda log: len(log) >= 1)
        fs, path = get_filesystem(url)
        info = fs.info(path)
    assert (found.url, found.size) == (url, len(DATA))
    assert found.version == info["ETag"] and found.version.startswith('"')
    assert [(e.method, e.uri) for e in ours] == [("HEAD", "/a.bin")]  # one request


@pytest.mark.parametrize("refusal", ["405", "no-length", "bad-length"])
def test_a_server_that_refuses_head_is_asked_through_fsspec(refusal: str) -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.method == "HEAD" and refusal == "405":
            handler.send_response(405)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        elif request.method == "HEAD" and refusal == "bad-length":
            handler.send_response(200)
            handler.send_header("Content-Length", "12 bytes")  # not a number: not a size
            handler.end_headers()
        elif request.method == "HEAD":  # a length-less answer: chunked, as dynamic servers do
            handler.send_response(200)
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
        else:
            serve_bytes(handler, request, DATA, etag='"v1"')

    with ScriptedServer(answer) as server:
        found = stat_file(server.url("/data.bin"))
        gets = server.count("GET")
    assert found.size == len(DATA)
    assert gets >= 1  # fsspec asked by GET where HEAD gave no length


def test_a_missing_file_and_a_server_error_name_the_url() -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        status = 404 if request.path.endswith("gone.bin") else 500
        handler.send_response(status)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with ScriptedServer(answer) as server:
        with pytest.raises(FileNotFoundError, match="gone.bin"):
            stat_file(server.url("/gone.bin"))
        with pytest.raises(HttpResponseError, match="broken.bin.*500"):
            stat_file(server.url("/broken.bin"))


def test_a_redirect_is_followed() -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.path == "/old.bin":
            handler.send_response(302)
            handler.send_header("Location", "/new.bin")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:
            serve_bytes(handler, request, DATA, etag='"new"')

    with ScriptedServer(answer) as server:
        found = stat_file(server.url("/old.bin"))
    assert (found.size, found.version) == (len(DATA), '"new"')


@needs_nginx
def test_listing_a_parquet_source_over_http_imports_no_aiohttp(tmp_path: Path) -> None:
    """A real process builds a dataset over two Parquet files named by brace expansion."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for number in range(2):
        table = pa.table({"id": list(range(number * 50, number * 50 + 50))})
        pq.write_table(table, tmp_path / f"p{number}.parquet")
    script = (
        "import sys, streamx\n"
        "stream = streamx.ParquetStream(remote=sys.argv[1], local=sys.argv[2])\n"
        "ds = streamx.StreamingDataset(streams=[stream], batch_size=4, shuffle=False)\n"
        "print(len(ds), ds[73]['id'], 'aiohttp' in sys.modules)\n"
    )
    with Nginx(tmp_path) as nginx:
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                f"{nginx.endpoint}/p{{0..1}}.parquet",
                str(tmp_path / "cache"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["100", "73", "False"]


@needs_nginx
def test_files_and_footers_are_asked_side_by_side(tmp_path: Path) -> None:
    """Twenty Parquet files named one by one, from a server that answers every request
    100 ms late: their HEADs overlap, and so do their footers' GETs (one after another,
    each file would cost its own round trips)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import streamx

    for number in range(20):
        pq.write_table(pa.table({"id": [number]}), tmp_path / f"p{number:02d}.parquet")
    try:
        server = Nginx(tmp_path, delay_ms=100)
    except FileNotFoundError as err:  # the echo module
        pytest.skip(str(err))
    with server as nginx:
        stream = streamx.ParquetStream(
            remote=f"{nginx.endpoint}/p{{00..19}}.parquet", local=str(tmp_path / "cache")
        )
        ds = streamx.StreamingDataset(streams=[stream], batch_size=4, shuffle=False)
        log = nginx.log_when(lambda log: len(log) >= 40)
    assert len(ds) == 20
    heads = [e for e in log if e.method == "HEAD"]
    footers = [e for e in log if e.method == "GET" and e.uri.endswith(".parquet")]
    assert len(heads) == 20 and len(footers) >= 20
    assert max_overlap(heads) >= 4
    assert max_overlap(footers) >= 4

"""Answers with many header fields (S3's ``x-amz-meta-*``, a CDN's own) are read on every
route, plain and TLS: a HEAD, a ranged GET (Rust's exchange) and a whole GET. Past the
bound every route shares (100 fields, as many as Python's ``http.client`` reads), the answer
is refused with an ``OSError`` naming the URL, never read into unbounded memory."""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from https_certs import trust_test_ca
from scripted_http import Request, ScriptedServer, serve_bytes

from streamx.format.remote_files import read_range
from streamx.storage import http_pool
from streamx.storage.http_source import HttpSource, plain_target

pytestmark = pytest.mark.remote

DATA = os.urandom(50_000)
MANY = 90  # with the server's own fields (Server, Date, lengths, ETag), under 100
TOO_MANY = 120

Route = Callable[[str, Path], bytes]


def _source(url: str) -> HttpSource:
    target = plain_target(url)
    assert target is not None
    return HttpSource(target)


def _stat(url: str, tmp: Path) -> bytes:
    size, _ = _source(url).stat(10)
    return DATA if size == len(DATA) else b""


def _range(url: str, tmp: Path) -> bytes:
    return DATA[:100] + read_range(url, 100, len(DATA) - 100, len(DATA), timeout=10, retry=1)


def _whole(url: str, tmp: Path) -> bytes:
    _source(url).fetch_whole(str(tmp / "whole"), len(DATA), 10)
    return (tmp / "whole").read_bytes()


ROUTES = {"head": _stat, "range": _range, "whole": _whole}


@pytest.fixture(params=["http", "https"])
def tls(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ssl.SSLContext | None]:
    http_pool._close_all()  # no connection kept from another test's server
    if request.param == "http":
        yield None
        return
    certs = trust_test_ca(tmp_path, monkeypatch, ("AWS_CA_BUNDLE",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs.chain, certs.key)
    yield context
    http_pool._close_all()


def _serving(fields: int, tls: ssl.SSLContext | None) -> ScriptedServer:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        end_headers = handler.end_headers

        def with_fields() -> None:
            for i in range(fields):
                handler.send_header(f"x-amz-meta-key{i}", f"value {i}")
            end_headers()

        handler.end_headers = with_fields  # type: ignore[method-assign]
        serve_bytes(handler, request, DATA, etag='"v1"')

    return ScriptedServer(answer, tls)


@pytest.mark.parametrize("route", ROUTES)
def test_an_answer_of_many_fields_is_read(
    route: str, tls: ssl.SSLContext | None, tmp_path: Path
) -> None:
    with _serving(MANY, tls) as server:
        assert ROUTES[route](server.url("/a.bin"), tmp_path) == DATA


@pytest.mark.parametrize("route", ROUTES)
def test_an_answer_past_the_bound_is_refused_naming_the_url(
    route: str, tls: ssl.SSLContext | None, tmp_path: Path
) -> None:
    with _serving(TOO_MANY, tls) as server:
        url = server.url("/a.bin")
        with pytest.raises(OSError, match="malformed answer head") as caught:
            ROUTES[route](url, tmp_path)
    assert url in str(caught.value)

"""A ranged read of an in-place source's file that the server refuses (401, 403) or finds
wrong (400, 410) fails at once, naming the URL and the status: asking again cannot change
the answer, and each try costs a round trip (a footer read with ``download_retry=5`` made
five of them). A throttled answer (503, 429) is waited out instead, for its Retry-After."""

from __future__ import annotations

import os
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import pytest
from scripted_http import Request, ScriptedServer, serve_bytes  # tests/storage, on the path
from throttle_server import Answer, ThrottleServer
from throttle_server import Request as ThrottleRequest

from streamx.exceptions import HttpResponseError
from streamx.format.remote_files import read_range

pytestmark = pytest.mark.remote

SIZE = 4096
DATA = os.urandom(SIZE)


def _gets_for(status: int, retry: int) -> int:
    with _answering(status, code="AccessDenied") as server:
        url = server.url("/f.parquet")
        with pytest.raises(PermissionError) as caught:
            read_range(url, SIZE - 8, 8, SIZE, timeout=10, retry=retry)
        assert url in str(caught.value) and str(status) in str(caught.value)
        return server.count("GET")


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_range_is_not_asked_again(status: int) -> None:
    one_try = _gets_for(status, retry=1)
    assert one_try >= 1
    assert _gets_for(status, retry=5) == one_try  # as many GETs as a single try sends


def _answering(
    status: int, retry_after: str | None = None, times: int = 1_000, code: str = "Gone"
) -> ScriptedServer:
    """Answers the first ``times`` GETs with ``status`` (an S3 error ``code``), the rest with
    the bytes."""
    answered = [0]

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        answered[0] += 1
        if answered[0] > times:
            serve_bytes(handler, request, DATA)
            return
        body = f"<Error><Code>{code}</Code></Error>".encode()
        handler.send_response(status)
        if retry_after is not None:
            handler.send_header("Retry-After", retry_after)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return ScriptedServer(answer)


def _client_error_gets(status: int, retry: int) -> int:
    with _answering(status) as server:
        url = server.url("/f.parquet")
        with pytest.raises(HttpResponseError) as caught:
            read_range(url, SIZE - 8, 8, SIZE, timeout=10, retry=retry)
        assert url in str(caught.value) and str(status) in str(caught.value)
        assert caught.value.status == status
        return server.count("GET")


@pytest.mark.parametrize("status", [400, 410])
def test_a_client_error_fails_at_once_naming_the_url(status: int) -> None:
    one_try = _client_error_gets(status, retry=1)
    assert one_try >= 1
    assert _client_error_gets(status, retry=5) == one_try  # not asked again


@pytest.mark.parametrize("status", [429, 503])
def test_a_throttled_range_waits_out_retry_after(status: int) -> None:
    """Throttled answers are waited out (their Retry-After) and asked again, without
    spending the read's single attempt."""
    server = ThrottleServer(DATA, _throttle_twice(status))
    try:
        got = read_range(server.url(), SIZE - 8, 8, SIZE, timeout=10, retry=1)
        logged = server.requests()
    finally:
        server.close()
    assert got == DATA[SIZE - 8 :]
    assert [entry.status for entry in logged] == [status, status, 206]
    # The server's own clock: the last try came at least the Retry-After after the refusal
    # before it. (The first refusal may be read by Rust, which keeps no headers: a jittered
    # backoff then, and the host's answers are read with their headers from then on.)
    assert logged[2].request.arrived - logged[1].answered >= 1.0


def _throttle_twice(status: int) -> Callable[[ThrottleRequest], Answer]:
    count = iter(range(1_000))

    def decide(request: ThrottleRequest) -> Answer:
        return Answer("status", status, "1") if next(count) < 2 else Answer("ok")

    return decide

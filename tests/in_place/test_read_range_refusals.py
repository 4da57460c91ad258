"""A ranged read of an in-place source's file that the server refuses (401, 403) fails at
once, naming the URL and the status: asking again cannot change a refusal, and each try
costs a round trip (a footer read with ``download_retry=5`` made five of them)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest
from scripted_http import Request, ScriptedServer  # tests/storage, on the path by conftest

from streamx.format.remote_files import read_range

pytestmark = pytest.mark.remote

SIZE = 4096


def _refusing(status: int) -> ScriptedServer:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        body = b"<Error><Code>AccessDenied</Code></Error>"
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return ScriptedServer(answer)


def _gets_for(status: int, retry: int) -> int:
    with _refusing(status) as server:
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

"""An error answer read through ``http.client`` whose page stalls (plain HTTP and TLS).

Where a host's answers' headers are wanted (it throttled lately), or for the first part of
a plain-HTTP download, a GET goes through ``http.client``. A ``503`` whose short page stops
and stalls is reported within seconds with its ``Retry-After``, not once the read timeout
passes, and its connection is closed (the same scenario as Rust's, in
``test_rust_plain_answers.py`` and ``test_rust_tls_answers.py``). Before, the page was read
with the GET's own timeout, and a page cut short raised ``IncompleteRead`` in place of the
status.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from https_certs import make_certs
from scripted_http import Request, ScriptedServer
from whole_gets import a_stalled_page_is_given_up

from streamx.storage import http_pool, s3_put, throttle
from streamx.storage.aws_credentials import forget_credentials

pytestmark = pytest.mark.remote


@pytest.fixture(autouse=True)
def fresh_hosts() -> Iterator[None]:
    http_pool._close_all()
    throttle.forget_hosts()
    yield
    http_pool._close_all()
    throttle.forget_hosts()


def test_a_stalled_page_read_by_http_client_is_given_up(tmp_path: Path) -> None:
    a_stalled_page_is_given_up(tmp_path, by_http_client=True)


def test_a_stalled_page_read_by_python_tls_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_DIR", "STREAMX_RUST_TLS"):
        monkeypatch.delenv(name, raising=False)
    certs = make_certs(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs.chain, certs.key)
    a_stalled_page_is_given_up(tmp_path, tls, by_http_client=True)


# The PUT's socket timeout, and how long the 503's page stalls at most (a bound for the
# test, should the page be waited for to the end).
_PUT_TIMEOUT_S = 20.0
_STALL_S = 40.0


def _s3_at(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str) -> None:
    """The direct S3 route to ``endpoint`` with static keys, off this machine's AWS files."""
    monkeypatch.setenv("S3_ENDPOINT_URL", endpoint)
    for name, value in (("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "STREAMX_S3_DIRECT", "S3_CANNED_ACL"):
        monkeypatch.delenv(name, raising=False)
    forget_credentials()


def test_a_stalled_page_of_a_put_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PUT answered by a ``503`` whose page stops 40 bytes short and stalls raises the
    status, naming the URL, well before its socket timeout; its connection is closed, and
    the next PUT, on another connection, is stored."""
    clients: list[int] = []  # each PUT's client port: its connection
    bodies: list[bytes] = []
    release = threading.Event()

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        clients.append(handler.client_address[1])
        bodies.append(handler.rfile.read(int(request.headers["content-length"])))
        if len(clients) == 1:
            handler.send_response(503)
            handler.send_header("Content-Length", "50")
            handler.end_headers()
            handler.wfile.write(b"<Error><Co")  # 10 of the 50 bytes announced
            handler.wfile.flush()
            release.wait(_STALL_S)
            handler.close_connection = True
            return
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    (tmp_path / "shard.mds").write_bytes(b"shard" * 1000)
    with ScriptedServer(answer) as server:
        _s3_at(monkeypatch, tmp_path, server.endpoint)
        route = s3_put.put_route("s3://bucket/ds/shard.mds", 5000)
        assert route is not None
        began = time.monotonic()
        try:
            with pytest.raises(s3_put.S3PutError) as refused:
                s3_put.put_file(route, str(tmp_path / "shard.mds"), timeout=_PUT_TIMEOUT_S)
            held = time.monotonic() - began
            # A correctness bound, not a timing: the page is given up in seconds.
            assert held < _PUT_TIMEOUT_S / 2, f"the stalled page held the PUT {held:.1f} s"
            assert str(refused.value) == (
                "PUT s3://bucket/ds/shard.mds: HTTP 503 Service Unavailable"
            )
            assert refused.value.status == 503
            s3_put.put_file(route, str(tmp_path / "shard.mds"), timeout=_PUT_TIMEOUT_S)
        finally:
            release.set()
    assert bodies == [b"shard" * 1000] * 2
    # The 503's connection, its page unread, was closed: the next PUT took another.
    assert len(clients) == 2 and clients[0] != clients[1]

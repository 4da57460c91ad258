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
from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import make_certs
from whole_gets import a_stalled_page_is_given_up

from streamx.storage import http_pool, throttle

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

"""A certificate that fails verification on Python's ``ssl`` (``STREAMX_RUST_TLS=0``, the
``http.client`` GETs) raises the :class:`TlsCertificateError` a Rust TLS session raises,
naming the host, and is not asked again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile_tls import HostileTlsServer
from https_certs import clear_ca_variables, make_certs

from streamx.exceptions import TlsCertificateError
from streamx.format.remote_files import read_range
from streamx.storage import http_pool


def test_an_untrusted_certificate_names_the_host_and_is_tried_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ranged GET (three attempts allowed) from a server whose CA no bundle trusts: one
    connection, and the error names the host and the request."""
    clear_ca_variables(monkeypatch)
    monkeypatch.setenv("STREAMX_RUST_TLS", "0")
    certs = make_certs(tmp_path)
    http_pool._close_all()
    data = os.urandom(1000)
    with HostileTlsServer(data, "stall", certs.chain, certs.key) as server:
        url = server.url()
        with pytest.raises(TlsCertificateError, match=f"HTTPS 127.0.0.1:{server.port}: ") as err:
            read_range(url, 0, 10, len(data), timeout=5, retry=3)
        assert server.accepted == 1
    http_pool._close_all()
    assert f"(GET {url})" in str(err.value) and "certificate" in str(err.value)

"""HTTPS GETs through the Rust TLS path (rustls), against real nginx serving a certificate
signed by a CA the test makes: bodies arrive intact, the CA bundle variables are honoured,
and a certificate that fails verification is an error naming the host and the failure,
with no request sent in the clear or unverified."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import Certs, clear_ca_variables, make_certs
from nginx_server import Nginx, find_nginx

from streamx import _core
from streamx.exceptions import TlsCertificateError
from streamx.storage import http_pool
from streamx.storage.http_get import PlainHttp, get_into

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")

_VARIABLES = ("AWS_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Certs:
    clear_ca_variables(monkeypatch)
    http_pool._close_all()  # no session kept from another test's server
    return make_certs(tmp_path)


@pytest.fixture
def served(tmp_path: Path, certs: Certs) -> Iterator[tuple[Nginx, bytes]]:
    root = tmp_path / "root"
    root.mkdir()
    data = os.urandom(7_000_003)
    (root / "obj.bin").write_bytes(data)
    with Nginx(root, tls=(certs.chain, certs.key)) as nginx:
        yield nginx, data
    http_pool._close_all()


def _target(nginx: Nginx, host: str = "127.0.0.1") -> PlainHttp:
    return PlainHttp(f"https://{host}:{nginx.port}/obj.bin", "https", host, nginx.port, "/obj.bin")


def _get(target: PlainHttp, path: Path, start: int = 0, length: int | None = None) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        return get_into(target, fd, start, length, timeout=5, deadline=time.monotonic() + 20)
    finally:
        os.close(fd)


def test_whole_and_ranged_gets_arrive_intact_through_rust(
    served: tuple[Nginx, bytes], certs: Certs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nginx, data = served
    monkeypatch.setenv("AWS_CA_BUNDLE", str(certs.ca))
    before = _core.tls_bodies_moved()
    assert _get(_target(nginx), tmp_path / "whole") == len(data)
    assert (tmp_path / "whole").read_bytes() == data
    parts = tmp_path / "parts"
    step = 2 << 20
    for start in range(0, len(data), step):
        length = min(step, len(data) - start)
        assert _get(_target(nginx), parts, start, length) == len(data)
    assert parts.read_bytes() == data
    # Every body went through the Rust session, none through Python's ssl.
    assert _core.tls_bodies_moved() - before == 1 + -(-len(data) // step)
    log = nginx.log_when(lambda e: len(e) >= 5)
    assert [entry.status for entry in log] == [200, 206, 206, 206, 206]


@pytest.mark.parametrize("variable", _VARIABLES)
def test_each_ca_bundle_variable_is_trusted(
    served: tuple[Nginx, bytes],
    certs: Certs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    nginx, data = served
    monkeypatch.setenv(variable, str(certs.ca))
    before = _core.tls_bodies_moved()
    assert _get(_target(nginx, "localhost"), tmp_path / "out", 5, 1000) == len(data)
    assert (tmp_path / "out").read_bytes()[5:] == data[5:1005]
    assert _core.tls_bodies_moved() == before + 1


def test_an_untrusted_certificate_names_host_and_failure_and_sends_nothing(
    served: tuple[Nginx, bytes], tmp_path: Path
) -> None:
    nginx, _ = served
    with pytest.raises(TlsCertificateError) as caught:
        _get(_target(nginx), tmp_path / "out")
    message = str(caught.value)
    assert f"127.0.0.1:{nginx.port}" in message
    assert "UnknownIssuer" in message
    assert caught.value.host == f"127.0.0.1:{nginx.port}"
    # No request reached the server: no retry in the clear, none unverified.
    time.sleep(0.2)
    assert nginx.log() == []
    assert not (tmp_path / "out").exists() or (tmp_path / "out").stat().st_size == 0


def test_a_certificate_for_another_name_is_refused(
    tmp_path: Path, certs: Certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "other").mkdir()
    other = make_certs(tmp_path / "other", names=("example.invalid",))
    root = tmp_path / "root2"
    root.mkdir()
    (root / "obj.bin").write_bytes(b"x" * 1000)
    monkeypatch.setenv("AWS_CA_BUNDLE", str(other.ca))
    with Nginx(root, tls=(other.chain, other.key)) as nginx:
        with pytest.raises(TlsCertificateError) as caught:
            _get(_target(nginx), tmp_path / "out")
        assert "127.0.0.1" in str(caught.value)
        assert 'not valid for name "127.0.0.1"' in str(caught.value)
        assert nginx.log() == []


def test_an_unreadable_bundle_is_named(
    served: tuple[Nginx, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nginx, _ = served
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "junk.pem"))
    with pytest.raises(OSError, match="REQUESTS_CA_BUNDLE=.*junk.pem"):
        _get(_target(nginx), tmp_path / "out")

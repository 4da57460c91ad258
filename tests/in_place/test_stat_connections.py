"""An in-place source's files looked at over HTTPS share kept-alive connections: nginx's
access log numbers each request's connection, and many HEADs arrive on few of them (each
on its own connection would cost a TCP and TLS handshake per file). Refusals name the URL
and the status; a certificate that fails verification names the host."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from https_certs import Certs, trust_test_ca  # tests/storage, on the path by conftest
from nginx_server import Nginx, find_nginx
from scripted_http import Request, ScriptedServer

from streamx.exceptions import TlsCertificateError
from streamx.format.remote_files import list_files, stat_file
from streamx.storage import http_pool

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

FILES = 40


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Certs:
    http_pool._close_all()  # no connection kept from another test's server
    return trust_test_ca(tmp_path, monkeypatch)


@pytest.fixture
def served(tmp_path: Path, certs: Certs) -> Iterator[Nginx]:
    root = tmp_path / "root"
    root.mkdir()
    for number in range(FILES):
        (root / f"f{number:02d}.bin").write_bytes(bytes(number + 1))
    with Nginx(root, tls=(certs.chain, certs.key)) as nginx:
        yield nginx
    http_pool._close_all()


def test_files_stated_one_after_another_share_one_connection(served: Nginx) -> None:
    found = [stat_file(f"{served.endpoint}/f{n:02d}.bin") for n in range(FILES)]
    log = served.log_when(lambda log: len(log) >= FILES)
    assert [f.size for f in found] == [n + 1 for n in range(FILES)]
    assert [e.method for e in log] == ["HEAD"] * FILES
    assert len({e.connection for e in log}) == 1


def test_files_a_pattern_names_are_stated_on_pooled_connections(served: Nginx) -> None:
    """Looked at 16 at a time: at most 16 connections, each kept for later files and for a
    second listing."""
    pattern = f"{served.endpoint}/f{{00..{FILES - 1}}}.bin"
    first = list_files(pattern)
    again = list_files(pattern)
    log = served.log_when(lambda log: len(log) >= 2 * FILES)
    assert first == again and [f.size for f in first] == [n + 1 for n in range(FILES)]
    assert len(log) == 2 * FILES
    assert len({e.connection for e in log}) <= 16  # 80 HEADs; one connection each before


def test_a_missing_file_names_url_and_status_and_keeps_the_connection(served: Nginx) -> None:
    missing = f"{served.endpoint}/nothing.bin"
    with pytest.raises(FileNotFoundError, match=f"HEAD {missing}: HTTP 404 Not Found"):
        stat_file(missing)
    # The refusal left the connection usable: the next file is asked on the same one.
    assert stat_file(f"{served.endpoint}/f00.bin").size == 1
    log = served.log_when(lambda log: len(log) >= 2)
    assert [e.status for e in log] == [404, 200]
    assert len({e.connection for e in log}) == 1


def test_a_refused_file_names_url_and_status() -> None:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(403)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with ScriptedServer(answer) as server:
        url = server.url("/locked.bin")
        with pytest.raises(PermissionError, match=f"HEAD {url}: HTTP 403 Forbidden"):
            stat_file(url)


@pytest.mark.parametrize("rust_tls", ["1", "0"])  # the HEAD on rustls, or on Python's ssl
def test_an_untrusted_certificate_names_the_host_and_the_reason(
    served: Nginx, monkeypatch: pytest.MonkeyPatch, rust_tls: str
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("STREAMX_RUST_TLS", rust_tls)
    http_pool._close_all()
    url = f"{served.endpoint}/f00.bin"
    with pytest.raises(TlsCertificateError, match=f"HTTPS 127.0.0.1:{served.port}: .*verif") as err:
        stat_file(url)
    assert f"(HEAD {url})" in str(err.value)
    assert served.log() == []  # nothing was asked on an unverified connection
    http_pool._close_all()

"""Every fsspec route reports in streamx's words what its file system hides down the chain
(``storage/filesystems.py::fsspec_errors``): a certificate that fails verification on
fsspec's HTTP file system is a ``TlsCertificateError`` naming the host and the reason, for
a download as for a stat, never "not found"."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import clear_ca_variables, make_certs
from nginx_server import Nginx, find_nginx

from streamx.exceptions import TlsCertificateError
from streamx.format.remote_files import stat_file
from streamx.storage import filesystems, http_pool
from streamx.storage.download import download_file

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")


@pytest.fixture
def untrusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nginx]:
    """nginx over HTTPS with a certificate from a CA nobody here trusts."""
    clear_ca_variables(monkeypatch)
    http_pool._close_all()
    filesystems.clear_cache()
    certs = make_certs(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "obj.bin").write_bytes(b"x" * 1000)
    with Nginx(root, tls=(certs.chain, certs.key)) as nginx:
        yield nginx
    filesystems.clear_cache()


@pytest.mark.parametrize("route", ["download", "stat"])
def test_a_certificate_failure_through_fsspec_names_host_and_reason(
    untrusted: Nginx, tmp_path: Path, route: str
) -> None:
    # A query string keeps the URL off the direct route: fsspec's HTTP file system reads it.
    url = f"{untrusted.endpoint}/obj.bin?v=1"
    with pytest.raises(TlsCertificateError, match=r"127\.0\.0\.1.*certificate.*verif") as caught:
        if route == "download":
            download_file(url, str(tmp_path / "out.bin"), retry=5, timeout=20)  # not retried
        else:
            stat_file(url)
    assert url in str(caught.value)
    assert not (tmp_path / "out.bin").exists()
    assert untrusted.log() == []  # nothing was asked over the unverified connection


def test_a_certificate_failure_is_not_retried(
    untrusted: Nginx, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No retry can fix a certificate: the first failure is the answer, on either route."""
    caplog.set_level(logging.INFO, logger="streamx.storage")
    for url in (f"{untrusted.endpoint}/obj.bin", f"{untrusted.endpoint}/obj.bin?v=1"):
        with pytest.raises(TlsCertificateError):
            download_file(url, str(tmp_path / "out.bin"), retry=3, timeout=20)
    assert not [r for r in caplog.records if "asking again" in r.getMessage()]

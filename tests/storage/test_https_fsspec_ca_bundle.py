"""The fsspec route over HTTPS (aiohttp: listings, globs, whole-file reads) trusts the CA
bundle the environment names when the filesystem is built, also a bundle named after
aiohttp was imported (aiohttp makes its default TLS context once, at import)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import clear_ca_variables
from tls_server import TlsServer

from streamx.storage import filesystems

aiohttp = pytest.importorskip("aiohttp")


@pytest.fixture
def no_bundle(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    clear_ca_variables(monkeypatch)
    filesystems.clear_cache()
    yield monkeypatch
    filesystems.clear_cache()


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE"])
def test_a_bundle_named_after_aiohttp_was_imported_is_trusted(
    variable: str, no_bundle: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import aiohttp.connector  # made its default context already, without the bundle

    assert aiohttp.connector is not None
    data = os.urandom(3000)
    with TlsServer(data, tmp_path) as server:
        fs, path = filesystems.get_filesystem(server.url())
        # No bundle yet: the self-signed certificate is refused.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            fs.cat_file(path)
        no_bundle.setenv(variable, str(server.cert_path))
        fs, path = filesystems.get_filesystem(server.url())
        assert fs.cat_file(path) == data
        assert fs.info(path)["size"] == len(data)

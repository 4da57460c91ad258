"""``azure://`` on streamx's own HTTP path (Blob Storage's REST GETs), against a loopback server
that checks every request's SAS or bearer token (``azure_blob_server.py``: no Azure-compatible
server runs here), over HTTP and HTTPS, behind the fault-injecting proxy: whole and ranged GETs,
throttling and cut bodies recovered, requests counted, errors naming the blob."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import remote_data
from s3_fault_proxy import FaultConfig, FaultProxy

import streamx
from azure_blob_server import ACCOUNT, KEY, BlobServer, connection_string
from streamx import _core
from streamx.runtime import metrics
from streamx.storage import accounting, azure_direct, filesystems, throttle
from streamx.storage.azure_direct import AzureRoute, SasInPath, TokenSource
from streamx.storage.download import download_file
from streamx.storage.http_source import HttpSource
from streamx.storage.object_sources import source_for

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]

BLOB = 20_000
SHARD = 2_300_000  # ~2.3 MB shards in 1 MiB parts: each shard is fetched as ranged GETs
REMOTE = f"azure://{ACCOUNT}.blob.core.windows.net/data"


@pytest.fixture
def blobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlobServer]:
    server = BlobServer(tmp_path / "blobs").start()
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(server.endpoint))
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(1 << 20))
    filesystems.clear_cache()
    yield server
    server.stop()
    filesystems.clear_cache()


def _write(server: BlobServer, name: str, count: int) -> None:
    out = server.root / "data" / name
    remote_data.write(str(out), count, size_limit=SHARD, blob_bytes=BLOB, compression=None)


def test_azure_urls_take_the_direct_route_with_a_sas_per_blob(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mosaicml-streaming's form and variables: the account from the host (or
    ``AZURE_ACCOUNT_NAME``), the key from ``AZURE_ACCOUNT_ACCESS_KEY``."""
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    monkeypatch.setenv("AZURE_ACCOUNT_ACCESS_KEY", KEY)
    url = "azure://acct.blob.core.windows.net/box/ds/a b+c.mds"
    source = source_for(url)
    assert isinstance(source, HttpSource)
    route = source.target
    assert isinstance(route, AzureRoute)
    assert (route.scheme, route.host, route.port) == ("https", "acct.blob.core.windows.net", None)
    path, _, query = route.path.partition("?")
    assert path == "/box/ds/a%20b%2Bc.mds"
    assert "sp=r" in query and "sr=b" in query and "sig=" in query
    assert isinstance(route.authorizer, SasInPath)
    assert route.headers({"range": "bytes=0-9"}) == {"range": "bytes=0-9"}
    monkeypatch.setenv("AZURE_ACCOUNT_NAME", "other")
    assert azure_direct.route_for(url, "acct.blob.core.windows.net", "/box/k") is not None
    other = azure_direct.route_for(url, "acct.blob.core.windows.net", "/box/k")
    assert other is not None and other.host == "other.blob.core.windows.net"
    monkeypatch.setenv("STREAMX_AZURE_DIRECT", "0")
    assert azure_direct.route_for(url, "acct.blob.core.windows.net", "/box/k") is None
    monkeypatch.setenv("STREAMX_AZURE_DIRECT", "1")
    assert azure_direct.route_for(url, "acct.blob.core.windows.net", "/box") is None  # no blob
    # No key: azure-identity's chain signs in, its token sent as a bearer (nothing in the path).
    monkeypatch.delenv("AZURE_ACCOUNT_ACCESS_KEY")
    bearer = azure_direct.route_for(url, "acct.blob.core.windows.net", "/box/k")
    assert bearer is not None and isinstance(bearer.authorizer, TokenSource)
    assert bearer.path == "/box/k"


def test_a_dataset_streams_from_azure_through_faults(
    blobs: BlobServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(blobs, "ds", 240)
    proxy = FaultProxy(("127.0.0.1", int(blobs.endpoint.rsplit(":", 1)[1]))).start()
    try:
        monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(proxy.url))
        # Shards fetched ahead in 1 MiB parts too (8 MiB by default: one GET per shard here),
        # so that every shard goes by ranged parts.
        monkeypatch.setenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", str(1 << 20))
        # Every GET may be refused with 503, dropped, cut short or delayed, twice at most.
        proxy.config = FaultConfig(probability=0.5, kinds=("503", "drop", "truncate", "slow"))
        before = accounting.totals()
        ds = streamx.StreamingDataset(
            remote=f"{REMOTE}/ds",
            local=str(tmp_path / "cache"),
            batch_size=8,
            validate_hash="xxh64",
            download_retry=4,
        )
        ids = sorted(remote_data.check(s, BLOB) for s in ds)
    finally:
        proxy.stop()
    assert ids == list(range(240))
    assert [fault for *_, fault in proxy.log.entries if fault], "the proxy injected no fault"
    served = [(m, b, s) for m, b, s, _ in blobs.log]
    assert ("GET", "ds/index.json", 200) in served
    ranged = [r for m, b, s, r in blobs.log if m == "GET" and s == 206 and b.endswith(".mds")]
    assert len(ranged) >= 2 * ds.num_shards, blobs.log  # shards in parts, by range
    assert not [entry for entry in blobs.log if entry[2] == 403], "a request was not authorized"
    counted = accounting.totals()["RANGED_GET"] - before["RANGED_GET"]
    assert counted >= 2 * ds.num_shards


def test_throttling_is_waited_out_and_reported(
    blobs: BlobServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``503 ServerBusy`` with ``Retry-After`` (Azure's throttling) is waited out, counted
    and logged, never raised while tries remain."""
    monkeypatch.setattr(throttle.logger, "disabled", False)
    caplog.set_level(logging.WARNING, logger=throttle.logger.name)
    throttle.forget_hosts()
    _write(blobs, "busy", 40)
    blobs.busy_first = 3
    before = metrics.snapshot()["throttled"]
    ds = streamx.StreamingDataset(
        remote=f"{REMOTE}/busy", local=str(tmp_path / "cache"), batch_size=4
    )
    assert sorted(remote_data.check(s, BLOB) for s in ds) == list(range(40))
    assert [s for _, _, s, _ in blobs.log].count(503) == 3
    assert metrics.snapshot()["throttled"] - before == 3
    lines = [r.getMessage() for r in caplog.records if r.name == throttle.logger.name]
    assert any("is throttling (HTTP 503)" in line for line in lines), lines
    throttle.forget_hosts()


def test_a_missing_blob_and_a_wrong_key_are_named(
    blobs: BlobServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(FileNotFoundError, match=f"Object {REMOTE}/nope not found"):
        download_file(f"{REMOTE}/nope", str(tmp_path / "nope"))
    _write(blobs, "keyed", 4)
    wrong = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleS0wMDA="
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(blobs.endpoint, wrong))
    started = time.monotonic()
    with pytest.raises(PermissionError, match="HTTP 403.*AuthenticationFailed"):
        download_file(f"{REMOTE}/keyed/index.json", str(tmp_path / "index.json"))
    assert time.monotonic() - started < 30  # refused, not retried for minutes
    assert not (tmp_path / "index.json").exists()


@dataclass
class _Token:
    token: str
    expires_on: int


class _Issuer:
    """An ``azure.core`` TokenCredential that hands out numbered tokens, each valid for
    ``lifetime`` seconds (what ``azure.identity``'s credentials return)."""

    def __init__(self, lifetime: int) -> None:
        self.lifetime, self.issued = lifetime, 0

    def get_token(self, *scopes: str) -> _Token:
        assert scopes == ("https://storage.azure.com/.default",)
        self.issued += 1
        return _Token("test-bearer-token", int(time.time()) + self.lifetime)


def test_a_bearer_token_goes_with_every_get_and_is_renewed(
    blobs: BlobServer, tmp_path: Path
) -> None:
    """With no key, the route sends ``azure.identity``'s token as a bearer (the server refuses
    anything else), asking for a new one only when it nears expiry."""
    _write(blobs, "token", 4)
    lasting, expiring = _Issuer(3600), _Issuer(60)
    for issuer in (lasting, expiring):
        source = TokenSource(issuer)
        for n in range(3):
            route = AzureRoute(
                f"{REMOTE}/token/index.json",
                "http",
                "127.0.0.1",
                int(blobs.endpoint.rsplit(":", 1)[1]),
                f"/{ACCOUNT}/data/token/index.json",
                source,
            )
            HttpSource(route).fetch_whole(str(tmp_path / f"index{n}.json"), None, 30.0)
            want = (blobs.root / "data" / "token" / "index.json").read_bytes()
            assert (tmp_path / f"index{n}.json").read_bytes() == want
    assert lasting.issued == 1
    assert expiring.issued == 3  # 60 s left is inside the renewal margin


def test_https_bodies_are_written_by_rust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from https_certs import trust_test_ca

    certs = trust_test_ca(tmp_path, monkeypatch)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(1 << 20))
    server = BlobServer(tmp_path / "blobs", tls=(certs.chain, certs.key)).start()
    try:
        monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(server.endpoint))
        filesystems.clear_cache()
        _write(server, "tls", 60)
        moved = _core.tls_bodies_moved()
        ds = streamx.StreamingDataset(
            remote=f"{REMOTE}/tls", local=str(tmp_path / "cache"), batch_size=4
        )
        assert sorted(remote_data.check(s, BLOB) for s in ds) == list(range(60))
        assert _core.tls_bodies_moved() > moved
        assert any(s == 206 for _, _, s, _ in server.log)
    finally:
        server.stop()
        filesystems.clear_cache()

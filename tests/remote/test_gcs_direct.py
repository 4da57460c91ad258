"""``gs://`` on streamx's own HTTP path (GCS's JSON API media download), against
gcp-storage-emulator on loopback, behind the fault-injecting proxy: whole and ranged GETs,
throttling and dropped or cut bodies recovered, counted as requests, errors as gcsfs's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import remote_data
from s3_fault_proxy import FaultConfig, FaultProxy

import streamx
from streamx.storage import accounting, filesystems
from streamx.storage.download import download_file
from streamx.storage.filesystems import get_filesystem
from streamx.storage.gcs_direct import GcsRoute
from streamx.storage.http_source import HttpSource
from streamx.storage.object_sources import FsspecSource, source_for

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]

# ~2.3 MB shards in 1 MiB parts: each shard is fetched as ranged GETs.
BLOB = 20_000
SHARD = 2_300_000


@pytest.fixture
def gcs_proxy(gcs_emulator: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The fault proxy in front of the emulator; gcsfs and streamx both go through it."""
    host, port = gcs_emulator.removeprefix("http://").split(":")
    proxy = FaultProxy((host, int(port)), FaultConfig()).start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
    filesystems.clear_cache()
    yield proxy
    proxy.stop()
    filesystems.clear_cache()


def _media_gets(proxy: FaultProxy) -> list[str]:
    return [
        path
        for _, method, path, _, _ in proxy.log.entries
        if method == "GET" and path.startswith("/download/storage/v1/b/") and "alt=media" in path
    ]


def test_gs_and_gcs_take_the_direct_route_unless_turned_off(
    gcs_emulator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for url in ("gs://bucket/ds/shard.00000.mds", "gcs://bucket/ds/a b+c.mds"):
        source = source_for(url)
        assert isinstance(source, HttpSource), url
        assert isinstance(source.target, GcsRoute)
        assert source.url == url
    direct = source_for("gcs://bucket/ds/a b+c.mds")
    assert isinstance(direct, HttpSource)
    route = direct.target
    assert isinstance(route, GcsRoute)
    assert route.path == "/download/storage/v1/b/bucket/o/ds%2Fa%20b%2Bc.mds?alt=media"
    monkeypatch.setenv("STREAMX_GCS_DIRECT", "0")
    assert isinstance(source_for("gs://bucket/ds/x"), FsspecSource)


def test_a_bearer_token_goes_with_every_get(gcs_emulator: str) -> None:
    """Outside the emulator the route carries gcsfs's OAuth token, as gcsfs's own GET does."""
    from gcsfs.core import GCSFileSystem
    from google.oauth2.credentials import Credentials

    token = Credentials(token="ya29.test-token")  # type: ignore[no-untyped-call]
    fs = GCSFileSystem(token=token, skip_instance_cache=True)
    route = GcsRoute("gs://b/k", "https", "storage.googleapis.com", None, "/x", fs.credentials)
    headers = route.headers({"range": "bytes=0-9"})
    assert headers["range"] == "bytes=0-9"
    assert {k.lower(): v for k, v in headers.items()}["authorization"] == "Bearer ya29.test-token"


def test_a_dataset_streams_from_gs_through_faults(
    gcs_proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, _ = get_filesystem("gs://direct/x")
    fs.mkdir("direct")
    remote_data.write("gs://direct/ds", 240, size_limit=SHARD, blob_bytes=BLOB, compression=None)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(1 << 20))
    # Shards fetched ahead in 1 MiB parts too (8 MiB by default: one GET per shard here).
    monkeypatch.setenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", str(1 << 20))
    # Every GET may be refused with 503, dropped, cut short or delayed, twice at most.
    gcs_proxy.config = FaultConfig(probability=0.5, kinds=("503", "drop", "truncate", "slow"))
    before = accounting.totals()
    ds = streamx.StreamingDataset(
        remote="gs://direct/ds",
        local=str(tmp_path / "cache"),
        batch_size=8,
        validate_hash="xxh64",
        download_retry=4,
    )
    ids = sorted(remote_data.check(s, BLOB) for s in ds)
    assert ids == list(range(240))
    faults = [fault for *_, fault in gcs_proxy.log.entries if fault]
    assert faults, "the proxy injected no fault"
    media = _media_gets(gcs_proxy)
    assert any("shard.00000.mds" in p for p in media), media
    ranged = accounting.totals()["RANGED_GET"] - before["RANGED_GET"]
    assert ranged >= 2 * ds.num_shards  # streamx's own ranged GETs, counted


def test_a_missing_gs_object_reads_as_gcsfs_says(gcs_proxy: FaultProxy, tmp_path: Path) -> None:
    fs, _ = get_filesystem("gs://direct-missing/x")
    fs.mkdir("direct-missing")
    with pytest.raises(FileNotFoundError, match="Object gs://direct-missing/ds/nope not found."):
        download_file("gs://direct-missing/ds/nope", str(tmp_path / "nope"))
    assert _media_gets(gcs_proxy), "the GET did not go through the direct route"

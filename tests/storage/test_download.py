"""Atomic, retried, time-bounded downloads from a loopback S3 server and a faulty proxy."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from s3_bucket import S3
from s3_fault_proxy import FaultConfig, FaultProxy

from streamx.storage.download import DownloadTimeoutError, TruncatedDownloadError, download_file
from streamx.storage.s3_direct import ChecksumMismatchError

pytestmark = pytest.mark.remote


@pytest.fixture(params=["direct", "s3fs"], autouse=True)
def s3_route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs over both S3 routes: streamx's signed GETs and s3fs's client."""
    monkeypatch.setenv("STREAMX_S3_DIRECT", "1" if request.param == "direct" else "0")
    return str(request.param)


def _blobs(s3: S3, n: int, seed: int = 0) -> dict[str, bytes]:
    rng = random.Random(seed)
    blobs = {f"ds/shard.{i:05}.mds": rng.randbytes(rng.randint(1, 300_000)) for i in range(n)}
    for key, data in blobs.items():
        s3.put(key, data)
    return blobs


def test_download_roundtrip(s3: S3, tmp_path: Path) -> None:
    blobs = _blobs(s3, 2)
    for key, data in blobs.items():
        dest = tmp_path / "cache" / key
        download_file(s3.url(key), str(dest))
        assert dest.read_bytes() == data
    key, data = next(iter(blobs.items()))
    download_file(s3.url(key), str(tmp_path / "x"), expected_size=len(data))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "x"]


def test_not_found_names_the_url_and_leaves_nothing(
    faulty_s3: S3, fault_proxy: FaultProxy, tmp_path: Path
) -> None:
    url = faulty_s3.url("nope/index.json")
    with pytest.raises(FileNotFoundError, match=f"Object {url} not found."):
        download_file(url, str(tmp_path / "index.json"), retry=5)
    # The proxy (no faults configured) logs every request: one GET, its 404 final although
    # four more attempts were allowed.
    asked = [(method, path, status) for _, method, path, status, _ in fault_proxy.log.entries]
    assert asked == [("GET", f"/{faulty_s3.bucket}/nope/index.json", 404)]
    assert list(tmp_path.iterdir()) == []


def test_zero_attempts_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="num_attempts must be at-least 1"):
        download_file(str(tmp_path / "a"), str(tmp_path / "b"), retry=0)


def test_every_file_arrives_intact_through_faults(
    faulty_s3: S3, fault_proxy: FaultProxy, tmp_path: Path
) -> None:
    blobs = _blobs(faulty_s3, 24, seed=1)
    fault_proxy.config = FaultConfig(probability=0.6, max_per_key=2, seed=7, slow_s=0.2)
    for key, data in blobs.items():
        download_file(faulty_s3.url(key), str(tmp_path / key), retry=4, timeout=20)
        assert (tmp_path / key).read_bytes() == data
    assert fault_proxy.faults_injected() >= 10
    kinds = {entry[4] for entry in fault_proxy.log.entries}
    assert {"drop", "503", "truncate", "short"} <= kinds
    assert not [p for p in (tmp_path / "ds").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("scheme", ["s3", "http"])
def test_short_body_is_detected_and_retried(
    scheme: str, faulty_s3: S3, fault_proxy: FaultProxy, tmp_path: Path
) -> None:
    url = faulty_s3.put("short.bin", b"x" * 10_000, public=True)
    if scheme == "http":
        pytest.importorskip("aiohttp")
        url = faulty_s3.http_url("short.bin")
    fault_proxy.config = FaultConfig(probability=1.0, kinds=("short",), max_per_key=1)
    # A body cut short with a matching Content-Length: the response checksum catches it on
    # S3 (streamx's own check or botocore's); over plain HTTP only the size check can.
    expected = TruncatedDownloadError if scheme == "http" else Exception
    match = {"http": "is 5000 bytes, 10000 expected", "s3": None}[scheme]
    if scheme == "s3" and os.environ["STREAMX_S3_DIRECT"] == "1":
        expected, match = ChecksumMismatchError, "does not match its x-amz-checksum-crc32"
    with pytest.raises(expected, match=match):
        download_file(url, str(tmp_path / "a"), retry=1)
    assert not (tmp_path / "a").exists()
    fault_proxy.config = FaultConfig(probability=1.0, kinds=("short",), max_per_key=1, seed=1)
    fault_proxy._counts.clear()
    download_file(url, str(tmp_path / "b"), retry=2)
    assert (tmp_path / "b").read_bytes() == b"x" * 10_000


def test_a_stalled_connection_times_out_then_recovers(
    faulty_s3: S3, fault_proxy: FaultProxy, tmp_path: Path
) -> None:
    url = faulty_s3.put("stall.bin", b"y" * 200_000)
    fault_proxy.config = FaultConfig(probability=1.0, kinds=("stall",), max_per_key=1)
    start = time.monotonic()
    with pytest.raises(DownloadTimeoutError):
        download_file(url, str(tmp_path / "a"), retry=1, timeout=1.0)
    assert time.monotonic() - start < 10
    assert list(tmp_path.iterdir()) == [], "a timed-out attempt left a file behind"
    fault_proxy._counts.clear()
    start = time.monotonic()
    download_file(url, str(tmp_path / "b"), retry=2, timeout=1.0)
    assert time.monotonic() - start < 15
    assert (tmp_path / "b").read_bytes() == b"y" * 200_000


def test_http_and_file_urls(s3: S3, tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    s3.put("h/a.bin", b"hello", public=True)
    # moto serves public objects to anonymous path-style GETs: a plain HTTP server.
    download_file(s3.http_url("h/a.bin"), str(tmp_path / "a"))
    assert (tmp_path / "a").read_bytes() == b"hello"
    with pytest.raises(FileNotFoundError, match="Object http.* not found."):
        download_file(s3.http_url("h/missing"), str(tmp_path / "m"))
    download_file(f"file://{tmp_path}/a", str(tmp_path / "sub" / "b"))
    assert (tmp_path / "sub" / "b").read_bytes() == b"hello"

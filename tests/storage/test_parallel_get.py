"""Parallel ranged GETs: against nginx capped per connection, moto's S3, and hostile servers."""

from __future__ import annotations

import multiprocessing
import os
import random
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_http import HostileServer
from nginx_server import ECHO_MODULE, Nginx, find_nginx, max_overlap
from s3_bucket import S3
from s3_fault_proxy import FaultProxy

from streamx.exceptions import SizeMismatchError
from streamx.storage import s3_direct
from streamx.storage.download import DownloadTimeoutError, TruncatedDownloadError, download_file
from streamx.storage.slots import ConnectionSlots

pytestmark = pytest.mark.remote

MIB = 1 << 20


def _ensure_nginx(with_echo: bool = False) -> None:
    """nginx, and its echo module when asked, installed from Debian if missing."""
    missing = [] if find_nginx() else ["nginx"]
    if with_echo and not os.path.exists(ECHO_MODULE):
        missing.append("libnginx-mod-http-echo")
    if not missing:
        return
    try:
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
            subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as err:
        pytest.skip(f"{' and '.join(missing)} missing, and apt-get could not install it: {err}")


@pytest.fixture
def bucket_dir(tmp_path: Path) -> Path:
    root = tmp_path / "served"
    (root / "bucket" / "ds").mkdir(parents=True)
    return root


@pytest.fixture
def throttled_nginx(bucket_dir: Path) -> Iterator[Nginx]:
    """nginx serving ``bucket_dir`` at 4 MB/s per connection."""
    _ensure_nginx()
    with Nginx(bucket_dir, limit_rate="4m") as server:
        yield server


def _blob(path: Path, size: int, seed: int = 0) -> bytes:
    data = random.Random(seed).randbytes(size)
    path.write_bytes(data)
    return data


@pytest.fixture
def fresh_download_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A download pool sized by this test's settings: the process's pool keeps the size it
    was created with, and an earlier test (tests/storage/test_range_reads.py) may have
    created it with one thread."""
    from streamx.storage import pool

    monkeypatch.setattr(pool, "_POOLS", {})


@pytest.mark.parametrize("route", ["s3-direct", "s3fs", "http"])
@pytest.mark.usefixtures("fresh_download_pool")
def test_ranged_parts_over_several_connections_at_once(
    route: str,
    throttled_nginx: Nginx,
    bucket_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _blob(bucket_dir / "bucket" / "ds" / "shard.mds", 6 * MIB + 12_345)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setenv("S3_ENDPOINT_URL", throttled_nginx.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("STREAMX_S3_DIRECT", "0" if route == "s3fs" else "1")
    from streamx.storage import filesystems

    filesystems.clear_cache()
    url = (
        f"{throttled_nginx.endpoint}/bucket/ds/shard.mds"
        if route == "http"
        else "s3://bucket/ds/shard.mds"
    )
    slots = ConnectionSlots(str(tmp_path / "slots"), 8)
    dest = tmp_path / "cache" / "shard.mds"
    download_file(url, str(dest), expected_size=len(data), slots=slots)
    assert dest.read_bytes() == data
    ranged = [e for e in throttled_nginx.log() if e.method == "GET" and e.status == 206]
    # Seven parts (six of 1 MiB and the rest), together exactly the file, each once.
    assert sorted(e.sent for e in ranged) == sorted([MIB] * 6 + [12_345])
    assert sum(e.sent for e in ranged) == len(data)
    # At 4 MB/s per connection each part takes a quarter second: they were served at once,
    # over different connections.
    assert max_overlap(ranged) >= 4
    assert len({e.connection for e in ranged}) >= 4
    assert not [p for p in dest.parent.iterdir() if p.name.endswith(".tmp")]


def test_slots_bound_concurrent_gets(
    throttled_nginx: Nginx, bucket_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _blob(bucket_dir / "bucket" / "ds" / "big.bin", 4 * MIB, seed=1)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    url = f"{throttled_nginx.endpoint}/bucket/ds/big.bin"
    slots = ConnectionSlots(str(tmp_path / "slots"), 2)
    dest = tmp_path / "big.bin"
    download_file(url, str(dest), expected_size=len(data), slots=slots)
    assert dest.read_bytes() == data
    ranged = [e for e in throttled_nginx.log() if e.status == 206]
    assert len(ranged) == 4
    assert max_overlap(ranged) == 2  # two slots: never more GETs at once, and both used


@pytest.mark.usefixtures("fresh_download_pool")
def test_a_server_with_latency_serves_parts_heads_and_misses(
    bucket_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link with latency that bench_objstore measures: every request answered 50 ms
    late, through the echo module, and still answered as nginx answers without it."""
    _ensure_nginx(with_echo=True)
    data = _blob(bucket_dir / "bucket" / "ds" / "late.bin", 3 * MIB + 77, seed=2)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    with Nginx(bucket_dir, delay_ms=50) as server:
        slots = ConnectionSlots(str(tmp_path / "slots"), 4)
        dest = tmp_path / "late.bin"
        url = f"{server.endpoint}/bucket/ds/late.bin"
        download_file(url, str(dest), expected_size=len(data), slots=slots)
        assert dest.read_bytes() == data
        with pytest.raises(FileNotFoundError, match="missing.bin"):
            download_file(
                f"{server.endpoint}/bucket/ds/missing.bin", str(tmp_path / "m"), slots=slots
            )
        entries = server.log_when(lambda logged: any(e.status == 404 for e in logged))
    ranged = [e for e in entries if e.status == 206]
    assert sorted(e.sent for e in ranged) == sorted([MIB] * 3 + [77])
    assert any(e.status == 404 for e in entries)
    # nginx's own clock: no request was answered before its delay. The logged time and the
    # sleep's timer each round to a millisecond, so 50 ms may log as 49 (seen in CI) but
    # never as much less: 48 ms is the floor two roundings allow.
    assert min(e.end - e.start for e in entries) >= 0.048


def _hold_slot(directory: str, ready: object, release: object) -> None:
    slots = ConnectionSlots(directory, 2)
    with slots.hold():
        ready.set()  # type: ignore[attr-defined]
        release.wait(30)  # type: ignore[attr-defined]


def test_slots_are_shared_across_processes(tmp_path: Path) -> None:
    directory = str(tmp_path / "slots")
    ctx = multiprocessing.get_context("fork")  # the holders only lock files
    ready, release = ctx.Event(), ctx.Event()
    holders = [ctx.Process(target=_hold_slot, args=(directory, ready, release)) for _ in range(2)]
    for proc in holders:
        ready.clear()
        proc.start()
        assert ready.wait(30)
    slots = ConnectionSlots(directory, 2)
    assert slots.busy() == 2
    release.set()
    for proc in holders:
        proc.join(30)
        assert proc.exitcode == 0
    assert slots.busy() == 0  # released by the kernel as the holders closed their files
    with slots.hold():
        assert slots.busy() == 1


def test_parts_from_moto_through_both_s3_routes(
    faulty_s3: S3, fault_proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    data = random.Random(3).randbytes(3 * MIB + 7)
    faulty_s3.put("ds/obj.bin", data)
    for direct in ("1", "0"):
        monkeypatch.setenv("STREAMX_S3_DIRECT", direct)
        dest = tmp_path / f"obj-{direct}.bin"
        download_file(faulty_s3.url("ds/obj.bin"), str(dest), expected_size=len(data))
        assert dest.read_bytes() == data
    gets = [e for e in fault_proxy.log.entries if e[1] == "GET" and "obj.bin" in e[2]]
    assert len(gets) == 2 * 4  # four parts per route


def test_an_object_of_another_size_than_expected_is_refused_in_parts(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shard rewritten on the remote under a cached index: its parts must not be stitched
    # into a file of the old size (the Content-Range total gives the object's real size).
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    s3.put("ds/grown.bin", random.Random(4).randbytes(5 * MIB))
    for direct in ("1", "0"):
        monkeypatch.setenv("STREAMX_S3_DIRECT", direct)
        dest = tmp_path / f"grown-{direct}.bin"
        with pytest.raises(SizeMismatchError, match=f"{5 * MIB}"):
            download_file(s3.url("ds/grown.bin"), str(dest), retry=3, expected_size=3 * MIB)
        assert not dest.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    server = HostileServer(random.Random(5).randbytes(3 * MIB), request.param)
    yield server
    server.close()


@pytest.mark.parametrize("hostile", ["stall"], indirect=True)
def test_a_body_stalling_mid_way_fails_within_the_timeout(
    hostile: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    for size in (len(hostile.data), None):  # in parts, and one whole GET
        start = time.monotonic()
        with pytest.raises(DownloadTimeoutError):
            download_file(
                hostile.url(), str(tmp_path / "out"), retry=2, timeout=0.5, expected_size=size
            )
        # Two attempts of 0.5 s and a backoff of at most 0.25 s, with a margin.
        assert time.monotonic() - start < 5
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("hostile", ["overannounce"], indirect=True)
def test_a_larger_announced_body_is_refused_unread(
    hostile: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    with pytest.raises(TruncatedDownloadError, match="Content-Range"):
        download_file(hostile.url(), str(tmp_path / "a"), retry=1, expected_size=3 * MIB)
    # A file of one part takes one whole GET: the announced length is checked first.
    with pytest.raises(SizeMismatchError, match=f"is {6 * MIB} bytes, 1000 expected"):
        download_file(hostile.url(), str(tmp_path / "b"), retry=1, expected_size=1000)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("hostile", ["oversend"], indirect=True)
def test_bytes_past_the_body_are_never_read(
    hostile: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    for name in ("a", "b"):  # the second download must not read the first one's excess
        download_file(hostile.url(), str(tmp_path / name), retry=1, expected_size=3 * MIB)
        assert (tmp_path / name).read_bytes() == hostile.data


@pytest.mark.parametrize("hostile", ["ignore-range"], indirect=True)
def test_a_server_ignoring_ranges_gets_one_get(
    hostile: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    download_file(hostile.url(), str(tmp_path / "a"), retry=1, expected_size=3 * MIB)
    assert (tmp_path / "a").read_bytes() == hostile.data


def test_s3_without_credentials_names_the_url_and_where_streamx_looked(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3.put("ds/private.bin", b"secret")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    from streamx.storage import filesystems

    filesystems.clear_cache()
    s3_direct.forget_credentials()
    url = s3.url("ds/private.bin")
    with pytest.raises(PermissionError) as caught:
        download_file(url, str(tmp_path / "out"), retry=1)
    message = str(caught.value)
    assert f"Object {url} not found!" in message
    assert "no AWS credentials were found" in message
    assert "AWS_ACCESS_KEY_ID" in message and "~/.aws/credentials" in message


class _BodyMoves:
    """Records what ``_core.socket_to_file`` and ``_core.ranged_get`` did, and does it (the
    real functions)."""

    def __init__(self) -> None:
        from streamx import _core

        self._core = _core
        self.moved: list[tuple[int, str]] = []
        self.ranged: list[tuple[str, int, int]] = []  # (outcome, bytes moved, status)

    def socket_to_file(
        self, sock: int, file: int, offset: int, length: int, seconds: float
    ) -> tuple[int, str]:
        result = self._core.socket_to_file(sock, file, offset, length, seconds)
        self.moved.append(result)
        return result

    def ranged_get(
        self, *args: Any
    ) -> tuple[
        tuple[str, int, int | None, bool, int], tuple[list[tuple[str, str]], bytes, bool] | None
    ]:
        result = self._core.ranged_get(*args)
        self.ranged.append((result[0][0], result[0][1], result[0][4]))
        return result


@pytest.mark.usefixtures("fresh_download_pool")
def test_plain_http_bodies_move_through_rust(
    bucket_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ranged part is exchanged by Rust from request to body, in one GET each, but for
    the one that learns the object's ETag (through http.client, its body then moved by
    Rust) while the others wait to ask If-Match; a whole GET's body is moved by Rust after
    http.client read its head."""
    from streamx.storage import http_body, http_rust

    _ensure_nginx()
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    moves = _BodyMoves()
    monkeypatch.setattr(http_body, "_core", moves)
    monkeypatch.setattr(http_rust, "_core", moves)
    data = _blob(bucket_dir / "bucket" / "ds" / "blob", 5 * MIB + 123)
    with Nginx(bucket_dir) as server:
        url = f"{server.endpoint}/bucket/ds/blob"
        download_file(url, str(tmp_path / "parts"), expected_size=len(data))
        assert (tmp_path / "parts").read_bytes() == data
        assert len(moves.ranged) == 5 and len(moves.moved) == 1  # the lead part's body
        assert all(outcome == "complete" and status == 206 for outcome, _, status in moves.ranged)
        left = [MIB] * 5 + [123]
        for _, size, _ in moves.ranged:
            left.remove(size)
        # What Rust moved of the lead part, after what http.client buffered with its head.
        assert moves.moved[0][1] == "complete" and left[0] - 8192 < moves.moved[0][0] <= left[0]
        moves.moved.clear()
        small = _blob(bucket_dir / "bucket" / "ds" / "small", 700_000, seed=1)
        download_file(f"{server.endpoint}/bucket/ds/small", str(tmp_path / "whole"))  # one GET
        assert (tmp_path / "whole").read_bytes() == small
        assert len(moves.moved) == 1 and moves.moved[0][1] == "complete"
        # What Rust moved plus what http.client had buffered with the head is the body.
        assert 700_000 - 8192 < moves.moved[0][0] <= 700_000
        assert len(moves.ranged) == 5


@pytest.mark.usefixtures("fresh_download_pool")
def test_tls_bodies_take_the_buffered_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS connection's bytes must be decrypted in Python: its bodies never reach the
    socket-to-file mover, and arrive intact, whole and in ranged parts."""
    from tls_server import TlsServer

    from streamx.storage import http_body, http_pool, http_rust

    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setattr(http_pool, "_TLS", {})  # the process's TLS contexts, made afresh
    moves = _BodyMoves()
    monkeypatch.setattr(http_body, "_core", moves)
    monkeypatch.setattr(http_rust, "_core", moves)
    data = random.Random(4).randbytes(3 * MIB + 77)
    with TlsServer(data, tmp_path) as server:
        monkeypatch.setenv("AWS_CA_BUNDLE", str(server.cert_path))
        download_file(server.url(), str(tmp_path / "parts"), expected_size=len(data))
        download_file(server.url(), str(tmp_path / "whole"))  # size from a HEAD
    assert (tmp_path / "parts").read_bytes() == data
    assert (tmp_path / "whole").read_bytes() == data
    assert moves.moved == [] and moves.ranged == []

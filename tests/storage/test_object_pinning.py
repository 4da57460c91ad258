"""An object rewritten on the server while its parts download is never delivered mixed: the
parts are pinned to the first answer's ETag (``If-Match``, and each answer's ETag compared),
and a change means every part is fetched again, or an error naming the object."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx
from scripted_http import Request, ScriptedServer, serve_bytes

from streamx.exceptions import ObjectChangedError
from streamx.storage import download, filesystems
from streamx.storage.download import download_file

pytestmark = pytest.mark.remote

SIZE = 1 << 20
PART = 64 << 10  # 16 parts


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(PART))
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield
    filesystems.clear_cache()


class Rewritten:
    """An object that is rewritten (new bytes, new ETag) once ``after`` ranged GETs were
    answered, or on every ranged GET when ``after`` is 0."""

    def __init__(self, after: int) -> None:
        rng = random.Random(after)
        self.versions = [rng.randbytes(SIZE), rng.randbytes(SIZE)]
        self.after, self.answered, self.conditional, self.refused = after, 0, 0, 0
        self._lock = threading.Lock()

    def answer(self, request: Request, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            ranged = "range" in request.headers
            self.conditional += "if-match" in request.headers
            # after == 0: a new version for every request.
            version = self.answered if self.after == 0 else int(self.answered >= self.after)
            self.answered += ranged
        data = self.versions[min(version, 1)] if self.after else random.randbytes(SIZE)
        with self._lock:
            self.refused += request.headers.get("if-match", f'"v{version}"') != f'"v{version}"'
        serve_bytes(handler, request, data, etag=f'"v{version}"')


def _url(server: ScriptedServer, route: str, monkeypatch: pytest.MonkeyPatch) -> str:
    if route == "http":
        return server.url("/ds/shard.00000.mds")
    monkeypatch.setenv("S3_ENDPOINT_URL", server.endpoint)
    monkeypatch.setenv("STREAMX_S3_DIRECT", "1" if route == "s3-direct" else "0")
    filesystems.clear_cache()
    return "s3://bucket/ds/shard.00000.mds"


@pytest.mark.parametrize("route", ["http", "s3-direct", "s3fs"])
def test_a_rewrite_between_parts_fetches_every_part_again(
    route: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rewritten = Rewritten(after=3)
    dest = tmp_path / "shard.00000.mds"
    with ScriptedServer(rewritten.answer) as server:
        download_file(
            _url(server, route, monkeypatch), str(dest), retry=2, timeout=30, expected_size=SIZE
        )
    got = dest.read_bytes()
    assert got == rewritten.versions[1]  # the new version whole, never a mix
    assert rewritten.answered > 16  # the first version's parts were fetched again
    if route != "s3fs":  # s3fs checks each answer's ETag; its parts need not wait to ask
        assert rewritten.conditional > 0  # the parts after the first asked If-Match


@pytest.mark.parametrize("route", ["http", "s3-direct", "s3fs"])
def test_an_object_that_never_holds_still_fails_naming_it(
    route: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rewritten = Rewritten(after=0)
    with ScriptedServer(rewritten.answer) as server:
        url = _url(server, route, monkeypatch)
        with pytest.raises(ObjectChangedError, match="changed on the server") as caught:
            download_file(url, str(tmp_path / "out"), retry=2, timeout=30, expected_size=SIZE)
    assert "ds/shard.00000.mds" in str(caught.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("route", ["http", "s3-direct", "s3fs"])
def test_a_412_to_a_later_part_fetches_every_part_again(
    route: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One connection, so every part after the first carries the pin's If-Match: the part
    asked after the rewrite gets a 412, which starts the object over (through s3fs the 412
    reaches us as an ``OSError`` with only the server's message, not its code)."""
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})  # built with the variable above
    rewritten = Rewritten(after=3)
    dest = tmp_path / "shard.00000.mds"
    with ScriptedServer(rewritten.answer) as server:
        download_file(
            _url(server, route, monkeypatch), str(dest), retry=2, timeout=30, expected_size=SIZE
        )
    assert dest.read_bytes() == rewritten.versions[1]
    assert rewritten.refused > 0  # a part was refused with 412, not taken as an error
    assert rewritten.answered > 16


@pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")
def test_nginx_answers_412_for_a_part_of_a_replaced_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real static server: the file is replaced once the first part is in (one connection,
    so parts go one after another); the next part's If-Match gets nginx's 412."""
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})  # built with the variable above
    root = tmp_path / "root"
    (root / "ds").mkdir(parents=True)
    served = root / "ds" / "shard.00000.mds"
    old, new = random.randbytes(SIZE), random.randbytes(SIZE)
    served.write_bytes(old)
    replaced: list[int] = []

    def replace(_tmp: str, done: int) -> None:
        if not replaced:
            spare = root / "spare"
            spare.write_bytes(new)
            stat = served.stat()
            os.utime(spare, (stat.st_atime + 60, stat.st_mtime + 60))  # nginx's ETag: mtime
            os.replace(spare, served)
            replaced.append(done)

    dest = tmp_path / "cache" / "shard.00000.mds"
    with Nginx(root) as nginx:
        url = f"{nginx.endpoint}/ds/shard.00000.mds"
        with pytest.raises(ObjectChangedError, match="HTTP 412") as caught:
            download_file(url, str(dest), retry=2, timeout=30, expected_size=SIZE, progress=replace)
        log = nginx.log_when(lambda log: any(entry.status == 412 for entry in log))
    statuses = [entry.status for entry in log]
    assert url in str(caught.value)
    assert replaced == [PART]
    assert 412 in statuses
    assert not dest.exists()


@pytest.mark.parametrize("range_reads", ["1", "0"], ids=["range-reads", "whole-shards"])
def test_a_dataset_never_yields_a_sample_of_two_versions(
    range_reads: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two versions of one dataset with the same index (the new one's samples lie at other
    offsets, in a shard of the same size): the shard, large enough to be read by range
    while it downloads, is rewritten on the server after its third GET. Every sample is
    whole and of one version; with range reads off, all of the new one."""
    import streamx

    monkeypatch.setenv("STREAMX_RANGE_READS", range_reads)
    count, pad = 72, 64 << 10  # a 4.5 MiB shard
    versions = []
    for version in (0, 1):
        out = tmp_path / f"v{version}"
        with streamx.MDSWriter(
            out=str(out), columns={"x": "int", "pad": "bytes"}, size_limit=8 << 20
        ) as writer:
            for i in range(count):
                shift = 4096 * version * (1 if i % 2 else -1)  # the same total
                writer.write({"x": 1000 * version + i, "pad": _pad(version, i, pad + shift)})
        versions.append(out)
    index = (versions[0] / "index.json").read_bytes()
    assert index == (versions[1] / "index.json").read_bytes()
    shards = [(v / "shard.00000.mds").read_bytes() for v in versions]
    answered = [0]
    lock = threading.Lock()

    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        if request.path.endswith("index.json"):
            serve_bytes(handler, request, index)
            return
        with lock:
            version = 1 if answered[0] >= 3 else 0
            answered[0] += "range" in request.headers
        serve_bytes(handler, request, shards[version], etag=f'"v{version}"')

    with ScriptedServer(answer) as server:
        ds = streamx.StreamingDataset(
            remote=server.url("/ds"), local=str(tmp_path / "cache"), shuffle=False
        )
        samples = [ds[i] for i in range(len(ds))]
    seen = set()
    for i, sample in enumerate(samples):
        version, at = divmod(int(sample["x"]), 1000)
        assert at == i
        want = _pad(version, i, pad + 4096 * version * (1 if i % 2 else -1))
        assert sample["pad"] == want, f"sample {i} is mixed"
        seen.add(version)
    if range_reads == "0":
        assert seen == {1}  # the download started over: all of the new version
    assert 1 in seen


def _pad(version: int, i: int, size: int) -> bytes:
    return bytes([128 * version + i]) * size

"""Range reads: samples of a remote shard served before the whole shard has arrived.

nginx (capped at 4 MB/s per connection, one connection for whole-shard downloads) makes
each 4.4 MB shard take about a second to download, while the ranged GETs that read a
sample take a few tens of milliseconds: a sample returned while its shard file is still
absent was read by range. Against moto's S3 server, a second process holds the shard's
download in the node's ledger, so every read of that shard goes by range.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from nginx_server import Nginx, find_nginx
from s3_bucket import S3

from streamx import MDSWriter, Stream, StreamingDataset
from streamx.cache.range_reads import MIN_SHARD_BYTES
from streamx.exceptions import ChecksumError, CorruptShardError, StaleIndexError
from streamx.format.index import FileInfo
from streamx.storage import filesystems

pytestmark = pytest.mark.remote

SAMPLES = 200
PAYLOAD = 44_000
SIZE_LIMIT = 4_500_000  # two shards of about 4.4 MB


def _payload(i: int) -> bytes:
    return random.Random(i).randbytes(PAYLOAD)


def _write(out: Path, **kwargs: Any) -> None:
    with MDSWriter(
        out=str(out), columns={"id": "int", "data": "bytes"}, size_limit=SIZE_LIMIT, **kwargs
    ) as writer:
        for i in range(SAMPLES):
            writer.write({"id": i, "data": _payload(i)})


def _check(sample: dict[str, Any], i: int) -> None:
    assert sample["id"] == i
    assert sample["data"] == _payload(i)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served directory, with ``bucket/ds`` (plain) and ``bucket/zstd`` (compressed)."""
    root = tmp_path_factory.mktemp("served")
    _write(root / "bucket" / "ds", hashes=["sha1"])
    _write(root / "bucket" / "zstd", compression="zstd")
    shards = sorted((root / "bucket" / "ds").glob("*.mds"))
    assert len(shards) == 2
    assert all(p.stat().st_size >= MIN_SHARD_BYTES for p in shards)
    return root


@pytest.fixture(scope="module")
def nginx(served: Path) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    with Nginx(served, limit_rate="4m") as server:
        yield server


@pytest.fixture
def env(nginx: Nginx, monkeypatch: pytest.MonkeyPatch) -> Nginx:
    monkeypatch.setenv("S3_ENDPOINT_URL", nginx.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    filesystems.clear_cache()
    return nginx


_COPIES = iter(range(1_000_000))


def _copy(served: Path, source: str = "ds") -> str:
    """A copy of ``bucket/<source>`` under a new name (each test sees only its own GETs)."""
    name = f"{source}-{next(_COPIES)}"
    shutil.copytree(served / "bucket" / source, served / "bucket" / name)
    return name


def _ranged_gets(server: Nginx, name: str) -> list[int]:
    """Bytes sent by each ranged GET of ``name`` that has ended."""
    return [e.sent for e in server.log() if e.uri.endswith(name) and e.range not in ("", "-")]


def _whole_gets(server: Nginx, name: str) -> int:
    return sum(1 for e in server.log() if e.uri.endswith(name) and e.range in ("", "-"))


@pytest.mark.parametrize("scheme", ["s3", "http"])
def test_first_sample_before_its_shard_arrives(
    env: Nginx, served: Path, tmp_path: Path, scheme: str
) -> None:
    name = _copy(served)
    remote = f"s3://bucket/{name}" if scheme == "s3" else f"{env.endpoint}/bucket/{name}"
    ds = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=1)
    shard = tmp_path / "cache" / "shard.00001.mds"
    _check(ds[150], 150)
    assert not shard.exists()  # served while the one-second download runs
    ranged = _ranged_gets(env, f"{name}/shard.00001.mds")
    assert ranged and max(ranged) < 1 << 20
    _check(ds[120], 120)
    ds.prepare_shard(1)  # waits for the whole-shard download, which went on meanwhile
    assert shard.read_bytes() == (served / "bucket" / name / "shard.00001.mds").read_bytes()
    assert (
        ds.cache_usage == shard.stat().st_size + (tmp_path / "cache" / "index.json").stat().st_size
    )
    _check(ds[151], 151)


def test_zero_copy_views_of_a_range(env: Nginx, served: Path, tmp_path: Path) -> None:
    name = _copy(served)
    ds = StreamingDataset(
        remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=1, zero_copy=True
    )
    first, second = ds[160], ds[161]
    assert not (tmp_path / "c" / "shard.00001.mds").exists()
    assert isinstance(first["data"], memoryview)
    assert bytes(first["data"]) == _payload(160)
    assert bytes(second["data"]) == _payload(161)
    ds.prepare_shard(1)  # the shard arrives; the views handed out stay valid
    _check(ds[162], 162)
    assert bytes(first["data"]) == _payload(160)


def test_iteration_reads_ranges_then_the_shard(env: Nginx, served: Path, tmp_path: Path) -> None:
    name = _copy(served)
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=4)
    seen = [s["id"] for s in ds]
    assert seen == list(range(SAMPLES))
    for i in (0, 99, 100, 199):
        _check(ds[i], i)
    assert _ranged_gets(env, f"{name}/shard.00000.mds")  # the first samples came by range
    assert _whole_gets(env, f"{name}/shard.00000.mds") == 1  # and the shard came once


def test_concurrent_threads_read_one_downloading_shard(
    env: Nginx, served: Path, tmp_path: Path
) -> None:
    name = _copy(served)
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=1)
    ids = list(range(100, 200, 7))
    with ThreadPoolExecutor(6) as pool:
        samples = list(pool.map(ds.__getitem__, ids))
    for i, sample in zip(ids, samples):
        _check(sample, i)
    ds.prepare_shard(1)
    assert _whole_gets(env, f"{name}/shard.00001.mds") == 1


def _read_in_child(remote: str, local: str, ids: list[int], queue: Any) -> None:
    os.environ["STREAMX_DOWNLOAD_CONNECTIONS"] = "1"
    ds = StreamingDataset(remote=remote, local=local, batch_size=1)
    shard = Path(local) / "shard.00000.mds"
    samples = [ds[i] for i in ids]
    queue.put(([(s["id"], s["data"] == _payload(s["id"])) for s in samples], shard.exists()))


def test_another_process_reads_by_range_while_one_downloads(
    env: Nginx, served: Path, tmp_path: Path
) -> None:
    name = _copy(served)
    local = str(tmp_path / "c")
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=local, batch_size=1)
    _check(ds[3], 3)  # starts the download of shard 0 here
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    args = (f"s3://bucket/{name}", local, [40, 41], queue)
    child = context.Process(target=_read_in_child, args=args)
    child.start()
    got, _ = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert got == [(40, True), (41, True)]
    ds.prepare_shard(0)
    assert _whole_gets(env, f"{name}/shard.00000.mds") == 1  # one download for both


def test_resume_mid_shard_is_served_by_range(env: Nginx, served: Path, tmp_path: Path) -> None:
    name = _copy(served)
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=1)
    ds.load_state_dict(
        {"epoch": 0, "sample_in_epoch": 130, "num_canonical_nodes": 1, "shuffle_seed": 9176}
    )
    samples = iter(ds)
    _check(next(samples), 130)
    assert not (tmp_path / "c" / "shard.00001.mds").exists()
    assert [s["id"] for s in samples] == list(range(131, SAMPLES))


def test_a_pass_read_by_range_ends_with_its_download_done(
    env: Nginx, served: Path, tmp_path: Path
) -> None:
    """The last ten samples come by range in tens of milliseconds while their shard's
    download takes a second: the loop ends only once that download is done, so nothing
    writes into ``local`` after it (a user may remove it then)."""
    name = _copy(served)
    local = tmp_path / "c"
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=str(local), batch_size=1)
    ds.load_state_dict(
        {"epoch": 0, "sample_in_epoch": 190, "num_canonical_nodes": 1, "shuffle_seed": 9176}
    )
    assert [s["id"] for s in ds] == list(range(190, SAMPLES))
    assert _ranged_gets(env, f"{name}/shard.00001.mds")  # the samples came by range
    shard = (served / "bucket" / name / "shard.00001.mds").read_bytes()
    assert (local / "shard.00001.mds").read_bytes() == shard
    assert not [
        p.name
        for p in local.iterdir()
        if p.name not in ("index.json", "shard.00001.mds", ".streamx")
    ]
    assert not any(ds._shard_cache.fetching_here(s) for s in range(2))  # type: ignore[union-attr]
    assert ds.cache_usage == len(shard) + (local / "index.json").stat().st_size
    shutil.rmtree(local)


@pytest.mark.parametrize("change", ["longer", "truncated", "other-count"])
def test_a_rewritten_shard_raises_stale_index(
    env: Nginx, served: Path, tmp_path: Path, change: str
) -> None:
    name = _copy(served)
    shard = served / "bucket" / name / "shard.00001.mds"
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=1)
    data = bytearray(shard.read_bytes())
    if change == "longer":
        data += b"x" * 10
    elif change == "truncated":
        del data[-1000:]
    else:  # same size, another sample count in the header
        data[0:4] = (int.from_bytes(data[0:4], "little") - 1).to_bytes(4, "little")
    shard.write_bytes(bytes(data))
    with pytest.raises(StaleIndexError, match="stale"):
        ds[150]


def test_validate_hash_waits_for_the_checked_shard(
    env: Nginx, served: Path, tmp_path: Path
) -> None:
    name = _copy(served)
    ds = StreamingDataset(
        remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=1, validate_hash="sha1"
    )
    _check(ds[150], 150)
    assert (tmp_path / "c" / "shard.00001.mds").exists()  # not by range: after the hash check
    assert not _ranged_gets(env, f"{name}/shard.00001.mds")
    name = _copy(served)
    corrupt = served / "bucket" / name / "shard.00001.mds"
    data = bytearray(corrupt.read_bytes())
    data[-5] ^= 0xFF  # inside the last sample: same size, another digest
    corrupt.write_bytes(bytes(data))
    bad = StreamingDataset(
        remote=f"s3://bucket/{name}", local=str(tmp_path / "d"), batch_size=1, validate_hash="sha1"
    )
    with pytest.raises(ChecksumError):
        bad[199]


def test_compressed_shards_keep_the_whole_file_path(
    env: Nginx, served: Path, tmp_path: Path
) -> None:
    name = _copy(served, "zstd")
    ds = StreamingDataset(remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=1)
    _check(ds[150], 150)
    names = [e.uri for e in env.log() if f"/{name}/" in e.uri and e.range not in ("", "-")]
    assert names == []  # one plain GET per compressed file, no ranges
    assert [s["id"] for s in ds] == list(range(SAMPLES))


def test_cache_limit_with_range_reads(env: Nginx, served: Path, tmp_path: Path) -> None:
    largest = max(p.stat().st_size for p in (served / "bucket" / "ds").glob("*.mds"))
    limit = 4 * largest + 10_000
    name = _copy(served)
    ds = StreamingDataset(
        remote=f"s3://bucket/{name}", local=str(tmp_path / "c"), batch_size=4, cache_limit=limit
    )
    assert [s["id"] for s in ds] == list(range(SAMPLES))
    assert ds.cache_usage <= limit


class _MosaicSignatures(Stream):
    """Overrides the hooks with mosaicml-streaming's signatures, delegating to streamx's."""

    calls: list[str] = []

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        self.calls.append(from_basename)
        return super()._download_file(from_basename, to_basename)

    def _decompress_shard_part(
        self, zip_info: FileInfo, zip_filename: str, raw_filename: str, compression: str | None
    ) -> None:
        self.calls.append(os.path.basename(zip_filename))
        super()._decompress_shard_part(zip_info, zip_filename, raw_filename, compression)


def test_overridden_hooks_still_get_the_index_sizes(
    env: Nginx, served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "4")
    name = _copy(served)
    stream = _MosaicSignatures(remote=f"s3://bucket/{name}", local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream], batch_size=1)
    _check(ds[150], 150)  # not by range (the download hook is the subclass's) ...
    assert "shard.00001.mds" in stream.calls
    # ... yet in parallel parts, which only a download told the index's size makes.
    assert len(_ranged_gets(env, f"{name}/shard.00001.mds")) >= 4
    # A compressed file larger, once decompressed, than its index entry says is stopped at
    # that size by the base hook, called through the override.
    name = _copy(served, "zstd")
    index_path = served / "bucket" / name / "index.json"
    index = json.loads(index_path.read_text())
    index["shards"][0]["raw_data"]["bytes"] -= 1000
    index_path.write_text(json.dumps(index))
    zipped = _MosaicSignatures(remote=f"s3://bucket/{name}", local=str(tmp_path / "z"))
    bound = StreamingDataset(streams=[zipped], batch_size=1)
    with pytest.raises(CorruptShardError):
        bound[0]


def _hold_download(local: str, shard: int, held: Any, release: Any) -> None:
    """Claims ``shard``'s download in the node's ledger and fetches nothing until told."""
    ds = StreamingDataset(remote=os.environ["RANGE_TEST_REMOTE"], local=local, batch_size=1)
    cache = ds._shard_cache
    assert cache is not None
    decision, _ = cache.ledger.begin_download(shard, ds.shards[shard].get_max_size(), False)
    held.set()
    release.wait(60)
    if decision == "download":
        cache.ledger.abort_download(shard)


def test_moto_serves_every_sample_of_a_shard_by_range(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "src")
    for path in (tmp_path / "src").iterdir():
        s3.put(f"ds/{path.name}", path.read_bytes())
    monkeypatch.setenv("RANGE_TEST_REMOTE", s3.url("ds"))
    local = str(tmp_path / "c")
    ds = StreamingDataset(remote=s3.url("ds"), local=local, batch_size=1)
    context = multiprocessing.get_context("spawn")
    held, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_download, args=(local, 0, held, release))
    holder.start()
    try:
        assert held.wait(60)
        read = random.Random(0).sample(range(ds.samples_per_shard[0]), 15)
        for i in read:
            _check(ds[i], i)
        assert not (tmp_path / "c" / "shard.00000.mds").exists()  # never downloaded here
        # Truncated on the remote: the next range GET, pinned to the shard's first ETag, gets
        # a 412; the reader then waits for the whole shard, whose size the remote's own
        # index contradicts.
        s3.put("ds/shard.00000.mds", (tmp_path / "src" / "shard.00000.mds").read_bytes()[:-7])
        unread = next(i for i in range(ds.samples_per_shard[0]) if i not in read)
        # The holder lets go 3 s into the read (rather than at its own 60 s timeout): by then
        # the read's range GET has met its 412 and the reader waits for the whole shard, which
        # it then fetches itself.
        letting_go = threading.Timer(3.0, release.set)
        letting_go.start()
        try:
            with pytest.raises(CorruptShardError, match="remote copy of .*shard.00000.mds is bad"):
                ds[unread]
        finally:
            letting_go.cancel()
    finally:
        release.set()
        holder.join(60)
    assert holder.exitcode == 0


def test_a_throttling_host_gets_no_range_reads(env: Nginx, served: Path, tmp_path: Path) -> None:
    """Range reads only save time, and each is a request: while the host throttles (its
    request pace set, as a 503 sets it), a sample waits for its shard's download, which
    brings every sample in one request."""
    from urllib.parse import urlparse

    from streamx.storage import throttle
    from streamx.storage.request_pace import pace_for

    throttle.forget_hosts()
    name = _copy(served)
    remote = f"{env.endpoint}/bucket/{name}"
    pace_for(urlparse(env.endpoint).netloc).throttled(0.0)
    try:
        assert not throttle.host_calm(remote)
        ds = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=1)
        _check(ds[150], 150)
        assert (tmp_path / "cache" / "shard.00001.mds").exists()  # it waited for the shard
        assert _ranged_gets(env, f"{name}/shard.00001.mds") == []
        assert _whole_gets(env, f"{name}/shard.00001.mds") == 1
    finally:
        throttle.forget_hosts()

"""Samples of a remote LitData chunk read by byte range before the whole chunk has arrived.

nginx (capped at 4 MB/s per connection, one connection for whole-chunk downloads) makes
each 5.3 MB chunk take more than a second to download, while the ranged GETs that read a
sample (its offset table, then its 44 KB) take a few tens of milliseconds: a sample
returned while its chunk file is still absent was read by range. Chunks whose rows live in
their Arrow footer (no leaves, or ``json`` leaves) keep the whole-chunk path.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from nginx_server import LogEntry, Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import LitDataStream, StreamingDataLoader, StreamingDataset
from streamx.cache.range_reads import MIN_SHARD_BYTES
from streamx.exceptions import StaleIndexError
from streamx.storage import filesystems

pytest.importorskip("litdata")
pytestmark = pytest.mark.remote

PER_CHUNK = 120
SAMPLES = 2 * PER_CHUNK
PAYLOAD = 44_000  # chunks of about 5.3 MB


def _payload(i: int) -> bytes:
    return random.Random(i).randbytes(PAYLOAD)


def leafy(i: int) -> dict[str, Any]:
    """A sample whose leaves lie in the chunk's body (a numpy leaf among them)."""
    return {"id": i, "data": np.frombuffer(_payload(i), np.uint8), "name": f"s{i}"}


def tabular(i: int) -> dict[str, Any]:
    """A sample LitData keeps as an Arrow row in the chunk's footer (no leaves)."""
    return {"id": i, "name": f"{i}-{_payload(i)[:20_000].hex()}"}


def listed(i: int) -> dict[str, Any]:
    """An Arrow row with a list: its ``json`` leaf is read from the footer."""
    return {**tabular(i), "tags": [i, i + 1]}


def _check(sample: dict[str, Any], i: int) -> None:
    assert sample["id"] == i and sample["name"] == f"s{i}"
    assert sample["data"].dtype == np.uint8 and sample["data"].tobytes() == _payload(i)


def _write(fn: Any, out: Path) -> None:
    """``fn(i)`` for every sample, in chunks of ``PER_CHUNK``, by LitData's own writer (the
    one ``litdata.optimize`` runs in its workers; here in this process)."""
    from litdata.streaming.writer import BinaryWriter

    out.mkdir(parents=True)
    writer = BinaryWriter(str(out), chunk_size=PER_CHUNK)
    for i in range(SAMPLES):
        writer[i] = fn(i)
    writer.done()
    writer.merge(1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served directory: ``bucket/ds`` (leaves), ``bucket/rows`` and ``bucket/json``."""
    root = tmp_path_factory.mktemp("served")
    for fn, name in ((leafy, "ds"), (tabular, "rows"), (listed, "json")):
        _write(fn, root / "bucket" / name)
        chunks = sorted((root / "bucket" / name).glob("chunk-*.bin"))
        assert len(chunks) == 2
        assert all(p.stat().st_size >= MIN_SHARD_BYTES for p in chunks)
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
    # A whole chunk is one GET on one connection; a range GET holds no connection slot.
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(64 << 20))
    filesystems.clear_cache()
    return nginx


_COPIES = iter(range(1_000_000))


def _copy(served: Path, source: str = "ds") -> str:
    """A copy of ``bucket/<source>`` under a new name (each test sees only its own GETs)."""
    name = f"{source}-{next(_COPIES)}"
    shutil.copytree(served / "bucket" / source, served / "bucket" / name)
    return name


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    kwargs.setdefault("batch_size", 1)
    return StreamingDataset(streams=[LitDataStream(remote=remote, local=str(local))], **kwargs)


def _cached(ds: StreamingDataset, shard: int) -> str:
    info = ds.shards[shard]
    return info.local_path(info.raw_data)


def _gets(log: list[LogEntry], path: str) -> tuple[list[int], list[int]]:
    """Bytes sent by each ranged, then by each whole GET under ``path`` that has ended."""
    mine = [e for e in log if e.method == "GET" and f"/{path}" in e.uri]
    return [e.sent for e in mine if e.range not in ("", "-")], [
        e.sent for e in mine if e.range in ("", "-")
    ]


@pytest.mark.parametrize("scheme", ["http", "s3"])
def test_first_sample_before_its_chunk_arrives(
    env: Nginx, served: Path, tmp_path: Path, scheme: str
) -> None:
    name = _copy(served)
    remote = f"s3://bucket/{name}" if scheme == "s3" else f"{env.endpoint}/bucket/{name}"
    ds = _dataset(remote, tmp_path / "c")
    size = (served / "bucket" / name / "chunk-0-1.bin").stat().st_size
    before = len(env.log())
    _check(ds[150], 150)  # a random access on a cold cache
    assert not os.path.exists(_cached(ds, 1))  # served while the chunk's download runs
    log = env.log_when(lambda e: len(_gets(e[before:], f"{name}/chunk-0-1.bin")[0]) >= 2)
    ranged, _ = _gets(log[before:], f"{name}/chunk-0-1.bin")
    # The offset table (with 16 KiB after it), then the sample: two short GETs.
    assert len(ranged) == 2 and sum(ranged) < size // 50
    _check(ds[131], 131)
    ds.prepare_shard(1)  # waits for the whole-chunk download, which went on meanwhile
    with open(_cached(ds, 1), "rb") as cached:
        assert cached.read() == (served / "bucket" / name / "chunk-0-1.bin").read_bytes()
    _check(ds[200], 200)
    path = f"{name}/chunk-0-1.bin"
    assert _gets(env.log_when(lambda e: bool(_gets(e, path)[1])), path)[1] == [size]  # once


def test_an_epoch_is_the_whole_chunk_epoch(
    env: Nginx, served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _copy(served)
    epochs, ranged = [], []
    for setting in ("1", "0"):
        monkeypatch.setenv("STREAMX_RANGE_READS", setting)
        before = len(env.log())
        ds = _dataset(
            f"{env.endpoint}/bucket/{name}", tmp_path / f"c{setting}", shuffle=True, batch_size=4
        )
        samples = list(ds)
        for sample in samples:
            _check(sample, sample["id"])
        epochs.append([s["id"] for s in samples])
        ranged.append(_gets(env.log()[before:], f"{name}/chunk-")[0])
    assert epochs[0] == epochs[1]
    assert sorted(epochs[0]) == list(range(SAMPLES))
    assert ranged[0] and not ranged[1]  # samples were read by range only where allowed


def test_resume_mid_chunk_is_served_by_range(env: Nginx, served: Path, tmp_path: Path) -> None:
    name = _copy(served)
    ds = _dataset(f"{env.endpoint}/bucket/{name}", tmp_path / "c")
    ds.load_state_dict(
        {"epoch": 0, "sample_in_epoch": 130, "num_canonical_nodes": 1, "shuffle_seed": 9176}
    )
    samples = iter(ds)
    _check(next(samples), 130)
    assert not os.path.exists(_cached(ds, 1))
    assert [s["id"] for s in samples] == list(range(131, SAMPLES))


def test_concurrent_threads_read_one_downloading_chunk(
    env: Nginx, served: Path, tmp_path: Path
) -> None:
    name = _copy(served)
    ds = _dataset(f"{env.endpoint}/bucket/{name}", tmp_path / "c")
    ids = list(range(PER_CHUNK, SAMPLES, 7))
    with ThreadPoolExecutor(6) as pool:
        samples = list(pool.map(ds.__getitem__, ids))
    for i, sample in zip(ids, samples):
        _check(sample, i)
    ds.prepare_shard(1)
    log = env.log_when(lambda e: bool(_gets(e, f"{name}/chunk-0-1.bin")[1]))
    assert len(_gets(log, f"{name}/chunk-0-1.bin")[1]) == 1


@pytest.mark.parametrize("change", ["longer", "truncated", "other-count"])
def test_a_rewritten_chunk_raises_stale_index(
    env: Nginx, served: Path, tmp_path: Path, change: str
) -> None:
    name = _copy(served)
    chunk = served / "bucket" / name / "chunk-0-1.bin"
    ds = _dataset(f"{env.endpoint}/bucket/{name}", tmp_path / "c")
    data = bytearray(chunk.read_bytes())
    if change == "longer":
        data += b"x" * 10
    elif change == "truncated":
        del data[-1000:]
    else:  # same size, another sample count in the header
        data[0:4] = (int.from_bytes(data[0:4], "little") - 1).to_bytes(4, "little")
    chunk.write_bytes(bytes(data))
    with pytest.raises(StaleIndexError, match=r"chunk-0-1\.bin.*stale"):
        ds[150]
    if change != "other-count":  # the whole chunk's download says so too
        with pytest.raises(StaleIndexError, match=r"chunk-0-1\.bin.*stale"):
            ds.prepare_shard(1)


@pytest.mark.parametrize("read", ["sample", "whole"])
def test_a_same_size_rewrite_is_refused_by_name_before_any_read(
    env: Nginx, served: Path, tmp_path: Path, read: str
) -> None:
    """A chunk rewritten to the same size (same header, other sample bytes) after the index
    was read: refused by name before any GET of its bytes, by range or whole."""
    name = _copy(served)
    chunk = served / "bucket" / name / "chunk-0-1.bin"
    ds = _dataset(f"{env.endpoint}/bucket/{name}", tmp_path / "c")
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a sample's payload
    chunk.write_bytes(bytes(data))
    stat = chunk.stat()
    os.utime(chunk, (stat.st_atime, stat.st_mtime + 10))  # a later version, whatever the clock
    before = len(env.log())
    with pytest.raises(StaleIndexError, match=r"chunk-0-1\.bin.*changed.*rewritten"):
        if read == "sample":
            ds[150]
        else:
            ds.prepare_shard(1)
    assert _gets(env.log()[before:], f"{name}/chunk-0-1.bin") == ([], [])  # none of it read


@pytest.mark.parametrize(("source", "make"), [("rows", tabular), ("json", listed)])
def test_rows_in_the_arrow_footer_keep_the_whole_chunk_path(
    env: Nginx, served: Path, tmp_path: Path, source: str, make: Any
) -> None:
    name = _copy(served, source)
    ds = _dataset(f"{env.endpoint}/bucket/{name}", tmp_path / "c")
    before = len(env.log())
    assert ds[5] == make(5)
    assert os.path.exists(_cached(ds, 0))  # not by range: the chunk came first
    assert [ds[i] for i in range(SAMPLES)] == [make(i) for i in range(SAMPLES)]
    log = env.log_when(lambda e: len(_gets(e[before:], f"{name}/chunk-")[1]) >= 2)
    sizes = [(served / "bucket" / name / f"chunk-0-{n}.bin").stat().st_size for n in range(2)]
    ranged, whole = _gets(log[before:], f"{name}/chunk-")
    assert sorted(whole) == sorted(sizes)  # each chunk came whole, once
    if source == "json":  # known from the index: no GET by range at all
        assert not ranged
    else:  # the first chunk's offset table says so, for its siblings too: one GET in all
        assert len(ranged) == 1 and ranged[0] < 64 << 10


def test_the_batched_loader_reads_by_range_as_the_whole_chunk(
    env: Nginx, served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batched path reads a chunk not yet here through the ranges (the samples' values,
    packed as the per-sample path packs them): its batches are the whole-chunk path's."""
    name = _copy(served)
    epochs, ranged = [], []
    for setting in ("1", "0"):
        monkeypatch.setenv("STREAMX_RANGE_READS", setting)
        before = len(env.log())
        ds = _dataset(f"{env.endpoint}/bucket/{name}", tmp_path / f"c{setting}", batch_size=8)
        loader = StreamingDataLoader(ds, batch_size=8, num_workers=0, batched=True)
        epochs.append(list(loader))
        ranged.append(_gets(env.log()[before:], f"{name}/chunk-")[0])
    assert ranged[0] and not ranged[1]
    assert len(epochs[0]) == len(epochs[1]) == SAMPLES // 8
    for ours, whole in zip(*epochs, strict=True):
        assert ours["name"] == whole["name"]
        for key in ("id", "data"):
            assert ours[key].dtype == whole[key].dtype and torch.equal(ours[key], whole[key])
    ids = [i for batch in epochs[0] for i in batch["id"].tolist()]
    assert ids == list(range(SAMPLES))
    assert bytes(epochs[0][0]["data"][3].numpy()) == _payload(3)

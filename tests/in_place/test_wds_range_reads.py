"""Samples of a remote tar read by range before the whole tar has arrived, against nginx
(and moto S3): one ranged GET of a sample's span while the tar downloads, the same epoch as
with range reads off, a rewritten tar refused, random access on a cold cache, the budget."""

from __future__ import annotations

import io
import os
import pickle
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nginx_server import LogEntry, Nginx, find_nginx  # tests/storage, on the path by conftest
from wds_data import add

from streamx import StreamingDataset, WebDatasetStream
from streamx.exceptions import StaleIndexError
from streamx.format.webdataset.tar_ranges import MIN_TAR_BYTES
from streamx.format.webdataset.tar_shard import TarShardReader
from streamx.format.webdataset.write_index import write_shard_index
from streamx.storage import accounting

pytestmark = pytest.mark.remote

BODY = 512 << 10  # each sample's payload: a chunk of the epoch is one sample
SAMPLES = 32  # 16 MiB: read by range (at least MIN_TAR_BYTES)


def _payload(tar: int, i: int) -> bytes:
    return bytes([(7 * tar + i) % 251]) * (BODY - i)


def _tar(number: int, count: int = SAMPLES) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(count):
            add(tar, f"t{number}-{i:04d}.cls", str(i).encode())
            add(tar, f"t{number}-{i:04d}.bin", _payload(number, i))
    return buf.getvalue()


def _spans(data: bytes) -> list[str]:
    """Each sample's members' span, as the Range header that asks for it."""
    found: dict[str, tuple[int, int]] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            key = member.name.split(".", 1)[0]
            start, end = found.get(key, (member.offset_data, 0))
            found[key] = (start, max(end, member.offset_data + member.size))
    return [f"bytes={start}-{end - 1}" for start, end in found.values()]


@pytest.fixture
def served(tmp_path: Path) -> Path:
    folder = tmp_path / "served"
    folder.mkdir()
    for number in range(2):
        (folder / f"shard-{number}.tar").write_bytes(_tar(number))
    assert (folder / "shard-0.tar").stat().st_size >= MIN_TAR_BYTES
    return folder


@pytest.fixture
def nginx(served: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    # A whole tar is one GET at 16 MB/s: it is not here before it has streamed for a
    # second, while a range GET (which holds no connection slot) asks for one sample.
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(64 << 20))
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "0")
    with Nginx(served, limit_rate="16m") as server:
        yield server


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    return StreamingDataset(
        streams=[WebDatasetStream(remote=remote, local=str(local))], batch_size=1, **kwargs
    )


def _tar_gets(log: list[LogEntry], name: str) -> list[LogEntry]:
    return [e for e in log if e.method == "GET" and e.uri == f"/{name}"]


def _cached(ds: StreamingDataset, shard: int) -> str:
    info = ds.shards[shard]
    return info.local_path(info.raw_data)


def _sample_of(number: int, i: int) -> tuple[str, int, bytes]:
    return f"t{number}-{i:04d}", i, _payload(number, i)


def _plain(sample: dict[str, Any]) -> tuple[str, int, bytes]:
    return sample["__key__"], sample["cls"], sample["bin"]


def test_the_first_sample_arrives_by_range_before_the_tar(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    ds = _dataset(f"{nginx.endpoint}/shard-0.tar", tmp_path / "c")
    before = len(nginx.log())
    samples = iter(ds)
    first = next(samples)
    tar_here = os.path.exists(_cached(ds, 0))
    assert _plain(first) == _sample_of(0, 0)  # the source's bytes, decoded as from the tar
    assert first["__url__"] == f"{nginx.endpoint}/shard-0.tar"
    assert not tar_here  # delivered while the tar was still on its way
    rest = [_plain(s) for s in samples]
    assert rest == [_sample_of(0, i) for i in range(1, SAMPLES)]
    spans = _spans((served / "shard-0.tar").read_bytes())
    span = spans[0]
    size = (served / "shard-0.tar").stat().st_size
    log = nginx.log_when(lambda e: sum(x.sent for x in _tar_gets(e[before:], "shard-0.tar")) > size)
    gets = _tar_gets(log[before:], "shard-0.tar")
    by_range = [e for e in gets if e.range == span]
    start, end = map(int, span.removeprefix("bytes=").split("-"))
    assert [(e.status, e.sent) for e in by_range] == [(206, end + 1 - start)]
    # ...alongside the whole tar's download, which served the rest of the epoch (a few
    # more samples came by range while it was under way).
    whole = [e for e in gets if e.range not in spans]
    assert sum(e.sent for e in whole) == size
    assert by_range[0].end <= max(e.end for e in whole)
    assert os.path.getsize(_cached(ds, 0)) == size


def test_an_epoch_is_the_range_reads_off_epoch(
    nginx: Nginx, served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{nginx.endpoint}/shard-{{0..1}}.tar"
    spans = {s for n in range(2) for s in _spans((served / f"shard-{n}.tar").read_bytes())}
    epochs, ranged = [], []
    for setting in ("1", "0"):
        monkeypatch.setenv("STREAMX_RANGE_READS", setting)
        before = len(nginx.log())
        ds = _dataset(url, tmp_path / f"c{setting}", shuffle=True, shuffle_seed=5)
        epochs.append([_plain(s) for s in ds])
        ranged.append([e for e in nginx.log()[before:] if e.range in spans])
    assert epochs[0] == epochs[1]
    assert sorted(epochs[0]) == sorted(_sample_of(n, i) for n in range(2) for i in range(SAMPLES))
    assert ranged[0] and not ranged[1]  # samples were read by range only where allowed


def test_a_tar_listed_by_a_shard_index_is_scanned_by_range_as_far_as_needed(
    nginx: Nginx, served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_shard_index(str(served / "shard-*.tar"), str(served / "index.json"))
    epochs = []
    for setting in ("1", "0"):
        monkeypatch.setenv("STREAMX_RANGE_READS", setting)
        before = len(nginx.log())
        ds = _dataset(f"{nginx.endpoint}/index.json", tmp_path / f"c{setting}", shuffle=False)
        samples = iter(ds)
        first = next(samples)
        tar_here = os.path.exists(_cached(ds, 0))
        epochs.append([_plain(first)] + [_plain(s) for s in samples])
        if setting == "1":
            assert not tar_here and _plain(first) == _sample_of(0, 0)
            gets = _tar_gets(nginx.log()[before:], "shard-0.tar")
            # The first header window, which holds the first sample's bytes too.
            assert any(e.range.startswith("bytes=0-") and e.sent < 4 << 20 for e in gets)
    assert epochs[0] == epochs[1] == [_sample_of(n, i) for n in range(2) for i in range(SAMPLES)]


def test_random_access_on_a_cold_cache_reads_one_span(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    ds = _dataset(f"{nginx.endpoint}/shard-{{0..1}}.tar", tmp_path / "c")
    before = len(nginx.log())
    assert _plain(ds[SAMPLES + 9]) == _sample_of(1, 9)
    span = _spans((served / "shard-1.tar").read_bytes())[9]
    gets = [e for e in nginx.log_when(lambda e: len(e) > before)[before:] if e.method == "GET"]
    assert [(e.uri, e.range) for e in gets] == [("/shard-1.tar", span)]
    assert not os.path.exists(_cached(ds, 1))  # read from the remote, not from a copy


def test_past_its_budget_a_tar_is_downloaded_whole(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    ds = _dataset(f"{nginx.endpoint}/shard-0.tar", tmp_path / "c", cache_limit="80mb")
    before = len(nginx.log())
    assert [_plain(ds[i]) for i in range(SAMPLES)] == [_sample_of(0, i) for i in range(SAMPLES)]
    spans = set(_spans((served / "shard-0.tar").read_bytes()))
    size = (served / "shard-0.tar").stat().st_size
    by_range = [e for e in nginx.log()[before:] if e.range in spans]
    assert 0 < sum(e.sent for e in by_range) <= size // 4  # a quarter of the tar at most
    assert os.path.getsize(_cached(ds, 0)) == size  # then the tar itself, counted
    assert ds.cache_usage <= 80 << 20
    # Evicted, the tar's next download is bridged by range again.
    ds.evict_shard(0)
    before = len(nginx.log())
    assert _plain(ds[7]) == _sample_of(0, 7)
    gets = [e for e in nginx.log_when(lambda e: len(e) > before)[before:] if e.method == "GET"]
    assert [e.range for e in gets] == [_spans((served / "shard-0.tar").read_bytes())[7]]


def _rewrite(path: Path, data: bytes) -> None:
    """Replaces the served tar (nginx's ETag is its mtime and size: the mtime moves on)."""
    stamp = path.stat().st_mtime + 10
    path.write_bytes(data)
    os.utime(path, (stamp, stamp))


@pytest.mark.parametrize("same_size", [True, False])
def test_a_tar_rewritten_after_its_table_was_read_is_refused(
    nginx: Nginx, served: Path, tmp_path: Path, same_size: bool
) -> None:
    ds = _dataset(f"{nginx.endpoint}/shard-0.tar", tmp_path / "c")
    new = _tar(5) if same_size else _tar(5, SAMPLES + 1)
    _rewrite(served / "shard-0.tar", new)
    with pytest.raises(StaleIndexError, match=r"shard-0\.tar: the tar (changed since|is now)"):
        ds[3]
    with pytest.raises(StaleIndexError):  # not later either, by range or whole
        ds[4]


def test_a_tar_rewritten_between_two_range_reads_is_refused(
    nginx: Nginx, served: Path, tmp_path: Path
) -> None:
    ds = _dataset(f"{nginx.endpoint}/shard-0.tar", tmp_path / "c")
    assert _plain(ds[1]) == _sample_of(0, 1)
    _rewrite(served / "shard-0.tar", _tar(5))
    with pytest.raises(StaleIndexError, match=r"shard-0\.tar: the tar changed on the server"):
        ds[2]
    assert nginx.log_when(lambda e: any(x.status == 412 for x in e))[-1].status == 412


def test_over_s3_random_access_reads_a_span(s3: Any, tmp_path: Path) -> None:
    data = _tar(0)
    s3.put("rr/t.tar", data)
    ds = _dataset(s3.url("rr/t.tar"), tmp_path / "c")
    accounting.reset()
    assert _plain(ds[20]) == _sample_of(0, 20)
    assert accounting.totals()["bytes_received"] < 2 * BODY
    assert not os.path.exists(_cached(ds, 0))


def test_a_reader_pickled_while_reading_by_range_reads_on_elsewhere(
    nginx: Nginx, tmp_path: Path
) -> None:
    ds = _dataset(f"{nginx.endpoint}/shard-0.tar", tmp_path / "c")
    reader = TarShardReader(ds.shards[0])
    assert _plain(reader.get(0)) == _sample_of(0, 0)
    copy = pickle.loads(pickle.dumps(reader))
    assert _plain(copy.get(1)) == _sample_of(0, 1)
    ds.prepare_shard(0)  # the whole tar
    local = TarShardReader(ds.shards[0])  # its cached copy, held open
    assert _plain(local.get(2)) == _sample_of(0, 2)
    moved = pickle.loads(pickle.dumps(local))
    del local  # closes the original's descriptor: the copy opens the file itself
    assert _plain(moved.get(3)) == _sample_of(0, 3)

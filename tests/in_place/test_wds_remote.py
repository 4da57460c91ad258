"""WebDataset tars read in place from a moto S3 server and from nginx: member tables from
ranged windows of the headers, whole tars fetched on use, a changed tar refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from wds_data import tar_bytes, write_tars

from streamx import StreamingDataset, WebDatasetStream
from streamx.exceptions import CorruptShardError
from streamx.storage import accounting

pytestmark = pytest.mark.remote


def _big_tar(ids: range) -> bytes:
    """Samples of 6 MiB each, past the scan's jump threshold: their bodies are skipped."""
    import io
    import tarfile

    from wds_data import add

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in ids:
            add(tar, f"big-{i:03d}.cls", str(i).encode())
            add(tar, f"big-{i:03d}.bin", bytes([i % 256]) * (6 << 20))
    return buf.getvalue()


def test_s3_glob_streams(s3: Any, tmp_path: Path) -> None:
    s3.put("wds/train-0.tar", tar_bytes(range(0, 30)))
    s3.put("wds/train-1.tar", tar_bytes(range(30, 42)))
    s3.put("wds/notes.txt", b"not a shard")
    stream = WebDatasetStream(remote=s3.url("wds/train-*.tar"), local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream], shuffle=True, batch_size=4)
    assert ds.samples_per_shard.tolist() == [30, 12]
    samples = list(ds)
    assert sorted(int(s["cls"]) for s in samples) == list(range(42))
    assert all(s["txt"] == f"row {s['cls']}" for s in samples)
    assert samples[0]["__url__"].startswith("s3://")


def test_member_tables_read_by_ranges_not_whole_tars(s3: Any, tmp_path: Path) -> None:
    data = _big_tar(range(5))
    s3.put("big/b.tar", data)
    accounting.reset()
    ds = StreamingDataset(
        streams=[WebDatasetStream(remote=s3.url("big/b.tar"), local=str(tmp_path / "c"))]
    )
    scanned = accounting.totals()["bytes_received"]
    assert ds.num_samples == 5
    assert 0 < scanned < len(data) / 4  # windows of headers, not the 30 MiB of bodies
    assert ds[3]["bin"] == bytes([3]) * (6 << 20) and ds[3]["cls"] == 3


def test_changed_tar_refused_not_mixed(s3: Any, tmp_path: Path) -> None:
    s3.put("chg/t.tar", tar_bytes(range(10)))
    ds = StreamingDataset(
        streams=[WebDatasetStream(remote=s3.url("chg/t.tar"), local=str(tmp_path / "c"))]
    )
    s3.put("chg/t.tar", tar_bytes(range(100, 120)))
    with pytest.raises(Exception, match=r"chg/t\.tar: the file changed since"):
        ds[0]
    again = StreamingDataset(
        streams=[WebDatasetStream(remote=s3.url("chg/t.tar"), local=str(tmp_path / "c"))]
    )
    assert again.num_samples == 20 and again[0]["cls"] == 100


def test_a_remote_file_that_is_not_a_tar_is_named(s3: Any, tmp_path: Path) -> None:
    s3.put("junk/a.tar", b"<html>not found</html>" * 40)
    stream = WebDatasetStream(remote=s3.url("junk/a.tar"), local=str(tmp_path / "c"))
    with pytest.raises(CorruptShardError, match=r"junk/a\.tar is not a tar file"):
        StreamingDataset(streams=[stream])


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    write_tars(str(tmp_path / "served"), [20, 20])
    with Nginx(tmp_path / "served") as server:
        yield server


def test_http_tar_over_nginx(nginx: Nginx, tmp_path: Path) -> None:
    stream = WebDatasetStream(remote=f"{nginx.endpoint}/shard-0001.tar", local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream], shuffle=True, batch_size=5)
    assert sorted(int(s["cls"]) for s in ds) == list(range(20, 40))


def test_braces_name_the_shards_of_a_server_that_cannot_list(nginx: Nginx, tmp_path: Path) -> None:
    """A plain HTTP server lists nothing: WebDataset's brace notation names the shards."""
    url = f"{nginx.endpoint}/shard-{{0000..0001}}.tar"
    ds = StreamingDataset(
        streams=[WebDatasetStream(remote=url, local=str(tmp_path / "c"))], batch_size=5
    )
    assert ds.samples_per_shard.tolist() == [20, 20]
    assert sorted(int(s["cls"]) for s in ds) == list(range(40))
    missing = f"{nginx.endpoint}/shard-{{0000..0002}}.tar"
    with pytest.raises(FileNotFoundError, match=r"shard-0002\.tar \(named by .*\) does not exist"):
        StreamingDataset(streams=[WebDatasetStream(remote=missing, local=str(tmp_path / "d"))])

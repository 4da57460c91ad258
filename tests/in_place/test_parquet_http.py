"""Parquet read in place over plain HTTP from nginx: footer and column chunks by range."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import make_certs  # tests/storage, on the path by conftest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import write_parquet

from streamx import ParquetStream, StreamingDataset
from streamx.exceptions import TlsCertificateError
from streamx.storage import accounting


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    write_parquet(str(tmp_path / "served" / "t.parquet"), 1000, 250)
    with Nginx(tmp_path / "served") as server:
        yield server


def test_http_file_by_ranges(nginx: Nginx, tmp_path: Path) -> None:
    size = (tmp_path / "served" / "t.parquet").stat().st_size
    stream = ParquetStream(
        remote=f"{nginx.endpoint}/t.parquet", local=str(tmp_path / "c"), columns=["id", "w1"]
    )
    accounting.reset()
    ds = StreamingDataset(streams=[stream], shuffle=True, batch_size=10)
    samples = list(ds)
    assert sorted(s["id"] for s in samples) == list(range(1000))
    assert all(s["w1"] == 3 * s["id"] for s in samples)
    assert 0 < accounting.totals()["bytes_received"] < 0.25 * size


def test_an_untrusted_certificate_is_named_not_a_missing_file(tmp_path: Path) -> None:
    """fsspec reports a failed HEAD as a missing file; a certificate that fails verification
    is a TLS error naming the host, as on the fast path."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    write_parquet(str(tmp_path / "served" / "t.parquet"), 100, 50)
    (tmp_path / "certs").mkdir()
    certs = make_certs(tmp_path / "certs")  # a CA this process does not trust
    with Nginx(tmp_path / "served", tls=(certs.chain, certs.key)) as server:
        assert server.endpoint.startswith("https://")
        stream = ParquetStream(remote=f"{server.endpoint}/t.parquet", local=str(tmp_path / "c"))
        with pytest.raises(TlsCertificateError, match=r"127\.0\.0\.1.*certificate") as err:
            StreamingDataset(streams=[stream], batch_size=10)
    assert not isinstance(err.value, FileNotFoundError)

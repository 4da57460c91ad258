"""Over HTTPS a file's ``HEAD`` goes on the Rust TLS sessions its GETs then take, so that
stating a source and reading its footers costs one TLS handshake per session, not one per
kind of request: nginx's access log numbers each request's connection. A throttled
``HEAD`` is waited out (nginx's ``Retry-After: 1``), on either TLS stack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import Certs, trust_test_ca  # tests/storage, on the path by conftest
from nginx_server import Nginx, find_nginx

from streamx import _core
from streamx.format.remote_files import read_range, stat_file
from streamx.storage import http_pool

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

FILES = 40


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Certs:
    found = trust_test_ca(tmp_path, monkeypatch)
    http_pool._close_all()  # no connection kept from another test's server
    return found


@pytest.fixture
def parquet_root(tmp_path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "root"
    root.mkdir()
    for number in range(FILES):
        table = pa.table({"id": list(range(number * 5, number * 5 + 5))})
        pq.write_table(table, root / f"p{number:02d}.parquet")
    return root


@pytest.fixture
def served(parquet_root: Path, certs: Certs) -> Iterator[Nginx]:
    with Nginx(parquet_root, tls=(certs.chain, certs.key)) as nginx:
        yield nginx
    http_pool._close_all()


def test_a_head_and_a_get_take_turns_on_one_session(served: Nginx) -> None:
    url = f"{served.endpoint}/p00.parquet"
    moved = _core.tls_bodies_moved()
    size = stat_file(url).size
    assert read_range(url, size - 8, 8, size, timeout=10, retry=1).endswith(b"PAR1")
    assert stat_file(f"{served.endpoint}/p01.parquet").size > 0
    log = served.log_when(lambda log: len(log) >= 3)
    assert [e.method for e in log] == ["HEAD", "GET", "HEAD"]
    assert _core.tls_bodies_moved() == moved + 1  # the GET's body went through Rust
    assert len({e.connection for e in log}) == 1  # one TCP connection, one TLS handshake


def test_a_parquet_source_states_and_reads_footers_on_shared_sessions(
    served: Nginx, tmp_path: Path
) -> None:
    """Forty files named by a pattern: 16 HEADs at a time, then 16 footers at a time, on
    the same pooled sessions (on separate pools they took up to 32 connections)."""
    import streamx

    stream = streamx.ParquetStream(
        remote=f"{served.endpoint}/p{{00..{FILES - 1}}}.parquet", local=str(tmp_path / "cache")
    )
    ds = streamx.StreamingDataset(streams=[stream], batch_size=4, shuffle=False)
    assert len(ds) == 5 * FILES
    log = served.log_when(lambda log: len([e for e in log if e.method == "GET"]) >= FILES)
    heads = {e.connection for e in log if e.method == "HEAD"}
    gets = {e.connection for e in log if e.method == "GET"}
    assert len([e for e in log if e.method == "HEAD"]) == FILES
    assert heads & gets  # footers asked on sessions the HEADs opened
    assert len(heads | gets) <= 16


@pytest.mark.parametrize("rust_tls", ["1", "0"])
def test_a_throttled_head_is_waited_out(
    parquet_root: Path, certs: Certs, monkeypatch: pytest.MonkeyPatch, rust_tls: str
) -> None:
    """nginx refuses requests past 1 per second with ``503`` and ``Retry-After: 1``: each
    file's ``HEAD`` is asked again after the wait, and answered."""
    monkeypatch.setenv("STREAMX_RUST_TLS", rust_tls)
    with Nginx(parquet_root, tls=(certs.chain, certs.key), limit_req="1r/s") as nginx:
        sizes = [stat_file(f"{nginx.endpoint}/p{n:02d}.parquet").size for n in range(3)]
        log = nginx.log_when(lambda log: len([e for e in log if e.status == 200]) >= 3)
    http_pool._close_all()
    assert all(size > 0 for size in sizes)
    assert {e.method for e in log} == {"HEAD"}
    assert [e.uri for e in log if e.status == 200] == [f"/p{n:02d}.parquet" for n in range(3)]
    assert {e.status for e in log} == {200, 503}

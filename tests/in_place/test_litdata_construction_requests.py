"""What a remote LitData source's construction asks of the store (nginx's log): its
``index.json`` in one GET (no ``HEAD`` for its size first, which a store allowing no burst
refused the GET after), then one ``HEAD`` per chunk for its version (the rewrite check),
side by side but never more than 16 at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx, max_overlap  # tests/storage, on the path by conftest

from streamx import LitDataStream, StreamingDataset
from streamx.storage import http_pool, request_pace, throttle

pytest.importorskip("litdata")
pytestmark = pytest.mark.remote

CHUNKS = 40


def _write(out: Path) -> None:
    from litdata.streaming.writer import BinaryWriter

    out.mkdir(parents=True)
    writer = BinaryWriter(str(out), chunk_size=2)
    for i in range(2 * CHUNKS):
        writer[i] = {"id": i, "text": f"row {i}"}
    writer.done()
    writer.merge(1)


def test_construction_asks_one_get_for_the_index_and_a_bounded_head_per_chunk(
    tmp_path: Path,
) -> None:
    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    _write(tmp_path / "root" / "ds")
    throttle.forget_hosts()
    request_pace.forget_paces()
    http_pool._close_all()
    with Nginx(tmp_path / "root", delay_ms=20) as server:
        stream = LitDataStream(remote=f"{server.endpoint}/ds", local=str(tmp_path / "cache"))
        ds = StreamingDataset(streams=[stream], batch_size=4)
        log = server.log_when(lambda entries: len(entries) >= CHUNKS + 1)
    assert ds.num_samples == 2 * CHUNKS
    index = [(e.method, e.status) for e in log if e.uri == "/ds/index.json"]
    assert index == [("GET", 200)]
    heads = [e for e in log if e.method == "HEAD"]
    assert sorted(e.uri for e in heads) == sorted({e.uri for e in heads})  # one a chunk
    assert len(heads) == CHUNKS
    assert 1 < max_overlap(heads) <= 16

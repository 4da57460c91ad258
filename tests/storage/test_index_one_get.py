"""A plain ``http(s)://`` dataset's ``index.json`` comes in one GET: no ``HEAD`` for its size
first. Sent back to back, the pair met a store that allows no burst (nginx ``limit_req``
without ``burst``, S3's ``SlowDown`` on a cold prefix) with a 503 for the GET, and the
construction waited out its ``Retry-After``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import LogEntry, Nginx, find_nginx

import streamx
from streamx.sim.shard_table import load_shards
from streamx.storage import http_pool, request_pace, throttle

pytestmark = pytest.mark.remote


@pytest.fixture(autouse=True)
def _fresh_hosts() -> Iterator[None]:
    """No pace, throttle or kept-alive connection of an earlier test's server (same port)."""
    throttle.forget_hosts()
    request_pace.forget_paces()
    http_pool._close_all()
    yield
    throttle.forget_hosts()
    request_pace.forget_paces()
    http_pool._close_all()


def _served(root: Path) -> Path:
    with streamx.MDSWriter(out=str(root / "ds"), columns={"i": "int"}, size_limit=1 << 10) as out:
        for i in range(100):
            out.write({"i": i})
    return root


def test_the_index_is_one_get_from_a_store_without_burst(tmp_path: Path) -> None:
    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    root = _served(tmp_path / "root")
    with Nginx(root, limit_req="1r/s") as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/ds", local=str(tmp_path / "cache"), batch_size=4
        )
        log = server.log_when(lambda entries: ("GET", 200) in _index_requests(entries))
    asked = _index_requests(log)
    assert asked == [("GET", 200)]
    assert ds.num_samples == 100


def _index_requests(log: list[LogEntry]) -> list[tuple[str, int]]:
    return [(e.method, e.status) for e in log if e.uri == "/ds/index.json"]


def test_the_simulators_index_is_one_get_too(tmp_path: Path) -> None:
    """``streamx simulate`` reads a remote dataset's index through the same single GET."""
    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    root = _served(tmp_path / "root")
    with Nginx(root, limit_req="1r/s") as server:
        table = load_shards(f"{server.endpoint}/ds")
        log = server.log_when(lambda entries: ("GET", 200) in _index_requests(entries))
    assert _index_requests(log) == [("GET", 200)]
    assert table.num_samples == 100

"""The simulator counts requests as the real downloader sends them: its part rule is the
downloader's, and a simulated epoch sends what nginx logs for the same shards."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from streamx import MDSWriter, StreamingDataset
from streamx.sim import SimConfig, SimStream, load_shards, simulate, synth_shards
from streamx.sim.requests import (
    DEFAULT_CONNECTIONS,
    DEFAULT_PART_SIZE,
    S3_GET_PER_1000,
    RequestCount,
    backlog_files,
    count_requests,
    part_bytes,
    parts_of,
)
from streamx.storage import accounting, http_pool, settings

MIB = 1 << 20


def test_part_rule_is_the_downloaders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMX_DOWNLOAD_PART_SIZE", raising=False)
    monkeypatch.delenv("STREAMX_DOWNLOAD_CONNECTIONS", raising=False)
    assert settings.download_connections() == DEFAULT_CONNECTIONS
    sizes = [1, 500_000, MIB, MIB + 1, 3 * MIB, 64 * MIB + 7, 1 << 30]
    for largest in (None, MIB // 2, MIB, 4 * MIB):
        if largest is not None:
            monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(largest))
        for size in sizes:
            for connections in (1, 3, 8, 32, 100):
                ours = part_bytes(size, connections, largest or DEFAULT_PART_SIZE)
                assert ours == settings.part_size(size, connections), (size, connections)
                many = parts_of(np.array([size]), np.array([connections]), ours)
                assert many[0] == -(-size // ours)


def test_counts_by_hand() -> None:
    # 64 MiB over 32 connections alone: 2 MiB parts, 32 GETs; with 4 files at once, 8 MiB
    # parts (8 GETs); 100 KB: one plain GET. Two index requests: a HEAD and a GET.
    sizes = np.array([64 * MIB, 64 * MIB, 100_000], np.int64)
    got = count_requests(sizes, np.array([1, 4, 1]), 32, DEFAULT_PART_SIZE, (1, 1))
    assert got == RequestCount(gets=2, ranged_gets=40, heads=1, throttled=0, bytes=sizes.sum())
    assert got.requests == 43
    assert got.per_gb() == pytest.approx(43 / (sizes.sum() / 1e9))
    assert got.cost(0.0004) == pytest.approx(43 * 0.0004 / 1000)
    # All alone: 32 + 32 + 1 + 2 = 67 requests. A quarter of answers throttled: each is
    # sent 4/3 times on average, 67 / 3 = 22 more tries.
    alone = count_requests(sizes, np.ones(3, np.int64), 32, DEFAULT_PART_SIZE, (1, 1), 0.25)
    assert (alone.requests, alone.throttled) == (67, 22)


def test_backlog_by_hand() -> None:
    # Three shards handed over at step 0, done in steps 0, 1, 2: started together, the
    # first sees itself, the second two files, the third three. A fourth released at step
    # 2 finds only the third still running.
    release, done = np.array([0, 0, 0, 2]), np.array([0, 1, 2, 3])
    assert backlog_files(release, done, 1).tolist() == [1, 2, 3, 2]
    # Two processes share them: the node's pending downloads are split between them.
    assert backlog_files(release, done, 2).tolist() == [1, 1, 2, 1]


def test_summary_prices_the_run() -> None:
    shards = synth_shards(8_000, 1_000, 20 * MIB)
    base = SimConfig((SimStream(shards),), devices=1, workers=1, batch_size=8, epochs=2)
    summary = simulate(base).summary()
    # 8 shards of 20 MiB on 32 connections: the first needed now after its range reads,
    # in parts ramping from 1 MiB (the floor) to 8 MiB: 1, 1, 2, 4, 8, 4; the 7 fetched
    # ahead in 8 MiB parts (3 each); and the index's GET. The first chunk (50 samples of
    # 20 KiB, one span of 1 MiB) is read by range first: the offset table and 4 pieces of
    # 256 KiB.
    assert summary["requests"] == 6 + 7 * 3 + 1 + 5
    assert summary["price_per_1000"] == S3_GET_PER_1000
    assert summary["request_cost"] == pytest.approx(33 * S3_GET_PER_1000 / 1000)
    assert summary["request_cost_per_epoch"] == pytest.approx(summary["request_cost"] / 2)
    assert summary["requests_per_gb"] == pytest.approx(33 / (160 * MIB / 1e9))
    # 4 connections and one file at a time: 5, 5, 8, 2 MiB parts for the first (ramped); the
    # next ones enter the predownload window before their reader does, so they are fetched
    # ahead (3 parts each). From a plain HTTP remote the index costs a HEAD too.
    cheaper = base.with_(connections=4, price_per_1000=0.001, index_requests=2, predownload=8)
    summary = simulate(cheaper).summary()
    assert summary["requests"] == 4 + 7 * 3 + 2 + 5
    assert summary["request_cost"] == pytest.approx(32 * 0.001 / 1000)


@pytest.mark.parametrize(
    ("part_size", "connections"), [(MIB, 32), (DEFAULT_PART_SIZE, 32), (DEFAULT_PART_SIZE, 4)]
)
def test_an_epoch_sends_what_nginx_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_size: int, connections: int
) -> None:
    """One process streams an epoch of 3 MiB shards from nginx; the simulated epoch of the
    same index counts the requests nginx logged, by kind.

    With 32 connections the first shard goes in 1 MiB parts and the look-ahead's in one GET
    each (part_plan's larger parts), unless the reader overtakes the look-ahead. With 4, a
    shard takes 3, 2 or 1 GETs as 1, 2 or 4 files share the connections, which the thread
    timing decides: the real count and the model's then lie between the two bounds.
    """
    from nginx_server import Nginx, find_nginx  # tests/storage, on the path (conftest)

    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(part_size))
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", str(connections))
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")  # range reads are not modelled
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    http_pool._close_all()
    accounting.reset()
    out = tmp_path / "root" / "ds"
    with MDSWriter(out=str(out), columns={"blob": "bytes"}, size_limit=3 * MIB) as writer:
        for _ in range(60):
            writer.write({"blob": os.urandom(200_000)})
    shards = load_shards(str(out))
    assert len(shards.samples) > 3 and shards.raw_bytes.max() > 2 * MIB
    with Nginx(tmp_path / "root") as server:
        ds = StreamingDataset(
            remote=f"{server.endpoint}/ds", local=str(tmp_path / "cache"), batch_size=4
        )
        assert sum(1 for _ in ds) == 60
        sent = sum(accounting.totals()[k] for k in ("GET", "RANGED_GET", "HEAD"))
        log = server.log_when(lambda entries: len(entries) >= sent)
    config = SimConfig(
        (SimStream(shards),),
        devices=1,
        workers=1,
        batch_size=4,
        part_size=part_size,
        connections=connections,
    )
    predicted = simulate(config).requests
    ranged = sum(1 for e in log if e.range not in ("", "-"))
    heads = sum(1 for e in log if e.method == "HEAD")
    index_bytes = (out / "index.json").stat().st_size
    assert predicted.bytes == sum(e.sent for e in log) - index_bytes == shards.raw_bytes.sum()
    assert predicted.heads == heads == 0  # the index is one GET
    assert len(log) == sent
    sizes = shards.download_bytes
    if connections == 32:
        # The first shard is needed now (1 MiB parts); the look-ahead's take 8 MiB parts,
        # one GET of a 3 MiB shard. A shard the reader reaches before the look-ahead starts
        # it is needed now too (thread timing): nginx logs at most every shard in parts.
        first = int(parts_of(sizes[:1], np.array([connections]), part_size)[0])
        assert predicted.requests == first + len(sizes) - 1 + 1  # and the index's GET
        assert predicted.ranged_gets == first
        alone = int(parts_of(sizes, np.full(len(sizes), connections), part_size).sum()) + 1
        assert predicted.requests <= len(log) <= alone
        assert first <= ranged
        return
    alone = int(parts_of(sizes, np.full(len(sizes), connections), part_size).sum()) + 1
    together = int(parts_of(sizes, np.ones(len(sizes), np.int64), part_size).sum()) + 1
    assert together < alone
    assert together <= predicted.requests <= alone
    assert together <= len(log) <= alone

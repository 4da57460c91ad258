"""The look-ahead window in the link model: on a per-connection-capped link the files the
window holds at once bound the rate, and a file fetched ahead lands no sooner than alone on
the connections; the first chunks' range reads are in the request count, as nginx logs
them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamx import MDSWriter, StreamingDataset
from streamx.dataset.iteration import chunk_samples
from streamx.sim import SimConfig, SimStream, load_shards, simulate, synth_shards
from streamx.sim.first_reads import range_read_gets, reads_by_range
from streamx.sim.link_model import ahead_seconds, link_rates
from streamx.sim.run import epoch_order
from streamx.storage import accounting, http_pool

MIB = 1 << 20


def _capped(**kw: object) -> SimConfig:
    # 15 shards of 8 MB (40 samples of 200 KB), one process reading 400 samples a second;
    # the node moves 800 MB/s, each connection 40 MiB/s (nginx's limit_rate, S3's cap).
    base = SimConfig(
        (SimStream(synth_shards(600, 40, 8_000_000)),),
        devices=1,
        workers=1,
        batch_size=8,
        time_per_sample=0.0025,
        bandwidth=800e6,
        shard_bandwidth=200e6,
        connection_bandwidth=40 * MIB,
        shuffle=True,
    )
    return base.with_(**kw)


def test_the_files_in_flight_bound_the_node_rate() -> None:
    config = _capped()
    # Two files at once: one 8 MB GET each at 40 MiB/s.
    assert link_rates(config, files_at_once=2).bandwidth == pytest.approx(2 * 40 * MIB)
    # Twenty: the node's rate is the bound.
    assert link_rates(config, files_at_once=20).bandwidth == pytest.approx(800e6)
    # Two files over two connections: still one GET of 8 MB each.
    assert link_rates(config.with_(connections=2), files_at_once=20).bandwidth == pytest.approx(
        2 * 40 * MIB
    )
    # One file fetched ahead takes its GET's time, whatever the node's rate.
    assert ahead_seconds(config, 8_000_000, 1) == pytest.approx(8e6 / (40 * MIB))
    assert link_rates(config).ahead_seconds == pytest.approx(8e6 / (40 * MIB))


def test_a_smaller_window_predicts_less_on_a_capped_link() -> None:
    """The window's files land one capped GET after they enter it: a window of one batch
    leaves the reader waiting for them, one of the whole epoch does not."""
    small, whole = _capped(predownload=8), _capped(predownload=600)
    fast_small, fast_whole = (simulate(c).summary()["samples_per_s"] for c in (small, whole))
    assert fast_small < 0.9 * fast_whole
    # Without the cap (the same node rate) the small window costs much less: the files
    # land at the node's rate.
    free = [
        simulate(c.with_(connection_bandwidth=None)).summary()["samples_per_s"]
        for c in (small, whole)
    ]
    assert free[0] / free[1] > fast_small / fast_whole


def test_range_reads_follow_the_loaders_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    config = SimConfig(
        (SimStream(synth_shards(60, 20, 5 * MIB)), SimStream(synth_shards(60, 20, 3 * MIB))),
        devices=1,
        workers=1,
    )
    # Shards of at least 4 MiB on a calm host without a cache limit.
    assert reads_by_range(config).tolist() == [True] * 3 + [False] * 3
    assert not reads_by_range(config.with_(cache_limit=100 * MIB)).any()
    assert not reads_by_range(config.with_(request_rate=10.0)).any()
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")
    assert not reads_by_range(config).any()


def test_an_epochs_range_reads_are_what_nginx_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process streams a shuffled epoch of 5 MiB shards from nginx with range reads on:
    the simulated epoch counts the offset tables' GETs exactly, and the requests within
    the few samples the reader reads by range before a shard lands."""
    from nginx_server import Nginx, find_nginx  # tests/storage, on the path (conftest)

    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    monkeypatch.setenv("STREAMX_RANGE_READS", "1")
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    http_pool._close_all()
    accounting.reset()
    out = tmp_path / "root" / "ds"
    with MDSWriter(out=str(out), columns={"blob": "bytes"}, size_limit=5 * MIB) as writer:
        for _ in range(120):
            writer.write({"blob": os.urandom(200_000)})
    shards = load_shards(str(out))
    assert (
        len(shards.samples) >= 4
        and reads_by_range(SimConfig((SimStream(shards),))).sum() >= len(shards.samples) - 1
    )
    with Nginx(tmp_path / "root") as server:
        ds = StreamingDataset(
            remote=f"{server.endpoint}/ds",
            local=str(tmp_path / "cache"),
            batch_size=4,
            shuffle=True,
        )
        assert sum(1 for _ in ds) == 120
        sent = sum(accounting.totals()[k] for k in ("GET", "RANGED_GET", "HEAD"))
        log = server.log_when(lambda entries: len(entries) >= sent)
    config = SimConfig((SimStream(shards),), devices=1, workers=1, batch_size=4, shuffle=True)
    on = simulate(config).requests
    chunk = chunk_samples(int(shards.raw_bytes.sum()), shards.num_samples)
    tables, pieces = range_read_gets(config, epoch_order(config, 0), shards.shard_of(), chunk)
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")
    off = simulate(config).requests
    # The range reads add their GETs; the downloads that follow them ramp their parts
    # (part_plan.plan_parts), never more than the even split's.
    assert off.requests < on.requests <= off.requests + tables + pieces
    assert on.ranged_gets - off.ranged_gets == on.requests - off.requests
    # nginx's log: an offset table is a GET from byte 0 of 16 KiB and its slack (a
    # download's first part is a MiB or more); a sample piece is a smaller range.
    small = [e for e in log if e.range not in ("", "-") and e.sent <= 256 << 10]
    logged_tables = sum(1 for e in small if e.range.startswith("bytes=0-"))
    assert tables == logged_tables
    # The reader may read more samples of those shards before they land (thread timing):
    # never fewer than the first chunk's, never past a partial's budget (a quarter of the
    # shard: 6 samples of 200 KB of a 5 MiB shard).
    budget = tables * (5 * MIB // 4 // 200_000)
    assert pieces <= len(small) - logged_tables <= budget
    assert on.requests <= len(log) <= on.requests + budget - pieces
    assert len(log) == sent

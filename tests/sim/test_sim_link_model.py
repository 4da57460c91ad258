"""The request model's formulas, each worked by hand on small cases, and its settings as
flags and YAML."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from streamx.cli.app import app
from streamx.sim import ShardTable, SimConfig, SimStream, simulate, synth_shards
from streamx.sim.link_model import link_rates, request_seconds, throttle_wait
from streamx.sim.yaml_run import read_run_yaml

MIB = 1 << 20


def _config(**kw: object) -> SimConfig:
    shards = synth_shards(64_000, 1_000, 64 * MIB)
    return SimConfig((SimStream(shards),), devices=2, workers=1, batch_size=8, **kw)  # type: ignore[arg-type]


def test_neutral_settings_change_nothing() -> None:
    base = _config(bandwidth=50 * MIB, shard_bandwidth=20 * MIB)
    rates = link_rates(base)
    assert (rates.bandwidth, rates.shard_bandwidth, rates.startup) == (50 * MIB, 20 * MIB, 0)
    spelled = base.with_(connections=7, part_size=MIB, rtt=0.0, throttled=0.0)
    ours, theirs = simulate(base), simulate(spelled)
    np.testing.assert_array_equal(ours.step_times, theirs.step_times)
    np.testing.assert_array_equal(ours.step_bytes, theirs.step_bytes)
    # Only the request count sees the connections and part size.
    assert ours.requests.requests != theirs.requests.requests


def test_a_per_connection_cap() -> None:
    # 64 MiB shards alone on 32 connections: 2 MiB parts at 40 MiB/s each, all at once:
    # 0.05 s, so 1,280 MiB/s both ways (the node's 10 GiB/s is not the bound).
    rates = link_rates(_config(bandwidth=10 * 1024 * MIB, connection_bandwidth=40 * MIB))
    assert rates.bandwidth == pytest.approx(32 * 40 * MIB)
    assert rates.shard_bandwidth == pytest.approx(32 * 40 * MIB)
    # 8 connections: 8 MiB parts, 8 of them, 0.2 s: 320 MiB/s.
    eight = link_rates(
        _config(bandwidth=10 * 1024 * MIB, connection_bandwidth=40 * MIB, connections=8)
    )
    assert eight.bandwidth == pytest.approx(320 * MIB)
    assert eight.shard_bandwidth == pytest.approx(320 * MIB)
    # A node of 100 MiB/s: each of 32 connections gets 3.125 MiB/s, the node its 100.
    slow = link_rates(_config(bandwidth=100 * MIB, connection_bandwidth=40 * MIB))
    assert slow.bandwidth == pytest.approx(100 * MIB)
    assert slow.shard_bandwidth == pytest.approx(100 * MIB)


def test_round_trips() -> None:
    config = _config(bandwidth=10 * 1024 * MIB, connection_bandwidth=40 * MIB, rtt=0.01)
    # A 2 MiB part: 10 ms, then 0.05 s; 2 MiB in 0.06 s per connection, 32 connections.
    assert request_seconds(2 * MIB, 40 * MIB, config) == pytest.approx(0.06)
    rates = link_rates(config)
    assert rates.bandwidth == pytest.approx(32 * 2 * MIB / 0.06)
    # A shard of 64 1 MiB parts on 32 connections: two rounds of 0.01 + 1/40 s.
    small = link_rates(config.with_(part_size=MIB))
    assert small.shard_bandwidth == pytest.approx(64 * MIB / (2 * (0.01 + 1 / 40)))


def test_throttle_waits_by_hand() -> None:
    # Retry-After 1: each throttled try waits 1 s + 0.25 s of jitter on average, and a
    # request is throttled t times or more with probability 0.5^t (up to 9 tries).
    assert throttle_wait(0.5, 1.0) == pytest.approx(1.25 * (1 - 0.5**9))
    # No Retry-After: full jitter, ceilings 0.5, 1, 2, 4, 8, 16, 20, 20, 20 s (mean: half).
    ceilings = [0.5, 1, 2, 4, 8, 16, 20, 20, 20]
    assert throttle_wait(0.5, None) == pytest.approx(
        sum(0.5**t * c / 2 for t, c in enumerate(ceilings, 1))
    )
    assert throttle_wait(0.0, None) == 0.0
    # A quarter throttled with Retry-After 1 and a 10 ms round trip: 1/3 extra tries.
    config = _config(rtt=0.01, throttled=0.25, retry_after=1.0)
    wait = sum(0.25**t * 1.25 for t in range(1, 10))
    assert request_seconds(0, 1.0, config) == pytest.approx(0.01 * 4 / 3 + wait)


def test_decompression_bounds_both_rates() -> None:
    # Shards stored at half their size, decompressed at 100 MiB/s of output per process:
    # 50 MiB/s of downloads per process; two processes, 100 MiB/s for the node.
    raw = np.full(8, 64 * MIB, np.int64)
    shards = ShardTable(np.full(8, 1_000, np.int64), raw, raw // 2)
    config = SimConfig(
        (SimStream(shards),),
        devices=2,
        workers=1,
        batch_size=8,
        bandwidth=1024 * MIB,
        shard_bandwidth=200 * MIB,
        decompression=100 * MIB,
    )
    rates = link_rates(config)
    assert rates.bandwidth == pytest.approx(100 * MIB)
    assert rates.shard_bandwidth == pytest.approx(50 * MIB)
    # Uncompressed shards: nothing to decompress.
    plain = link_rates(_config(bandwidth=1024 * MIB, decompression=MIB))
    assert plain.bandwidth == 1024 * MIB


def test_tls_handshake_delays_the_first_batch_only() -> None:
    base = _config(bandwidth=100 * MIB)
    ours, tls = simulate(base), simulate(base.with_(tls_handshake=0.5))
    assert tls.step_times[0] == pytest.approx(ours.step_times[0] + 0.5)
    np.testing.assert_array_equal(tls.step_times[1:], ours.step_times[1:])


def test_a_capped_link_bounds_throughput() -> None:
    # Compute takes 8 x 0.001 s a step, 4 s in all; the epoch's 8 shards of 64 MiB need
    # 512 MiB, which 4 connections at 10 MiB/s bring in 12.8 s: bandwidth-bound, with a
    # look-ahead of the whole epoch the run ends at most one shard's reading (125 steps of
    # a device) after the last download.
    shards = synth_shards(8_000, 1_000, 64 * MIB)
    config = SimConfig(
        (SimStream(shards),),
        devices=2,
        workers=1,
        batch_size=8,
        time_per_sample=0.001,
        bandwidth=1024 * MIB,
        connection_bandwidth=10 * MIB,
        connections=4,
        predownload=4_000,
    )
    summary = simulate(config).summary()
    assert summary["bytes_downloaded"] == 512 * MIB
    assert 512 / 40 <= summary["total_time"] <= 512 / 40 + 125 * 0.008
    # Twice the connections: twice the rate.
    faster = simulate(config.with_(connections=8)).summary()
    assert 512 / 80 <= faster["total_time"] <= 512 / 80 + 125 * 0.008


def test_flags_and_yaml(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "simulate", "-n", "1", "-d", "2", "-w", "1", "-t", "0.001", "-b", "1GB",
            "--batch-size", "8", "--samples", "8000", "--shard-samples", "1000",
            "--shard-bytes", "64MiB", "--connection-bandwidth", "40MB", "--connections", "8",
            "--rtt", "0.01", "--price-per-1000", "0.001", "--no-quality", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["runs"][0]
    assert summary["price_per_1000"] == 0.001
    # 8 MiB parts over 8 connections for the first shard of each of the 2 processes, and
    # the look-ahead's 8 MiB parts for the 6 fetched ahead; the index. Each process reads
    # its first chunk (15 samples of 67 KB, each apart from the next) by range first: the
    # offset table and one GET a sample.
    assert summary["requests"] == 2 * 8 + 6 * 8 + 1 + 2 * (1 + 15)
    bad = CliRunner().invoke(
        app, ["simulate", "-n", "1", "-d", "1", "-t", "0.1", "-b", "1GB", "--batch-size", "8",
              "--samples", "8000", "--throttled", "100%"],
    )  # fmt: skip
    assert bad.exit_code == 1
    assert "--throttled: `throttled` must be a share below 1" in bad.output
    run = tmp_path / "run.yaml"
    run.write_text(
        "global_train_batch_size: 8\nmax_duration: 1ep\n"
        "train_loader: {num_workers: 1, dataset: {remote: /nowhere}}\n"
        "simulator: {connection_bandwidth: 40MB, rtt: 0.01, throttled: 10%, retry_after: 1}\n"
    )
    settings = read_run_yaml(str(run)).settings
    assert settings == {
        "connection_bandwidth": 40 * MIB,
        "rtt": 0.01,
        "throttled": 0.1,
        "retry_after": 1.0,
    }
    run.write_text(run.read_text().replace("rtt:", "rrt:"))
    with pytest.raises(ValueError, match="simulator: unknown key 'rrt'"):
        read_run_yaml(str(run))

"""``streamx simulate --tune``: the planner finds the answer known by hand, and never
recommends a setting predicted slower than the one given."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from streamx.cli.app import app
from streamx.sim import SimConfig, SimStream, simulate, synth_shards
from streamx.sim.tune import knob_values, tune

MIB = 1 << 20


def _bandwidth_bound(**kw: object) -> SimConfig:
    # 8 shards of 32 MiB; compute is nearly free, so the node's 160 MiB/s is the bound:
    # 256 MiB in 1.6 s, at most 2,500 samples/s.
    shards = synth_shards(4_000, 500, 32 * MIB)
    base = SimConfig(
        (SimStream(shards),),
        devices=2,
        workers=2,
        batch_size=8,
        time_per_sample=0.0001,
        bandwidth=160 * MIB,
        connection_bandwidth=40 * MIB,
    )
    return base.with_(**kw)


def test_more_connections_stop_helping_at_the_node_bandwidth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The downloads' parts alone (the first chunks' range reads: test_sim_window.py).
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")
    found = tune(_bandwidth_bound())
    best = found.recommended
    # 4 connections at 40 MiB/s fill the node's 160 MiB/s; more only split shards into more
    # parts. Over 4 connections a 32 MiB shard fetched alone goes in 8 MiB parts (with
    # part_size >= 8 MiB): 4 GETs, fewer when the process fetches two or more at once;
    # plus the index's GET.
    assert best.config.connections == 4
    assert best.config.part_size >= 8 * MIB
    assert 8 + 1 <= best.summary["requests"] <= 8 * 4 + 1
    # 1 MiB parts over 32 for the shard each of the 4 processes needs first; 8 MiB parts
    # for the 4 fetched ahead.
    assert found.given.summary["requests"] == 4 * 32 + 4 * 4 + 1
    assert best.summary["samples_per_s"] <= 2_500
    assert best.summary["samples_per_s"] >= (1 - found.tolerance) * found.best_samples_per_s
    assert best.summary["samples_per_s"] >= found.given.summary["samples_per_s"]
    # Two connections would halve the rate: the planner does not trade speed for requests.
    two = simulate(best.config.with_(connections=2)).summary()
    assert two["samples_per_s"] < 0.6 * best.summary["samples_per_s"]


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"time_per_sample": 0.01, "rtt": 0.02},
        {"shuffle": True, "workers": 8, "predownload": 8, "throttled": 0.1, "retry_after": 1.0},
        {"time_per_sample": 0.002, "shard_bandwidth": 30 * MIB, "cache_limit": 512 * MIB},
    ],
)
def test_never_slower_than_the_settings_given(changes: dict[str, object]) -> None:
    found = tune(_bandwidth_bound(**changes), tolerance=0.05)
    given, best = found.given.summary, found.recommended.summary
    assert best["samples_per_s"] >= given["samples_per_s"]
    assert found.recommended.cost_key() <= found.given.cost_key() or (
        best["samples_per_s"] > given["samples_per_s"]
    )


def test_throttling_holds_connections_down() -> None:
    # The model takes the throttled share as given, so it would add connections; a real
    # store throttles more requests at once more: the planner never adds any then.
    found = tune(_bandwidth_bound(connections=8, throttled=0.3, retry_after=1.0))
    assert found.recommended.config.connections <= 8


def test_knob_values_include_the_given_one() -> None:
    config = _bandwidth_bound(connections=24, part_size=3 * MIB, predownload=40)
    assert 24 in knob_values(config, "connections", 0)
    assert 3 * MIB in knob_values(config, "part_size", 0)
    assert 40 in knob_values(config, "predownload", 0)
    assert knob_values(config, "cache_limit", 400) == [None, 100, 200, 300]
    assert knob_values(config, "workers", 0, {"workers": [1, 2]}) == [1, 2]
    assert knob_values(config, "connections", 0, {"connections": [4]}) == [4, 24]
    with pytest.raises(ValueError, match="`shuffle` is not a knob"):
        knob_values(config, "shuffle", 0)
    with pytest.raises(ValueError, match="tolerance"):
        tune(config, tolerance=1.0)


def test_cli_tune_json_and_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")  # the downloads' parts alone
    args = [
        "simulate", "-n", "1", "-d", "2", "-w", "2", "-t", "0.0001", "-b", "160MiB",
        "--batch-size", "8", "--samples", "4000", "--shard-samples", "500",
        "--shard-bytes", "32MiB", "--connection-bandwidth", "40MiB", "--tune",
    ]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)["tune"]
    assert out["recommended"]["settings"]["connections"] == 4
    assert out["recommended"]["summary"]["requests"] <= 33
    assert out["given"]["settings"]["connections"] == 32
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "recommended: workers=" in text.stdout
    assert "STREAMX_DOWNLOAD_CONNECTIONS=4" in text.stdout
    both = CliRunner().invoke(app, [*args, "--compare", "workers=1,2"])
    assert both.exit_code == 1
    assert "leave out --compare" in both.output

"""``streamx bench`` measures real reads and writes the calibration file the simulator takes."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from cli_run import assert_one_line_failure, run_cli

from streamx.cli.calibration import load_calibration

_SHAPE: dict[str, dict[str, type[float] | type[int]]] = {
    "download": {
        "per_connection_bytes_per_s": float,
        "shard_bytes_per_s": float,
        "aggregate_bytes_per_s": float,
        "connections": int,
    },
    "decode": {"samples_per_s": float, "bytes_per_s": float},
    "dataloader": {
        "samples_per_s": float,
        "warm_samples_per_s": float,
        "warm_first_batch_s": float,
        "download_s_per_byte": float,
        "workers": int,
        "batch_size": int,
    },
}


def _check_shape(obj: dict[str, Any], source: str) -> None:
    assert set(obj) == {"version", "source", *_SHAPE}
    assert obj["version"] == 1 and obj["source"] == source
    for section, fields in _SHAPE.items():
        assert set(obj[section]) == set(fields), section
        for name, kind in fields.items():
            assert type(obj[section][name]) is kind, (section, name)
            # A pass that lost no time to the download beside it measures 0.
            assert obj[section][name] > 0 or name in ("workers", "download_s_per_byte")


def test_bench_s3_writes_the_calibration(s3_dataset: str, tmp_path: Any) -> None:
    out = str(tmp_path / "cal.json")
    result = run_cli(
        "bench",
        s3_dataset,
        "--samples",
        "200",
        "--shards",
        "8",
        "-c",
        "4",
        "-w",
        "1",
        "-b",
        "16",
        "--out",
        out,
        "--json",
        process=True,
    )
    assert result.code == 0, result.err
    printed = json.loads(result.out)
    with open(out) as file:
        written = json.load(file)
    cost = printed.pop("requests")  # printed, not part of the calibration file
    assert printed == written
    # The streaming pass's requests, counted by kind (GETs through the S3 route).
    assert cost["get"] + cost["ranged_get"] > 0 and cost["bytes_received"] > 0
    assert cost["put"] == cost["list"] == 0
    assert cost["get_price_per_1000"] == 0.0004 and cost["requests_per_gb"] > 0
    assert cost["epoch_requests"] > 0 and cost["epoch_cost"] > 0
    _check_shape(written, s3_dataset)
    assert written["download"]["connections"] == 4
    assert (written["dataloader"]["workers"], written["dataloader"]["batch_size"]) == (1, 16)
    assert load_calibration(out) == written


def test_bench_local_prints_figures(dataset: str, tmp_path: Any) -> None:
    out = str(tmp_path / "cal.json")
    # Without -c the aggregate is measured at the loader's own connection count.
    result = run_cli(
        "bench",
        dataset,
        "--samples",
        "100",
        "-w",
        "0",
        "--out",
        out,
        env={"STREAMX_DOWNLOAD_CONNECTIONS": "3"},
        process=True,
    )
    assert result.code == 0, result.err
    assert load_calibration(out)["download"]["connections"] == 3
    assert "samples/s" in result.out and f"calibration written to {out}" in result.out
    assert "requests/GB" in result.out
    with open(out) as file:
        _check_shape(json.load(file), dataset)


def test_bench_unknown_split_fails_in_one_line(split_dataset: str, tmp_path: Any) -> None:
    out = str(tmp_path / "cal.json")
    assert_one_line_failure(
        run_cli("bench", split_dataset, "--split", "test", "--out", out), "no split 'test'"
    )
    assert not os.path.exists(out)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, "version 1"),
        (
            {"download": {"per_connection_bytes_per_s": 1.0, "aggregate_bytes_per_s": 1.0}},
            "download.connections",
        ),
        (
            {"dataloader": {"samples_per_s": 1.0, "workers": 1.5, "batch_size": 2}},
            "dataloader.workers",
        ),
        ({"source": 3}, "source"),
        (
            {
                "download": {
                    "per_connection_bytes_per_s": 1.0,
                    "shard_bytes_per_s": "fast",
                    "aggregate_bytes_per_s": 1.0,
                    "connections": 2,
                }
            },
            "download.shard_bytes_per_s",
        ),
    ],
)
def test_load_calibration_rejects_other_shapes(
    tmp_path: Any, change: dict[str, Any], message: str
) -> None:
    good = {
        "version": 1,
        "source": "/data",
        "download": {
            "per_connection_bytes_per_s": 1.0,
            "aggregate_bytes_per_s": 2.0,
            "connections": 2,
        },
        "decode": {"samples_per_s": 3.0, "bytes_per_s": 4.0},
        "dataloader": {"samples_per_s": 5.0, "workers": 0, "batch_size": 1},
    }
    path = str(tmp_path / "cal.json")
    with open(path, "w") as file:
        json.dump({**good, **change}, file)
    with pytest.raises(ValueError, match=message):
        load_calibration(path)


def test_load_calibration_without_the_one_shard_rate(tmp_path: Any) -> None:
    # Files written before `shard_bytes_per_s` was measured still load; the simulator then
    # runs every download at the aggregate rate.
    from streamx.sim.calibrate import read_calibration

    path = str(tmp_path / "cal.json")
    with open(path, "w") as file:
        json.dump(
            {
                "version": 1,
                "source": "/data",
                "download": {
                    "per_connection_bytes_per_s": 1.0,
                    "aggregate_bytes_per_s": 2.0,
                    "connections": 2,
                },
                "decode": {"samples_per_s": 3.0, "bytes_per_s": 4.0},
                "dataloader": {"samples_per_s": 5.0, "workers": 0, "batch_size": 1},
            },
            file,
        )
    assert "shard_bytes_per_s" not in load_calibration(path)["download"]
    assert read_calibration(path)["shard_bandwidth"] is None
    # Without the warm DataLoader figure the streaming one is the floor.
    assert read_calibration(path)["min_time_per_sample"] == 1 / 5.0

"""``streamx simulate --calibrate`` with other worker counts than the given one (``--tune``'s
candidates, ``--compare workers=...``): each run's step gets the loader's floor of its own
workers. The calibrated DataLoader delivered 100 samples/s with two workers (0.02 s a sample
in each); the model takes 0.005 s, so one worker runs at 50 samples/s, two at 100, and four
or more at the model's 200; downloads cost next to nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streamx.cli.app import app

LOADER = 100.0  # samples/s the calibrated DataLoader delivered, with two workers
MODEL = 0.005  # the model's seconds per sample: four workers keep up with it


def _simulate(tmp_path: Path, *extra: str) -> dict[str, Any]:
    calibration = tmp_path / "bench.json"
    link = {"per_connection_bytes_per_s": 4e9, "shard_bytes_per_s": 4e9}
    link |= {"aggregate_bytes_per_s": 4e9, "connections": 32}
    loader = {"samples_per_s": LOADER, "workers": 2, "batch_size": 16}
    decode = {"samples_per_s": 1e5, "bytes_per_s": 1e9}
    bench = {"version": 1, "source": "/d", "download": link, "decode": decode}
    calibration.write_text(json.dumps(bench | {"dataloader": loader}))
    args = ["simulate", "--samples", "4000", "--shard-samples", "100", "--shard-bytes"]
    args += ["100000", "-n", "1", "-d", "1", "-w", "2", "-t", str(MODEL), "--batch-size"]
    args += ["16", "--calibrate", str(calibration), "--no-quality", "--json", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_each_worker_count_gets_its_own_loader_floor(tmp_path: Path) -> None:
    runs = _simulate(tmp_path, "--compare", "workers=1,2,4,8")["runs"]
    rates = [run["samples_per_s"] for run in runs]
    assert rates == pytest.approx([LOADER / 2, LOADER, 1 / MODEL, 1 / MODEL], rel=0.02)


def test_tune_recommends_the_fewest_workers_that_keep_up_with_the_model(tmp_path: Path) -> None:
    found = _simulate(tmp_path, "--tune")["tune"]
    given, recommended = found["given"], found["recommended"]
    assert given["settings"]["workers"] == 2
    assert given["summary"]["samples_per_s"] == pytest.approx(LOADER, rel=0.02)
    # One or two workers leave the model waiting on the loader; eight only cost more.
    assert recommended["settings"]["workers"] == 4
    assert recommended["summary"]["samples_per_s"] == pytest.approx(1 / MODEL, rel=0.02)
    assert found["best_samples_per_s"] == pytest.approx(1 / MODEL, rel=0.02)

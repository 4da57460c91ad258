"""A calibrated loader's cost per sample in ``streamx simulate``: ``streamx bench`` measures
what its DataLoader's workers delivered together, so more simulated workers lower the floor
under a step; a run without workers (torch's ``num_workers=0``) loads each sample in the
training process, so the loader's cost adds to the model's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_cli import cli_samples_per_s

LOADER = 100.0  # samples/s the calibrated DataLoader delivered, with two workers
MODEL = 0.001  # the model's seconds per sample: the loader is the slower


def _samples_per_s(calibration: Path, workers: int) -> float:
    return cli_samples_per_s(calibration, workers, model=MODEL, shard_bytes=100_000)


def test_the_loader_floor_follows_the_simulated_workers(tmp_path: Path) -> None:
    calibration = tmp_path / "bench.json"
    link = {"per_connection_bytes_per_s": 4e9, "shard_bytes_per_s": 4e9}
    link |= {"aggregate_bytes_per_s": 4e9, "connections": 32}  # downloads cost ~nothing
    loader = {"samples_per_s": LOADER, "workers": 2, "batch_size": 16}
    decode = {"samples_per_s": 1e5, "bytes_per_s": 1e9}
    calibration.write_text(
        json.dumps(
            {"version": 1, "source": "/d", "download": link, "decode": decode, "dataloader": loader}
        )
    )
    # Each of the two workers took 2 / LOADER s a sample.
    assert _samples_per_s(calibration, 2) == pytest.approx(LOADER, rel=0.02)
    assert _samples_per_s(calibration, 4) == pytest.approx(2 * LOADER, rel=0.02)
    assert _samples_per_s(calibration, 1) == pytest.approx(LOADER / 2, rel=0.02)


def test_without_workers_the_loader_adds_to_the_model(tmp_path: Path) -> None:
    # `-w 0` (a loader in the training process, as mosaic and torch users run) is simulated,
    # not refused: each sample takes the model's time plus one loader process's.
    calibration = tmp_path / "bench.json"
    link = {"per_connection_bytes_per_s": 4e9, "shard_bytes_per_s": 4e9}
    link |= {"aggregate_bytes_per_s": 4e9, "connections": 32}
    loader = {"samples_per_s": LOADER, "workers": 2, "batch_size": 16}
    decode = {"samples_per_s": 1e5, "bytes_per_s": 1e9}
    calibration.write_text(
        json.dumps(
            {"version": 1, "source": "/d", "download": link, "decode": decode, "dataloader": loader}
        )
    )
    assert _samples_per_s(calibration, 0) == pytest.approx(1 / (MODEL + 2 / LOADER), rel=0.02)

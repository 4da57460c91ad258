"""What downloading costs the loader (``SimConfig.loader_time_per_byte``): a cold epoch
decrypts and copies its bodies on the cores the loader decodes on, so each sample's loader
time grows by its share of the download; ``streamx bench`` measures it and ``--calibrate``
fills it. Constructed configs with downloads that cost no time, so the step is the loader's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_cli import cli_samples_per_s

from streamx.sim import SimConfig, SimStream, simulate, synth_shards

MODEL = 0.001  # the model's seconds per sample
LOADER = 0.001  # one loader process's seconds per sample from a warm cache
PER_BYTE = 1e-6  # seconds one loader process loses per downloaded byte
SAMPLE_BYTES = 1000  # 100 samples of 1,000 bytes per shard


def _config(**changes: object) -> SimConfig:
    shards = synth_shards(4000, 100, 100 * SAMPLE_BYTES)
    run = SimConfig(
        (SimStream(shards),),
        devices=1,
        workers=0,
        batch_size=16,
        time_per_sample=MODEL,
        loader_time_per_sample=LOADER,
        bandwidth=1e12,  # downloads take no time: the step is the model's and the loader's
    )
    return run.with_(**changes)


def _rate(config: SimConfig) -> float:
    rate: float = simulate(config).summary()["samples_per_s"]
    return rate


def test_the_download_adds_its_bytes_to_the_loaders_time_per_sample() -> None:
    without = _rate(_config())
    assert without == pytest.approx(1 / (MODEL + LOADER), rel=0.02)
    # 1,000 bytes per sample at 1 us a byte: 1 ms more per sample in the training process.
    with_cost = _rate(_config(loader_time_per_byte=PER_BYTE))
    assert with_cost == pytest.approx(1 / (MODEL + LOADER + PER_BYTE * SAMPLE_BYTES), rel=0.02)


def test_workers_share_the_download_cost_beside_the_model() -> None:
    # Two workers: the loader's 2 ms a sample (1 decoding, 1 downloading) is 1 ms per
    # worker, above the model's 0.5 ms; without the download cost the model sets the pace.
    run = _config(workers=2, time_per_sample=MODEL / 2)
    assert _rate(run) == pytest.approx(2 / MODEL, rel=0.02)
    assert _rate(run.with_(loader_time_per_byte=PER_BYTE)) == pytest.approx(1 / MODEL, rel=0.02)


def test_later_epochs_read_the_cache_and_a_cache_limit_downloads_again() -> None:
    one = _config(loader_time_per_byte=PER_BYTE)
    two = one.with_(epochs=2)
    # Without a cache limit the second epoch downloads nothing: half the cost per sample.
    assert two.download_time_per_sample == pytest.approx(one.download_time_per_sample / 2)
    assert _rate(two) == pytest.approx(1 / (MODEL + LOADER + PER_BYTE * SAMPLE_BYTES / 2), rel=0.02)
    # A cache limit below the dataset evicts, so every epoch downloads again; one that holds
    # it changes nothing.
    limited = two.with_(cache_limit=10 * 100 * SAMPLE_BYTES)
    assert limited.download_time_per_sample == pytest.approx(one.download_time_per_sample)
    roomy = two.with_(cache_limit=40 * 100 * SAMPLE_BYTES)
    assert roomy.download_time_per_sample == pytest.approx(two.download_time_per_sample)


def _calibration(path: Path, loader: dict[str, float | int]) -> Path:
    link = {"per_connection_bytes_per_s": 4e12, "shard_bytes_per_s": 4e12}
    link |= {"aggregate_bytes_per_s": 4e12, "connections": 32}
    decode = {"samples_per_s": 1e5, "bytes_per_s": 1e9}
    body = {"version": 1, "source": "/d", "download": link, "decode": decode, "dataloader": loader}
    path.write_text(json.dumps(body))
    return path


def _cli_rate(calibration: Path, workers: int) -> float:
    return cli_samples_per_s(calibration, workers, model=MODEL, shard_bytes=100 * SAMPLE_BYTES)


def test_calibrate_takes_the_benchs_download_cost(tmp_path: Path) -> None:
    # The bench's two workers together delivered 1,000 samples/s from a warm cache (2 ms a
    # sample each) and lost 0.5 us per byte downloaded beside them (1 us each).
    loader = {"samples_per_s": 1000.0, "workers": 2, "batch_size": 16}
    old = _calibration(tmp_path / "old.json", loader)  # a file from before the busy pass
    new = _calibration(tmp_path / "new.json", {**loader, "download_s_per_byte": PER_BYTE / 2})
    assert _cli_rate(old, 0) == pytest.approx(1 / (MODEL + 2 * LOADER), rel=0.02)
    assert _cli_rate(new, 0) == pytest.approx(
        1 / (MODEL + 2 * LOADER + PER_BYTE * SAMPLE_BYTES), rel=0.02
    )
    # Four workers share it: (2 + 1) ms per sample over 4 is 0.75 ms, below the model's 1.
    assert _cli_rate(new, 4) == pytest.approx(1 / MODEL, rel=0.02)
    assert _cli_rate(new, 2) == pytest.approx(2 / (2 * LOADER + PER_BYTE * SAMPLE_BYTES), rel=0.02)

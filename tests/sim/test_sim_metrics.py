"""Iteration metrics of StreamingDataset / StreamingDataLoader, from a moto S3 remote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamx import MDSWriter, StreamingDataLoader, StreamingDataset
from streamx.runtime import metrics

SAMPLES = 600


@pytest.fixture
def remote(s3: Any, tmp_path: Path) -> tuple[str, int]:
    """A dataset of several zstd shards on S3; returns its URL and its shards' file bytes."""
    out = tmp_path / "src"
    with MDSWriter(
        out=str(out), columns={"id": "int", "blob": "bytes"}, compression="zstd", size_limit=20_000
    ) as writer:
        for i in range(SAMPLES):
            writer.write({"id": i, "blob": bytes([i % 251]) * 300 + str(i).encode()})
    for path in out.iterdir():
        s3.put(f"ds/{path.name}", path.read_bytes())
    index = json.loads((out / "index.json").read_text())
    fetched = sum(s["zip_data"]["bytes"] for s in index["shards"])
    return s3.url("ds"), fetched


@pytest.fixture(autouse=True)
def _own_metrics_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_METRICS_DIR", str(tmp_path / "metrics"))
    (tmp_path / "metrics").mkdir()


def test_dataloader_workers_report_to_the_main_process(
    remote: tuple[str, int], tmp_path: Path
) -> None:
    url, fetched = remote
    ds = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=10, shuffle=True)
    loader = StreamingDataLoader(ds, batch_size=10, num_workers=2)
    seen = sum(len(batch["id"]) for batch in loader)
    assert seen == SAMPLES
    first = metrics.snapshot()
    assert first["samples"] == SAMPLES
    assert first["bytes_downloaded"] == fetched
    assert first["cache_misses"] >= 1
    assert first["cache_hits"] + first["cache_misses"] == SAMPLES
    assert first["download_queue"] == 0
    assert first["samples_per_s"] > 0
    # A second epoch reads the cached shards: no bytes, no misses, no stall.
    assert sum(len(batch["id"]) for batch in loader) == SAMPLES
    per_epoch = metrics.epoch_totals()
    assert sorted(per_epoch) == [0, 1]
    assert per_epoch[1]["samples"] == SAMPLES
    assert per_epoch[1]["bytes_downloaded"] == 0
    assert per_epoch[1]["cache_misses"] == 0
    assert per_epoch[1]["stall_s"] == 0.0
    assert metrics.snapshot()["samples"] == 2 * SAMPLES


def test_disabled_counts_nothing(
    remote: tuple[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_METRICS", "0")
    url, _ = remote
    ds = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=10)
    assert sum(1 for _ in ds) == SAMPLES
    monkeypatch.delenv("STREAMX_METRICS")
    assert metrics.snapshot()["samples"] == 0
    # On again from the next epoch, in this (the main) process.
    assert sum(1 for _ in ds) == SAMPLES
    assert metrics.snapshot()["samples"] == SAMPLES


def test_logging(remote: tuple[str, int], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url, _ = remote
    metrics.enable_logging(0.0)
    try:
        with caplog.at_level("INFO", logger="streamx.metrics"):
            ds = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=10)
            assert sum(1 for _ in ds) == SAMPLES
    finally:
        metrics.enable_logging(None)
    assert any("bytes_downloaded" in r.getMessage() for r in caplog.records)

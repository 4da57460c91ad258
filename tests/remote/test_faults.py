"""Streaming through a fault-injecting proxy: dropped connections, 503s, slow answers and
truncated or short bodies. Faults are bounded per request, so retries always get through;
every epoch must still deliver every sample exactly once, with the right bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import remote_data
from s3_bucket import S3
from s3_fault_proxy import FaultProxy

import streamx

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]

N = 400


@pytest.fixture(scope="module")
def remote(module_s3: S3) -> str:
    remote_data.write(module_s3.url("faults"), N, size_limit=6_000)
    return module_s3.url("faults")


def _faults(proxy: Any, seed: int, probability: float = 0.6) -> None:
    cfg = proxy.config
    cfg.probability = probability
    cfg.kinds = ("drop", "503", "slow", "truncate", "short")
    cfg.methods = ("GET", "HEAD")
    cfg.max_per_key = 2
    cfg.seed = seed
    cfg.slow_s = 0.2
    proxy._rng.seed(seed)


def test_epoch_survives_faults(
    remote: str, via_proxy: FaultProxy, tmp_path: Path, s3_route: str
) -> None:
    _faults(via_proxy, seed=1)
    ds = streamx.StreamingDataset(
        remote=remote,
        local=str(tmp_path / "cache"),
        batch_size=8,
        shuffle=True,
        download_retry=4,
        download_timeout=20,
        validate_hash="xxh64",
    )
    got = [remote_data.check(s) for s in ds]
    assert sorted(got) == list(range(N))
    # About 55 shards, each GET faulty with p=0.6 up to twice: ~40 faults, so every kind shows
    # up (a kind is missing with probability about 4 * 0.8**40, below 1e-3).
    assert via_proxy.faults_injected() >= 20
    kinds = {fault for *_rest, fault in via_proxy.log.entries if fault}
    assert {"drop", "503", "truncate", "short"} <= kinds


def test_dataloader_epoch_survives_faults(
    remote: str, via_proxy: FaultProxy, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    _faults(via_proxy, seed=2)
    ds = streamx.StreamingDataset(
        remote=remote,
        local=str(tmp_path / "cache"),
        batch_size=8,
        shuffle=True,
        download_retry=4,
        download_timeout=20,
        validate_hash="sha1",
        shuffle_block_size=50,
        cache_limit=60_000,
    )
    loader = streamx.StreamingDataLoader(
        ds, batch_size=8, num_workers=2, collate_fn=remote_data.list_collate
    )
    got = remote_data.ids_of_batches(loader)
    assert sorted(got) == list(range(N))
    assert via_proxy.faults_injected() >= 10

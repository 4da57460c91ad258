"""Node queues on a thread pool (large epochs) or on the calling thread (small ones): the
same simulation either way."""

from __future__ import annotations

import os

import numpy as np
import pytest

import streamx.sim.run as sim_run
from streamx.sim import SimConfig, SimStream, simulate, synth_shards


@pytest.mark.parametrize("cache_limit", [None, 150_000_000])
def test_threads_change_nothing(cache_limit: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = SimConfig(
        (SimStream(synth_shards(20_000, 500, 10_000_000)),),
        nodes=3,
        devices=2,
        workers=2,
        batch_size=8,
        bandwidth=50e6,
        epochs=2,
        shuffle=True,
        cache_limit=cache_limit,
    )
    inline = simulate(cfg)
    monkeypatch.setattr(sim_run, "_THREADED_SAMPLES", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # a pool even on one CPU
    threaded = simulate(cfg)
    for name in ("step_times", "step_bytes", "node_stall"):
        np.testing.assert_array_equal(getattr(threaded, name), getattr(inline, name))
    assert threaded.min_cache_limit == inline.min_cache_limit

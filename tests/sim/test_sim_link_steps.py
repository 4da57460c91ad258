"""The one-rate link's quiet stretches: filled with numpy, bit for bit the scalar loop's.

``one_rate_steps`` steps every step in Python with ``skip_quiet=False``; by default it fills
stretches of quiet steps (no wait, look-ahead done) at once. Both must give the same
floats and positions, on the inputs real runs give it and on made-up lists that are busy
all the time, quiet in bursts, or hold empty shards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import streamx.sim.network as network
from streamx.sim import SimConfig, SimStream, simulate, synth_shards
from streamx.sim.link_steps import one_rate_steps

MB = 1_000_000

# one_rate_steps' positional arguments: target, limit, prefix, starts, compute, rate, rounding.
Args = tuple[
    NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64], float, float, bool
]


def _assert_same(args: Args) -> None:
    fast = one_rate_steps(*args)
    slow = one_rate_steps(*args, skip_quiet=False)
    for got, want in zip(fast, slow):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def _lists(
    rng: np.random.Generator, steps: int, nodes: int, sizes: NDArray[np.float64], burst: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """(target, limit, prefix, starts) for ``nodes`` lists of ``steps`` shards each."""
    prefix = np.concatenate([[0.0], np.cumsum(sizes)])
    starts = np.arange(nodes, dtype=np.int64) * steps
    need = np.arange(steps) // burst * burst + 1
    ahead = rng.integers(0, 40, steps)
    release = np.maximum.accumulate(np.minimum(need + ahead, steps))
    target = starts[None, :] + np.minimum(need, steps)[:, None]
    limit = starts[None, :] + np.maximum(release, np.minimum(need, steps))[:, None]
    return target, limit, prefix, starts


@pytest.mark.parametrize("rounding", [False, True])
@pytest.mark.parametrize("burst", [1, 3, 50])
@pytest.mark.parametrize("rate", [0.5e6, 9e6, 40e6, 1e9])
def test_made_up_lists(rounding: bool, burst: int, rate: float) -> None:
    rng = np.random.default_rng(burst)
    steps, nodes = 600, 3
    sizes = rng.integers(0, 3 * MB, nodes * steps).astype(np.float64)
    sizes[rng.random(len(sizes)) < 0.2] = 0.0  # empty shards: ties in the prefix
    target, limit, prefix, starts = _lists(rng, steps, nodes, sizes, burst)
    _assert_same((target, limit, prefix, starts, 0.1, rate, rounding))


def test_no_compute_time() -> None:
    rng = np.random.default_rng(7)
    sizes = np.full(2 * 300, 4.0 * MB)
    target, limit, prefix, starts = _lists(rng, 300, 2, sizes, 4)
    _assert_same((target, limit, prefix, starts, 0.0, 50e6, False))


def _runs() -> list[SimConfig]:
    def cfg(**kw: Any) -> SimConfig:
        base: dict[str, Any] = {
            "nodes": 2,
            "devices": 4,
            "workers": 2,
            "batch_size": 8,
            "time_per_sample": 0.02,
            "bandwidth": 200 * MB,
            "shuffle": True,
        }
        return SimConfig((SimStream(synth_shards(100_000, 1000, 20 * MB)),), **{**base, **kw})

    return [
        cfg(),
        cfg(bandwidth=5 * MB, mosaic_rounding=True),
        cfg(nodes=3, workers=4, time_per_sample=0.001, predownload=0),
        cfg(epochs=2, max_batches=2000, shuffle=False),
    ]


@pytest.mark.parametrize("config", _runs())
def test_real_runs(config: SimConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Args] = []

    def record(*args: Any) -> Any:
        seen.append(args)  # type: ignore[arg-type]
        return one_rate_steps(*args)

    monkeypatch.setattr(network, "one_rate_steps", record)
    simulate(config)
    assert len(seen) == 1
    _assert_same(seen[0])

"""The calibrated link model: streamx's loader fetches a missing shard alone, then looks ahead.

``SimConfig.shard_bandwidth`` (what ``streamx bench`` measures for one shard fetched alone)
slows the downloads the loader makes one at a time; ``bandwidth`` stays the rate of the
look-ahead over every connection. Without it the model is mosaic's (tests/sim/test_sim_oracle).
"""

from __future__ import annotations

import numpy as np
import pytest

from streamx.sim import SimConfig, SimStream, simulate, synth_shards
from streamx.sim import run as sim_run

MB = 1_000_000


def _config(**kw: object) -> SimConfig:
    # 40 shards of 100 samples of 40 KB: the loader's chunk is 26 samples.
    shards = synth_shards(4000, 100, 4 * MB)
    base: dict[str, object] = {
        "nodes": 1,
        "devices": 1,
        "workers": 1,
        "batch_size": 16,
        "time_per_sample": 0.004,
        "bandwidth": 60 * MB,
    }
    return SimConfig((SimStream(shards),), **{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("shuffle", [True, False])
def test_equal_rates_are_the_one_rate_link(shuffle: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # With one process and the one-shard rate equal to the link's, the two-speed link (and
    # the first chunk's event model) is the one-rate link over the same queues: those of the
    # loader's chunks, which a calibrated run models (mosaic's model has no chunks).
    same = simulate(_config(shuffle=shuffle, shard_bandwidth=60 * MB))
    monkeypatch.setattr(sim_run, "_slow_start", lambda *_: None)
    plain = simulate(_config(shuffle=shuffle, shard_bandwidth=60 * MB))
    np.testing.assert_allclose(same.step_times, plain.step_times, rtol=1e-9)
    np.testing.assert_array_equal(same.step_bytes, plain.step_bytes)


def test_many_processes_fill_the_link() -> None:
    # Eight processes each fetching one shard at 1/4 of the link saturate it: a slower
    # one-shard rate changes nothing after the first round while the processes together
    # still fill the link. In the first round the processes' first chunks share their few
    # shards (each fetched once, at the one-shard rate), so there the cap shows.
    kw = {"nodes": 2, "devices": 4, "workers": 2, "batch_size": 4}
    full = simulate(_config(**kw, shard_bandwidth=60 * MB))
    capped = simulate(_config(**kw, shard_bandwidth=15 * MB))
    first_round = 2  # each worker's first batch
    np.testing.assert_allclose(
        capped.step_times[first_round:], full.step_times[first_round:], rtol=1e-9
    )
    assert capped.step_times[0] > full.step_times[0]


def test_first_shard_comes_alone() -> None:
    cfg = _config(shuffle=False, shard_bandwidth=8 * MB)
    result = simulate(cfg)
    # Nothing is local at the first chunk: its first shard arrives at the one-shard rate.
    assert result.step_times[0] == pytest.approx(cfg.step_compute_time + 4 * MB / (8 * MB))
    assert simulate(_config(shuffle=False)).step_times[0] == pytest.approx(
        cfg.step_compute_time + 4 * MB / (60 * MB)
    )


def test_slower_single_shards_never_speed_up_a_run() -> None:
    totals = [
        simulate(_config(shard_bandwidth=rate * MB)).summary()["total_time"]
        for rate in (60, 30, 8, 2)
    ]
    assert totals == sorted(totals)
    assert totals[-1] > totals[0]
    bytes_ = {
        simulate(_config(shard_bandwidth=r * MB)).summary()["bytes_downloaded"] for r in (60, 2)
    }
    assert len(bytes_) == 1


def test_shard_bandwidth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="shard_bandwidth"):
        _config(shard_bandwidth=0)

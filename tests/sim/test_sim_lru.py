"""LRU eviction under a ``cache_limit`` smaller than the run needs, against mosaic's simulator.

Both evict the least recently used shard to make room and download a shard again when it
is read after its eviction. Where a node has one download queue and every shard a step
reads fits in the cache, the models coincide and every step must agree. They differ on
purpose in one place: mosaic queues a shard for download only when it enters a worker's
predownload window, so a shard evicted after that is read without being downloaded again
(``test_mosaic_reads_shards_it_evicted``); streamx's cache downloads it again, and
neither its look-ahead nor a step evicts a shard that is needed sooner.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streamx.sim import SimConfig, SimStream, load_shards, simulate

MB = 1_000_000


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sim_oracle import write_index

    root = tmp_path_factory.mktemp("lru") / "data"
    write_index(root, [200] * 40, [10 * MB] * 40)
    return root


def _config(root: Path, **kw: object) -> SimConfig:
    base: dict[str, object] = {
        "nodes": 1,
        "devices": 1,
        "workers": 1,
        "time_per_sample": 0.25,
        "bandwidth": 10 * MB,
        "shuffle": True,
    }
    return SimConfig((SimStream(load_shards(str(root))),), **{**base, **kw})  # type: ignore[arg-type]


@pytest.fixture
def missed_by_mosaic() -> Iterator[list[int]]:
    """Counts shards mosaic's steps read without having them (its download queues empty)."""
    pytest.importorskip("sortedcollections")
    pytest.importorskip("simulation")
    import simulation.core.main as mosaic_main

    original = mosaic_main.simulate_shard_downloads
    missed = [0]

    def counting(*args: Any, **kw: Any) -> tuple[str, int]:  # passes mosaic's arguments on
        outcome: tuple[str, int] = original(*args, **kw)
        needed = kw.get("shards_needed")
        if kw.get("current_batch_downloads") and outcome[0] == "empty" and needed:
            missed[0] += len(needed)
        return outcome

    mosaic_main.simulate_shard_downloads = counting
    yield missed
    mosaic_main.simulate_shard_downloads = original


@pytest.mark.parametrize(
    "kw",
    [
        {"batch_size": 4, "predownload": 4, "cache_limit": 60 * MB, "shuffle_algo": "py1s"},
        {"batch_size": 8, "predownload": 32, "cache_limit": 100 * MB, "shuffle_algo": "py2s"},
        {"batch_size": 4, "predownload": 4, "cache_limit": 50 * MB, "shuffle": False, "epochs": 2},
    ],
)
def test_single_queue_matches_mosaic_every_step(
    index: Path, kw: dict[str, object], missed_by_mosaic: list[int]
) -> None:
    from sim_oracle import mosaic_simulate

    cfg = _config(index, **kw)
    ours = simulate(cfg)
    times, downloads, cache = mosaic_simulate(index, cfg)
    assert missed_by_mosaic[0] == 0
    unlimited = simulate(cfg.with_(cache_limit=None))
    assert ours.step_bytes.sum() > unlimited.step_bytes.sum()  # evictions cost downloads
    np.testing.assert_allclose(ours.step_bytes, downloads, rtol=0.01)
    np.testing.assert_allclose(ours.step_times, times, rtol=0.01)
    assert ours.min_cache_limit == cache == unlimited.min_cache_limit


def test_mosaic_reads_shards_it_evicted(index: Path, missed_by_mosaic: list[int]) -> None:
    from sim_oracle import mosaic_simulate

    cfg = _config(index, batch_size=8, predownload=32, cache_limit=100 * MB)
    ours = simulate(cfg)
    _, downloads, _ = mosaic_simulate(index, cfg)
    assert missed_by_mosaic[0] > 0
    # Both re-download a lot; neither count is the other's.
    assert ours.step_bytes.sum() > 10 * 400 * MB
    assert downloads.sum() > 10 * 400 * MB


def test_a_limit_that_holds_the_run_changes_nothing(index: Path) -> None:
    cfg = _config(index, nodes=2, devices=2, workers=2, batch_size=8)
    unlimited = simulate(cfg)
    held = simulate(cfg.with_(cache_limit=unlimited.min_cache_limit))
    np.testing.assert_array_equal(held.step_bytes, unlimited.step_bytes)
    np.testing.assert_array_equal(held.step_times, unlimited.step_times)


def test_unshuffled_epochs_download_again(index: Path) -> None:
    # Five shards' room: by the second epoch the first shards are long evicted.
    cfg = _config(index, batch_size=4, predownload=4, shuffle=False, epochs=2, cache_limit=50 * MB)
    result = simulate(cfg)
    assert result.step_bytes.sum() == 2 * 40 * 10 * MB


def test_smaller_limits_download_more(index: Path) -> None:
    cfg = _config(index, nodes=2, devices=2, workers=2, batch_size=8, epochs=2)
    totals = [
        simulate(cfg.with_(cache_limit=limit * MB)).step_bytes.sum() for limit in (400, 250, 180)
    ]
    assert totals[0] <= totals[1] <= totals[2]
    assert totals[2] > totals[0]


def test_a_step_reading_more_than_the_limit_warns(index: Path) -> None:
    # 32 samples per step read up to 32 shards; 3 shards' room cannot hold them.
    cfg = _config(index, batch_size=32, cache_limit=30 * MB)
    with pytest.warns(UserWarning, match="single steps read"):
        simulate(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(cfg.with_(cache_limit=None))


@pytest.mark.parametrize(
    ("kw", "agree"),
    [
        # py1s / py2s within one epoch read each shard in one stretch: an evicted shard is
        # not read again, so mosaic never reads one it evicted.
        ({"batch_size": 8, "predownload": 16, "shuffle_algo": "py2s", "cache_limit": 200}, True),
        ({"batch_size": 4, "predownload": 8, "shuffle_algo": "py2s", "cache_limit": 80}, True),
        ({"batch_size": 4, "predownload": 16, "shuffle_algo": "py1s", "cache_limit": 170}, True),
        # py1e and py1br spread a shard's samples over the epoch; a second epoch reads every
        # shard again. Each limit holds a step's shards and more, as the old condition asked.
        ({"batch_size": 16, "predownload": 16, "shuffle_algo": "py1br", "cache_limit": 300}, False),
        ({"batch_size": 8, "predownload": 8, "shuffle_algo": "py1e", "cache_limit": 230}, False),
        (
            {
                "batch_size": 4,
                "predownload": 8,
                "shuffle_algo": "py1s",
                "cache_limit": 80,
                "epochs": 2,
            },
            False,
        ),
    ],
)
def test_eviction_parity_holds_exactly_when_mosaic_reads_no_shard_it_evicted(
    index: Path, kw: dict[str, object], agree: bool, missed_by_mosaic: list[int]
) -> None:
    from sim_oracle import mosaic_simulate

    limit = int(kw["cache_limit"]) * MB  # type: ignore[call-overload]
    cfg = _config(index, **{**kw, "cache_limit": None}, time_per_sample=0.5, mosaic_rounding=True)
    # The link models agree without a limit; only eviction can make them differ.
    times, downloads, _ = mosaic_simulate(index, cfg)
    free = simulate(cfg)
    np.testing.assert_allclose(free.step_times, times, rtol=0.01)
    np.testing.assert_allclose(free.step_bytes, downloads, rtol=0.01)
    cfg = cfg.with_(cache_limit=limit)
    missed_by_mosaic[0] = 0
    times, downloads, _ = mosaic_simulate(index, cfg)
    ours = simulate(cfg)
    assert ours.step_bytes.sum() > free.step_bytes.sum()  # the limit evicts
    same = np.allclose(ours.step_bytes, downloads, rtol=0.01) and np.allclose(
        ours.step_times, times, rtol=0.01
    )
    assert same == agree
    assert (missed_by_mosaic[0] == 0) == agree

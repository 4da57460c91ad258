"""A pass looks at whether a store throttles (which doubles the shards it fetches past its
window) once per ``PACE_LOOK_S`` and whenever its window moves, not at every chunk: a pace
that starts or lifts in the middle of a pass still changes the windows it declares.

The dataset is a real one copied into a cache from a local remote; the windows are read off
the calls the pass makes to its own shard cache."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import streamx
from streamx.dataset.cache_windows import PACE_LOOK_S
from streamx.storage import throttle
from streamx.storage.request_pace import any_paced, pace_for

SAMPLES = 400
PER_SHARD = 71  # the writer's size limit below gives shards of 71 samples


@pytest.fixture(autouse=True)
def calm_hosts() -> Iterator[None]:
    throttle.forget_hosts()
    yield
    throttle.forget_hosts()


def _dataset(tmp_path: Path) -> streamx.StreamingDataset:
    with streamx.MDSWriter(
        out=str(tmp_path / "remote"), columns={"i": "int"}, size_limit=1 << 10
    ) as writer:
        for i in range(SAMPLES):
            writer.write({"i": i})
    ds = streamx.StreamingDataset(
        remote=str(tmp_path / "remote"),
        local=str(tmp_path / "cache"),
        batch_size=4,
        predownload=4,
        shuffle=False,
    )
    assert [shard.samples for shard in ds.shards][:2] == [PER_SHARD, PER_SHARD]
    return ds


def _declared(ds: streamx.StreamingDataset) -> list[list[int]]:
    """The look-ahead of every window the pass declares from now on (the shard cache does
    its work as before)."""
    cache = ds._shard_cache
    assert cache is not None
    declare = cache.set_window
    seen: list[list[int]] = []

    def recording(
        reading: Sequence[int], ahead: Sequence[int] = (), *, same: bool = False
    ) -> list[int] | None:
        seen.append(list(ahead))
        return declare(reading, ahead, same=same)

    cache.set_window = recording  # type: ignore[method-assign]
    return seen


@dataclass
class _Pass:
    """A dataset at the start of a pass, with the ids it will read and the windows it
    declares."""

    ds: streamx.StreamingDataset
    declared: list[list[int]]
    ids: NDArray[np.int64]


@pytest.fixture
def a_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _Pass:
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "1")
    ds = _dataset(tmp_path)
    return _Pass(ds, _declared(ds), np.arange(len(ds), dtype=np.int64))


def _throttle(host: str) -> None:
    pace = pace_for(host)
    assert pace.throttled(pace.take())  # what a 503 does
    assert any_paced()


def test_a_pace_that_starts_and_lifts_mid_pass_is_seen_within_the_bound(a_pass: _Pass) -> None:
    ds, declared, ids = a_pass.ds, a_pass.declared, a_pass.ids
    ds._prepare_ahead(ids, 0, 4)
    assert declared[-1] == [0, 1]  # shard 0, and one more
    _throttle("throttled.invalid")
    # Still inside shard 0's window: once the last look is older than the bound, the next
    # chunk looks again and fetches twice as many shards ahead.
    time.sleep(PACE_LOOK_S)
    ds._prepare_ahead(ids, 4, 8)
    assert declared[-1] == [0, 1, 2]
    throttle.forget_hosts()  # the pace lifts
    assert not any_paced()
    time.sleep(PACE_LOOK_S)
    ds._prepare_ahead(ids, 8, 12)
    assert declared[-1] == [0, 1]
    ds._prepare_ahead(ids, len(ids), len(ids))


def test_a_window_that_moves_looks_at_the_pace_at_once(a_pass: _Pass) -> None:
    ds, declared, ids = a_pass.ds, a_pass.declared, a_pass.ids
    ds._prepare_ahead(ids, 0, 4)
    assert declared[-1] == [0, 1]
    _throttle("throttled.invalid")
    # No wait: the chunk's window reaches shard 1, so the pace is looked at now.
    ds._prepare_ahead(ids, PER_SHARD - 2, PER_SHARD + 2)
    assert declared[-1] == [0, 1, 2, 3]
    ds._prepare_ahead(ids, len(ids), len(ids))


def test_the_shards_ahead_setting_is_read_once_per_pass(
    a_pass: _Pass, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changed in the middle of a pass, the setting applies from the next pass on."""
    ds, declared, ids = a_pass.ds, a_pass.declared, a_pass.ids
    ds._prepare_ahead(ids, 0, 4)
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "2")
    ds._prepare_ahead(ids, PER_SHARD, PER_SHARD + 4)
    assert declared[-1] == [1, 2]
    ds._prepare_ahead(ids, len(ids), len(ids))
    again = np.arange(len(ds), dtype=np.int64)  # the next pass
    ds._prepare_ahead(again, 0, 4)
    assert declared[-1] == [0, 1, 2]
    ds._prepare_ahead(again, len(again), len(again))

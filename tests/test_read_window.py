"""The shard windows a pass declares before each chunk, against a direct computation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from streamx.dataset import read_window
from streamx.dataset.read_window import ShardWindow


def _shards_of(ends: NDArray[np.int64]) -> Callable[[NDArray[np.int64]], NDArray[np.int64]]:
    def shards_of(ids: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.searchsorted(ends, ids, side="right").astype(np.int64)

    return shards_of


def _direct(
    shard_at: NDArray[np.int64], start: int, stop: int, end: int, following: int
) -> tuple[list[int], list[int]]:
    """The window computed from every position: the distinct shards of [start, stop) and of
    [start, end), then up to ``following`` other shards among the next ``2 * following + 2``
    runs after the one at end - 1, looked for up to the end of the next block (runs split
    at block edges)."""
    total = len(shard_at)
    stop, end = min(stop, total), min(max(end, stop), total)
    reading: list[int] = list(dict.fromkeys(shard_at[start:stop].tolist()))
    ahead: list[int] = list(dict.fromkeys(shard_at[start:end].tolist()))
    first_block = (end - 1) // read_window._BLOCK
    runs: list[tuple[int, int]] = []  # (first position, shard)
    for block in (first_block, first_block + 1):
        lo, hi = block * read_window._BLOCK, min((block + 1) * read_window._BLOCK, total)
        runs += [
            (p, int(shard_at[p]))
            for p in range(lo, hi)
            if p == lo or shard_at[p] != shard_at[p - 1]
        ]
    later = [shard for first, shard in runs if first > end - 1][: 2 * following + 2]
    current = int(shard_at[end - 1])
    extra = [s for s in dict.fromkeys(later) if s != current and s not in ahead]
    return reading, ahead + extra[:following]


def _orders(total: int, rng: np.random.Generator) -> dict[str, NDArray[np.int64]]:
    blocks = np.arange(total, dtype=np.int64).reshape(-1, total // 8)
    return {
        "sequential": np.arange(total, dtype=np.int64),
        "blocks shuffled": np.concatenate([rng.permutation(b) for b in blocks]),
        "fully shuffled": rng.permutation(total).astype(np.int64),
        "repeated": np.concatenate([np.arange(total // 2), np.arange(total // 2)]).astype(np.int64),
    }


@pytest.mark.parametrize("following", [0, 1, 3])
@pytest.mark.parametrize("block", [5, 64, 1 << 16])
def test_every_window_matches_the_direct_computation(
    block: int, following: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_window, "_BLOCK", block)  # small blocks: runs split at edges
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 40, 30)
    ends = np.cumsum(sizes).astype(np.int64)
    total = int(ends[-1]) // 8 * 8
    for name, ids in _orders(total, rng).items():
        shard_at = np.searchsorted(ends, ids, side="right")
        windows = ShardWindow(ids, _shards_of(ends), following)
        for start in range(0, total, 3):
            for chunk, ahead in ((4, 16), (1, 1), (32, 200)):
                got = windows.window(start, start + chunk, start + chunk + ahead)
                end = start + chunk + ahead
                reading, later = _direct(shard_at, start, start + chunk, end, following)
                assert (got.reading, got.ahead) == (reading, later), (name, start, chunk)


def test_a_window_within_the_same_runs_is_reported_as_the_same() -> None:
    ends = np.array([100, 200, 300], dtype=np.int64)
    windows = ShardWindow(np.arange(300, dtype=np.int64), _shards_of(ends))
    first = windows.window(0, 4, 20)
    assert (first.reading, first.ahead, first.same) == ([0], [0, 1], False)
    again = windows.window(4, 8, 24)  # still inside shard 0, look-ahead too
    assert (again.reading, again.ahead, again.same) == ([0], [0, 1], True)
    crossing = windows.window(90, 94, 110)  # the look-ahead enters shard 1
    assert (crossing.reading, crossing.ahead, crossing.same) == ([0], [0, 1, 2], False)
    last = windows.window(296, 300, 316)  # nothing after the last shard
    assert (last.reading, last.ahead) == ([2], [2])


def test_several_following_shards_are_declared_in_reading_order() -> None:
    ends = np.array([100, 200, 300, 400, 500, 600], dtype=np.int64)
    ids = np.concatenate([np.arange(600)[::-1][:100], np.arange(500)]).astype(np.int64)
    windows = ShardWindow(ids, _shards_of(ends), 3)
    # Shard 5 read backwards, then shards 0, 1, 2 follow it (3, 4 wait for later windows).
    assert windows.window(0, 4, 20).ahead == [5, 0, 1, 2]
    # Once the look-ahead reaches shard 0, the three after it.
    assert windows.window(90, 94, 110).ahead == [5, 0, 1, 2, 3]
    assert ShardWindow(ids, _shards_of(ends), 0).window(0, 4, 20).ahead == [5]


def test_an_empty_window_declares_nothing() -> None:
    ends = np.array([10, 20], dtype=np.int64)
    windows = ShardWindow(np.arange(20, dtype=np.int64), _shards_of(ends))
    windows.window(0, 4, 8)
    empty = windows.window(20, 20, 20)  # the release at the end of a pass
    assert (empty.reading, empty.ahead, empty.same) == ([], [], False)
    assert windows.window(0, 4, 8).same is False  # after a release, nothing is assumed


def test_the_next_shard_is_looked_for_one_block_ahead_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_window, "_BLOCK", 10)
    ends = np.array([1, 2], dtype=np.int64)
    # Shard 0 read 55 times in a row (an upsampled one-sample stream), then shard 1.
    ids = np.array([0] * 55 + [1], dtype=np.int64)
    asked: list[int] = []

    def shards_of(values: NDArray[np.int64]) -> NDArray[np.int64]:
        asked.append(len(values))
        return np.searchsorted(ends, values, side="right").astype(np.int64)

    windows = ShardWindow(ids, shards_of)
    assert windows.window(0, 2, 4).ahead == [0]  # shard 1 is 5 blocks away: not looked for
    assert len(asked) <= 2  # the first block and the one after it, not the whole epoch
    assert windows.window(44, 46, 48).ahead == [0, 1]  # within the next block: taken

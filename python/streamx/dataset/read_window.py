"""Which shards a pass reads now and which it reads next, from the positions of its ids.

A pass asks before every chunk. Recomputing the shards of the whole look-ahead each time
cost about as much as decoding a batch, so the shard of every position is computed once per
block of positions and kept as runs (a run: consecutive positions in one shard). A window
is then a handful of runs, and a window whose runs did not change is reported as such, so
that the shard cache can skip work it already did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["ShardWindow", "Window"]

# Positions whose shards are computed at a time: a long epoch is not walked up front.
_BLOCK = 1 << 16


@dataclass(frozen=True)
class _Runs:
    """One block's runs: where each starts (a global position) and its shard."""

    starts: NDArray[np.int64]
    shards: NDArray[np.int64]


@dataclass(frozen=True)
class Window:
    """The shards of a window, each list most urgent first.

    ``reading`` holds the shards of the positions read now, ``ahead`` those of the look-ahead
    followed by the next few other shards after it, and ``same`` is true when the runs
    covered are exactly those of the previous window.
    """

    reading: list[int]
    ahead: list[int]
    same: bool


class ShardWindow:
    """The shard windows of one pass over ``ids`` (global sample ids, in reading order).

    ``following`` is how many other shards after the look-ahead each window adds: a
    predownload of a few batches rarely leaves the shard being read, and one shard in
    flight leaves most connections idle while it is read. A call may ask for another
    number (more while a store throttles); a window is the previous one only if asked with
    the same.
    """

    def __init__(
        self,
        ids: NDArray[np.int64],
        shards_of: Callable[[NDArray[np.int64]], NDArray[np.int64]],
        following: int = 1,
    ) -> None:
        self.ids = ids
        self.shards_ahead = following  # the pass's own number, read once as it began
        self._shards_of = shards_of
        self._following = following
        self._blocks: dict[int, _Runs] = {}
        self._same: Window | None = None  # the last window, as a repeat (made as it moves)
        self._spans: tuple[tuple[int, int], ...] = ()
        self._keep = 4

    def window(self, start: int, stop: int, end: int, following: int | None = None) -> Window:
        """The shards of positions ``[start, stop)`` (read now) and ``[start, end)``
        (through the look-ahead), plus the next ``following`` shards after ``end`` (the
        pass's own number unless given)."""
        if following is not None and following != self._following:
            self._following, self._same = following, None
        total = len(self.ids)
        stop, end = min(stop, total), min(max(end, stop), total)
        if start >= stop:
            self._same, self._spans = None, ()
            return Window([], [], same=False)
        if self._same is not None and self._inside(start, stop - 1, end - 1):
            return self._same
        # Every block a window spans stays, plus the one its next shard may come from.
        self._keep = max(4, (end - start) // _BLOCK + 3)
        key = (self._run_of(start), self._run_of(stop - 1), self._run_of(end - 1))
        reading = self._distinct(key[0], key[1])
        ahead = self._distinct(key[0], key[2])
        if self._following:
            ahead += [s for s in self._next_shards(key[2]) if s not in ahead][: self._following]
        self._same = Window(reading, ahead, same=True)
        self._spans = tuple(self._span(run) for run in key)
        return Window(reading, ahead, same=False)

    def _inside(self, first: int, last: int, end: int) -> bool:
        """Whether each position lies in the matching run of the last window (the common
        case, checked without a search; at every chunk, so without a generator)."""
        (lo0, hi0), (lo1, hi1), (lo2, hi2) = self._spans
        return lo0 <= first < hi0 and lo1 <= last < hi1 and lo2 <= end < hi2

    def _span(self, run: tuple[int, int]) -> tuple[int, int]:
        """The positions ``[first, last + 1)`` of a run (within its block)."""
        block, index = run
        starts = self._runs(block).starts
        end = int(starts[index + 1]) if index + 1 < len(starts) else (block + 1) * _BLOCK
        return int(starts[index]), end

    def _runs(self, block: int) -> _Runs:
        runs = self._blocks.get(block)
        if runs is None:
            begin = block * _BLOCK
            shard_at = self._shards_of(self.ids[begin : begin + _BLOCK])
            heads = np.flatnonzero(np.concatenate(([True], shard_at[1:] != shard_at[:-1])))
            runs = _Runs(starts=heads.astype(np.int64) + begin, shards=shard_at[heads])
            if len(self._blocks) >= self._keep:  # a pass moves forward: old blocks go first
                self._blocks.pop(min(self._blocks))
            self._blocks[block] = runs
        return runs

    def _run_of(self, position: int) -> tuple[int, int]:
        """(block, index of the run within it) of a position."""
        block = position // _BLOCK
        starts = self._runs(block).starts
        return block, int(np.searchsorted(starts, position, side="right")) - 1

    def _distinct(self, first: tuple[int, int], last: tuple[int, int]) -> list[int]:
        """The distinct shards of the runs ``first`` through ``last``, in order."""
        parts = []
        for block in range(first[0], last[0] + 1):
            shards = self._runs(block).shards
            lo = first[1] if block == first[0] else 0
            hi = last[1] + 1 if block == last[0] else len(shards)
            parts.append(shards[lo:hi])
        values = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return list(dict.fromkeys(values.tolist()))

    def _next_shards(self, run: tuple[int, int]) -> list[int]:
        """The first distinct shards after ``run`` other than its own, among those that
        start within the next block: a shard read over and over (a small stream upsampled)
        must not send every window on a walk of the epoch."""
        current = int(self._runs(run[0]).shards[run[1]])
        # A run is never followed by its own shard, so this many runs hold enough distinct
        # ones unless shards repeat (shuffled or upsampled): then fewer are looked ahead.
        wanted = 2 * self._following + 2
        parts = [self._runs(run[0]).shards[run[1] + 1 : run[1] + 1 + wanted]]
        if len(parts[0]) < wanted and (run[0] + 1) * _BLOCK < len(self.ids):
            parts.append(self._runs(run[0] + 1).shards[: wanted - len(parts[0])])
        later = np.concatenate(parts).tolist()
        return [s for s in dict.fromkeys(later) if s != current]

"""The run under a ``cache_limit`` too small for it: LRU eviction and re-downloads.

Each node's cache holds shards up to the limit (raw bytes, as streamx's ledger counts
them). As in streamx's cache:

* a step's shards are marked used when it reads them; a download is the most recent use;
* making room evicts the least recently used shard, except the shards the current step
  reads (pinned while read) and, for a look-ahead download, those needed no later than
  it (the look-ahead stamps its window as recently used, and is cut where it would not
  fit);
* an evicted shard that is read again is downloaded again, when its next use comes into
  the predownload window.

A step's needed downloads may go over the limit when nothing can be evicted (streamx then
retries and fails; the simulator counts the overflow instead). Downloads are taken in
order of need, as in the unlimited model, so with a limit that never evicts both agree.
The event loop runs in Python, step by step: slower than the vectorised path, which
``simulate`` keeps for runs whose limit is never reached.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from streamx.sim.network import LinkTrace
from streamx.sim.schedule import ShardOf, release_rows, step_rows

__all__ = ["NodeUses", "node_uses", "run_lru"]


@dataclass(frozen=True)
class NodeUses:
    """Every (shard, step) read by one node over the run, sorted by shard then step.

    Attributes:
        shard: Shard ids.
        step: Global step reading it.
        release: Global step from which that read's shard may be prefetched.
        by_step: Per step, the distinct shards it reads (for marking them used).
    """

    shard: NDArray[np.int64]
    step: NDArray[np.int64]
    release: NDArray[np.int64]
    by_step: list[NDArray[np.int64]]


def node_uses(
    epochs: list[tuple[NDArray[np.int64], int, int]],
    shard_of: ShardOf,
    predownload: int,
) -> NodeUses:
    """The reads of one node, from each epoch's ``(node_ids, steps, first_step)``."""
    shards, steps, releases, by_step = [], [], [], []
    for node_ids, count, start in epochs:
        rows = step_rows(node_ids)[:count]
        rel = release_rows(node_ids.shape, predownload)[:count]  # type: ignore[arg-type]
        valid = rows >= 0
        shard = shard_of(rows[valid]).astype(np.int64)
        step = np.broadcast_to(np.arange(count, dtype=np.int64)[:, None], rows.shape)[valid]
        shards.append(shard)
        steps.append(step + start)
        releases.append(np.minimum(rel[valid], step) + start)
        per_row = valid.sum(axis=1).cumsum()[:-1]
        by_step += [np.unique(s) for s in np.split(shard, per_row)]
    shard, step, release = (np.concatenate(a) for a in (shards, steps, releases))
    order = np.lexsort((release, step, shard))
    shard, step, release = shard[order], step[order], release[order]
    head = np.ones(len(shard), bool)
    head[1:] = (shard[1:] != shard[:-1]) | (step[1:] != step[:-1])
    # Sorted by release within a (shard, step): the first row holds its earliest release.
    return NodeUses(shard[head], step[head], release[head], by_step)


@dataclass
class _Node:
    """One node's cache and link while the run goes step by step."""

    uses: NodeUses
    sizes: NDArray[np.int64]
    raw: NDArray[np.int64]
    limit: int
    lru: OrderedDict[int, None] = field(default_factory=OrderedDict)
    usage: int = 0
    peak: int = 0
    pending: list[tuple[int, int, int]] = field(default_factory=list)
    progress: dict[int, float] = field(default_factory=dict)
    evictions: int = 0
    fetched: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        starts = np.flatnonzero(np.r_[True, self.uses.shard[1:] != self.uses.shard[:-1]])
        for i in starts.tolist():
            self._queue(i, 0)
        self._ends = np.searchsorted(self.uses.shard, np.arange(len(self.sizes)), side="right")

    def _queue(self, use: int, now: int) -> None:
        u = self.uses
        heapq.heappush(
            self.pending, (int(u.step[use]), max(int(u.release[use]), now), int(u.shard[use]))
        )

    def _next_use(self, shard: int, after: int) -> int:
        """Index of ``shard``'s first read after step ``after`` (past its end if none)."""
        u = self.uses
        start = int(np.searchsorted(u.shard, shard))
        return start + int(np.searchsorted(u.step[start : self._ends[shard]], after, "right"))

    def touch(self, step: int) -> None:
        """Marks the shards ``step`` reads as used now."""
        for shard in self.uses.by_step[step].tolist():
            if shard in self.lru:
                self.lru.move_to_end(shard)

    def _room(self, shard: int, now: int, keep_until: int) -> bool:
        """Evicts least recently used shards not read by step ``keep_until`` until ``shard``
        fits; False (nothing evicted) when it cannot."""
        need = self.usage + int(self.raw[shard]) - self.limit
        victims = []
        for held in self.lru:
            if need <= 0:
                break
            use = self._next_use(held, now - 1)
            if use < self._ends[held] and self.uses.step[use] <= keep_until:
                continue
            victims.append((held, use))
            need -= int(self.raw[held])
        if need > 0:
            return False
        for held, use in victims:
            del self.lru[held]
            self.usage -= int(self.raw[held])
            self.evictions += 1
            if use < self._ends[held]:
                self._queue(use, now)
        return True

    def _start(self, shard: int) -> None:
        """Reserves the shard's space as its download starts (as the ledger does)."""
        self.progress[shard] = 0.0
        self.usage += int(self.raw[shard])
        self.peak = max(self.peak, self.usage)

    def _finish(self, shard: int) -> int:
        del self.progress[shard]
        self.lru[shard] = None
        self.fetched.append(shard)
        return int(self.sizes[shard])

    def stall(self, step: int, bandwidth: float) -> tuple[float, int]:
        """(seconds, bytes) to download what ``step`` reads and the node lacks."""
        seconds, got = 0.0, 0
        while self.pending and self.pending[0][0] <= step:
            _, _, shard = heapq.heappop(self.pending)
            if shard not in self.progress:
                self._room(shard, step, step)  # may fail: then the limit is exceeded
                self._start(shard)
            seconds += (int(self.sizes[shard]) - self.progress[shard]) / bandwidth
            got += self._finish(shard)
        return seconds, got

    def prefetch(self, step: int, budget: float) -> int:
        """Bytes completed downloading released shards with ``budget`` bytes of link."""
        got = 0
        while self.pending and self.pending[0][1] <= step and budget > 0:
            need, _, shard = self.pending[0]
            if shard not in self.progress:
                if not self._room(shard, step, need):
                    break  # the look-ahead stops where it no longer fits
                self._start(shard)
            left = int(self.sizes[shard]) - self.progress[shard]
            if left > budget:
                self.progress[shard] += budget
                break
            budget -= left
            heapq.heappop(self.pending)
            got += self._finish(shard)
        return got


def run_lru(
    uses: list[NodeUses],
    sizes: NDArray[np.int64],
    raw: NDArray[np.int64],
    steps: int,
    compute_time: float,
    bandwidth: float,
    limit: int,
    rounding: bool = False,
) -> tuple[LinkTrace, int, int, NDArray[np.int64]]:
    """Runs every node's cache and link over ``steps`` steps under ``limit`` bytes.

    Returns:
        The trace (``done_step`` is empty), the most bytes a node held, evictions, and the
        shard of every download completed (all nodes).
    """
    nodes = [_Node(u, sizes, raw, limit) for u in uses]
    step_times = np.empty(steps)
    step_bytes = np.zeros(steps, np.int64)
    stall = np.empty((steps, len(nodes)))
    for s in range(steps):
        for n, node in enumerate(nodes):
            node.touch(s)
            stall[s, n], got = node.stall(s, bandwidth)
            if rounding:
                stall[s, n] = np.floor(stall[s, n])
            step_bytes[s] += got
        slowest = stall[s].max()
        step_times[s] = compute_time + slowest
        for n, node in enumerate(nodes):
            step_bytes[s] += node.prefetch(s, (compute_time + slowest - stall[s, n]) * bandwidth)
    trace = LinkTrace(step_times, step_bytes, stall, np.zeros(0, np.int64))
    fetched = np.array([s for n in nodes for s in n.fetched], np.int64)
    return trace, max(n.peak for n in nodes), sum(n.evictions for n in nodes), fetched

"""The step-by-step timing model: each node's link works through its download list.

Per step and node, as in mosaic's simulator:

1. *Stall*: the node downloads, in list order, until every shard the step needs is local.
   The step takes its compute time plus the slowest node's stall; devices wait for each
   other at every step.
2. *Prefetch*: for the rest of the step the link keeps downloading released shards. A
   shard that does not finish carries its progress into the next step; bytes count in the
   step that completes the shard.

With a calibrated ``shard_bandwidth`` the link has two speeds, as streamx's loader has: a
process whose chunk's first shard is missing fetches the chunk's missing shards (each at
most ``shard_bandwidth``: its ranged parts over a few connections) before it looks ahead;
once they are present, the look-ahead runs on every connection (``bandwidth``). With
``k`` shards a chunk reads on average, a step whose first shard is not yet local runs its
node's link at ``min(bandwidth, processes * k * shard_bandwidth)``, every worker of every
device fetching its own chunk; but the step itself waits for its shards at
``min(bandwidth, devices * k * shard_bandwidth)``, the rate of the one worker per device
that reads it. The link keeps going while it waits: the other workers' shards further down
the list arrive meanwhile, so the first batch of a run with ``W`` workers
takes about as long as with one, and the next ``W - 1`` come soon after.

A worker yields nothing of a chunk before all of its shards are local, so a step needs the
shards of every chunk it starts (:mod:`~streamx.sim.schedule`). The run's first round of
steps (each worker's first batch) waits as :mod:`~streamx.sim.first_chunks` finds: every
worker fetching all its first chunk's shards at once over the node's link, a shard two
workers share fetched once.

Each node's lists are concatenated into one array with a running byte prefix ``P``, so a
step is a handful of vectorised operations over the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streamx.sim.link_steps import one_rate_steps
from streamx.sim.schedule import NO_CHECK, NodeQueue

__all__ = ["LinkTrace", "SlowStart", "run_links"]


@dataclass(frozen=True)
class LinkTrace:
    """What the links did.

    Attributes:
        step_times: Seconds each step took.
        step_bytes: Bytes all nodes completed downloading during each step.
        stall: Seconds each node waited on downloads, per (step, node).
        done_step: For each queue entry (concatenated over nodes), the step it completed in.
        ahead_end: Per (step, node), where the look-ahead's share of the concatenated list
            ended (its bytes below it were handed to the look-ahead, the others fetched
            alone); ``None`` when every download is the look-ahead's (one rate).
    """

    step_times: NDArray[np.float64]
    step_bytes: NDArray[np.int64]
    stall: NDArray[np.float64]
    done_step: NDArray[np.int64]
    ahead_end: NDArray[np.float64] | None = None


def _per_step(
    queues: Sequence[NodeQueue], offsets: NDArray[np.int64], steps: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(stall target, prefetch end) per (step, node), as global indices into the lists."""
    target = np.empty((steps, len(queues)), np.int64)
    limit = np.empty((steps, len(queues)), np.int64)
    step_ids = np.arange(steps)
    for n, queue in enumerate(queues):
        # The list is sorted by need: a step must reach the end of its own need group.
        target[:, n] = offsets[n] + np.searchsorted(queue.need, step_ids, side="right")
        released = np.maximum.accumulate(queue.release) if len(queue.release) else queue.release
        limit[:, n] = offsets[n] + np.searchsorted(released, step_ids, side="right")
    return target, limit


@dataclass(frozen=True)
class SlowStart:
    """The loader's slow start: a chunk's missing shards before the look-ahead (see the
    module note).

    Attributes:
        first: Per (step, node), :attr:`Checks.first <streamx.sim.schedule.Checks.first>`:
            the node-list index of the download bringing the first shard of a chunk that
            starts in the step, -1 when held, ``NO_CHECK`` when no chunk starts.
        horizon: Per (step, node), the step reading those chunks' last samples.
        before: Per (step, node), the node-list index of the first download the loader
            makes after the check (-1 when no chunk starts).
        bandwidth: Bytes per second of a node's link for what the look-ahead has not taken.
        step_bandwidth: Bytes per second at which a step's own missing shards arrive outside
            the look-ahead (its readers' rate; at most ``bandwidth``).
        ready: Per (step, node) of the run's first steps, the link seconds at which the
            step's readers have their first chunks (:mod:`~streamx.sim.first_chunks`);
            those steps wait for that instead of for their share of the list at
            ``step_bandwidth``. ``None``: every step waits for the list.
        ahead_seconds: Seconds a download the look-ahead starts (one released before the
            step that needs it) takes to land, from the start of the step that released it:
            a step needing it waits at least until then; the first window's start once the
            first chunk is in (``ready``'s first step), as the loader's look-ahead does.
    """

    first: NDArray[np.int64]
    horizon: NDArray[np.int64]
    before: NDArray[np.int64]
    bandwidth: float
    step_bandwidth: float
    ready: NDArray[np.float64] | None = None
    ahead_seconds: float = 0.0


def run_links(
    queues: Sequence[NodeQueue],
    sizes: NDArray[np.int64],
    steps: int,
    compute_time: float,
    bandwidth: float,
    slow: SlowStart | None = None,
    rounding: bool = False,
) -> LinkTrace:
    """Runs every node's link over ``steps`` steps.

    Args:
        queues: Each node's downloads over the whole run, in order.
        sizes: Download bytes of every shard.
        steps: Steps in the run.
        compute_time: Seconds a step takes when nothing stalls it.
        bandwidth: Bytes per second of each node's link.
        slow: The loader's slow start, when calibrated; ``None`` runs every download at
            ``bandwidth`` (mosaic's model).
        rounding: Drop each node's wait to whole seconds, as mosaic's simulator does.
    """
    lengths = np.array([len(q.shards) for q in queues], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.concatenate([sizes[q.shards] for q in queues]).astype(np.float64)
    prefix = np.concatenate([[0.0], np.cumsum(flat)])
    exact = np.concatenate([[0], np.cumsum(flat.astype(np.int64))])  # bytes, not float
    target, limit = _per_step(queues, offsets, steps)
    pos = offsets[:-1].copy()
    progress = np.zeros(len(queues))
    step_times = np.empty(steps)
    stall = np.empty((steps, len(queues)))
    pos_after = np.empty((steps, len(queues)), np.int64)
    ahead_end = None
    # Bytes of the list below ``fast_end`` were handed to the look-ahead: they move at
    # ``bandwidth``; later ones at the slow rate until a step's first shard is local.
    fast_end = np.full(len(queues), np.inf)
    slow_rate = step_rate = bandwidth
    first = None
    if slow is not None:
        fast_end[:] = 0.0
        slow_rate = slow.bandwidth
        step_rate = min(slow.step_bandwidth, slow_rate)
        held = (slow.first >= 0) & (slow.first != NO_CHECK)
        first = np.where(held, slow.first + offsets[:-1], slow.first)
        horizon = np.maximum(slow.horizon, 0)
        before = np.where(slow.before >= 0, slow.before + offsets[:-1], -1)
        nodes = np.arange(len(queues))
        first_in = slow.ready[0] if slow.ready is not None and len(slow.ready) else None
        landing = _Landing(queues, offsets, steps, slow.ahead_seconds, first_in)
    if slow is None:
        step_times, stall, pos_after = one_rate_steps(
            target, limit, prefix, offsets[:-1], compute_time, bandwidth, rounding
        )
    else:
        assert first is not None  # set with ``slow`` above
        ahead_end = np.empty((steps, len(queues)))
        for s in range(steps):
            behind = target[s] > pos
            at = prefix[pos] + progress
            # The shards read before the step's earliest chunk start come first; then the
            # check: a chunk whose first shard is local (or already with the look-ahead)
            # hands its window to the look-ahead.
            split = np.maximum(np.minimum(before[s], target[s]), pos)
            head = np.maximum(prefix[split], at)
            # ``wait``: until the step's shards are local (at its readers' rate);
            # ``busy``: the link's share of that (at every worker's rate), after which it
            # carries on down the list while the step still waits.
            wait = _seconds(at, head, fast_end, bandwidth, step_rate)
            busy = _seconds(at, head, fast_end, bandwidth, slow_rate)
            at = head
            checked = first[s] != NO_CHECK
            fetching = prefix[np.where(checked, first[s], 0)] < fast_end
            ahead = checked & ((first[s] < split) | fetching)
            h = horizon[s]
            window = prefix[np.maximum(limit[h, nodes], target[h, nodes])]
            fast_end = np.where(ahead, np.maximum(fast_end, window), fast_end)
            ahead_end[s] = fast_end
            stop = np.maximum(prefix[target[s]], at)
            wait = np.where(behind, wait + _seconds(at, stop, fast_end, bandwidth, step_rate), 0)
            busy = np.where(behind, busy + _seconds(at, stop, fast_end, bandwidth, slow_rate), 0)
            if slow.ready is not None and s < len(slow.ready):
                # The first round: the readers' own first chunks, fetched alongside the
                # other workers' (which bring the shards they share).
                wait = np.maximum(slow.ready[s] - step_times[:s].sum(), 0.0)
                busy = np.minimum(busy, wait)
                behind = behind | (wait > 0)
            wait = landing.waits(s, target[s], wait)
            pos = np.maximum(pos, target[s])
            progress = np.where(behind, 0.0, progress)
            if rounding:
                wait = np.floor(wait)
                busy = np.minimum(busy, wait)
            slowest = wait.max()
            step_times[s] = compute_time + slowest
            landing.clock[s + 1] = landing.clock[s] + step_times[s]
            stall[s] = wait
            # Prefetch: the link's remaining time this step, plus what the head shard has.
            spare = compute_time + slowest - busy
            reach = _reach(prefix[pos] + progress, spare, fast_end, bandwidth, slow_rate)
            end = np.maximum(limit[s], pos)
            new_pos = np.minimum(np.searchsorted(prefix, reach, side="right") - 1, end)
            new_pos = np.maximum(new_pos, pos)
            progress = np.where(new_pos < end, reach - prefix[new_pos], 0.0)
            pos = new_pos
            pos_after[s] = pos
    # Bytes completed by the end of each step, all nodes together, then per step.
    held = exact[pos_after].sum(axis=1) if steps else np.zeros(0, np.int64)
    step_bytes = np.diff(held, prepend=exact[offsets[:-1]].sum()).astype(np.int64)
    done = np.concatenate(
        [
            np.searchsorted(pos_after[:, n], np.arange(offsets[n], offsets[n + 1]), side="right")
            for n in range(len(queues))
        ]
    )
    return LinkTrace(step_times, step_bytes, stall, done.astype(np.int64), ahead_end)


class _Landing:
    """When the look-ahead's downloads land: each one released before the step that needs
    it starts at its release step and takes ``seconds`` (its few large parts at the
    connection's rate), however fast the link moves the bytes; the ones released at their
    need are the readers' own, split over many connections (``step_bandwidth``). The
    loader starts its look-ahead once a pass's first chunk is in: the downloads released at
    the first step start at ``first_in`` (per node), not at once."""

    def __init__(
        self,
        queues: Sequence[NodeQueue],
        offsets: NDArray[np.int64],
        steps: int,
        seconds: float,
        first_in: NDArray[np.float64] | None = None,
    ) -> None:
        self.seconds = seconds
        self.first_in = np.zeros(len(queues)) if first_in is None else first_in
        self.clock = np.zeros(steps + 1)  # link seconds at the start of each step
        release = np.concatenate([q.release for q in queues]) if len(queues) else np.zeros(0)
        need = np.concatenate([q.need for q in queues]) if len(queues) else np.zeros(0)
        self.release = release.astype(np.int64)
        self.ahead = release < need
        self.checked = offsets[:-1].copy()

    def waits(
        self, step: int, target: NDArray[np.int64], wait: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """``wait`` raised, node by node, to when the look-ahead's downloads ``step`` needs
        first (the list up to ``target``) land."""
        if self.seconds <= 0:
            return wait
        now = self.clock[step]
        out = wait
        for n, (lo, hi) in enumerate(zip(self.checked.tolist(), target.tolist())):
            if hi <= lo:
                continue
            ahead = self.ahead[lo:hi]
            if ahead.any():
                released = np.clip(self.release[lo:hi][ahead], 0, step)
                started = self.clock[released].max()
                if released.min() == 0:  # the first window: once the first chunk is in
                    started = max(started, float(self.first_in[n]))
                late = started + self.seconds - now
                if late > out[n]:
                    out = out.copy() if out is wait else out
                    out[n] = late
        self.checked = np.maximum(self.checked, target)
        return out


def _seconds(
    start: NDArray[np.float64],
    stop: NDArray[np.float64],
    fast_end: NDArray[np.float64],
    fast: float,
    slow: float,
) -> NDArray[np.float64]:
    """Seconds to move the list's bytes ``[start, stop)``: at ``fast`` below ``fast_end``."""
    quick = np.clip(np.minimum(stop, fast_end) - start, 0.0, None)
    return quick / fast + (stop - start - quick) / slow


def _reach(
    start: NDArray[np.float64],
    seconds: NDArray[np.float64],
    fast_end: NDArray[np.float64],
    fast: float,
    slow: float,
) -> NDArray[np.float64]:
    """The list byte reached from ``start`` after ``seconds``, fast below ``fast_end``."""
    room = np.clip(fast_end - start, 0.0, None)
    quick: NDArray[np.float64] = np.minimum(seconds * fast, room)
    return start + quick + (seconds - quick / fast) * slow

"""The one-rate link (mosaic's model) stepped with Python scalars, quiet stretches at once.

The same arithmetic as :func:`streamx.sim.network.run_links` without a slow start, one
node at a time: per step a handful of float operations and one bisection per node,
which for the few nodes of a run is several times cheaper than numpy calls on arrays
of that length.

Most steps of a run whose link keeps ahead are *quiet*: no node waits, and every node
ends the step with its look-ahead done (its position at the release limit, nothing
partly downloaded). From such a state the next steps stay quiet as long as each node's
needed shards are in and its link covers the newly released bytes within the step;
both checks are the scalar loop's own comparisons on the same floats, so a stretch of
quiet steps is found and filled with a few numpy calls over many steps, and the scalar
loop resumes at the first step that is not quiet. The outputs are bit for bit those of
stepping every step (``skip_quiet=False``).

The loop keeps its state in flat lists of floats and ints, so a run allocates few
Python containers (each one counts towards a garbage collection of the whole heap).
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np
from numpy.typing import NDArray

__all__ = ["one_rate_steps"]

# Steps checked at once for a quiet stretch at first; doubled while whole windows are quiet.
_WINDOW = 32
_MAX_WINDOW = 1 << 16
# Steps the scalar loop runs before looking again after a look found (almost) nothing.
_MAX_BACKOFF = 64


def _quiet_steps(
    target: NDArray[np.int64],
    limit: NDArray[np.int64],
    prefix: NDArray[np.float64],
    pos: list[int],
    covered: float,
) -> tuple[int, NDArray[np.int64]]:
    """(k, positions): the first ``k`` rows of ``target``/``limit`` are quiet steps from
    positions ``pos`` with nothing in progress, and each node's position after each.

    A quiet step waits for nothing (``target <= position``) and its prefetch reaches the
    end of what is released (``prefix[position] + covered >= prefix[end]``, ``end`` the
    larger of the release limit and the position): exactly the scalar loop's conditions
    for a step that leaves every node at ``end`` with no progress.
    """
    start = np.asarray(pos, np.int64)
    after = np.maximum(np.maximum.accumulate(limit, axis=0), start)
    before = np.concatenate([start[None, :], after[:-1]])
    quiet = ((target <= before) & (prefix[before] + covered >= prefix[after])).all(axis=1)
    k = len(quiet) if quiet.all() else int(np.argmin(quiet))
    return k, after


def one_rate_steps(
    target: NDArray[np.int64],
    limit: NDArray[np.int64],
    prefix: NDArray[np.float64],
    starts: NDArray[np.int64],
    compute_time: float,
    bandwidth: float,
    rounding: bool,
    skip_quiet: bool = True,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """(step times, stall per (step, node), list position per (step, node) after it).

    Args:
        target: Per (step, node), the list index the step must reach before it runs.
        limit: Per (step, node), the list index the step's prefetch may reach.
        prefix: Running bytes of the concatenated lists (float).
        starts: Each node's first list index.
        compute_time: Seconds of a step's compute.
        bandwidth: Bytes per second of each node's link.
        rounding: Drop each wait to whole seconds (mosaic's integer array).
        skip_quiet: Fill quiet stretches with numpy (see the module note); ``False`` steps
            every step in Python, with the same results.
    """
    steps, nodes = target.shape
    pre = prefix.tolist()
    # Flat lists of ints: row ``s`` of node ``n`` is item ``s * nodes + n``.
    targets, limits = target.ravel().tolist(), limit.ravel().tolist()
    pos = starts.tolist()
    progress = [0.0] * nodes
    wait = [0.0] * nodes
    # What a quiet step adds: the scalar loop's ``(compute + slowest - wait) * bandwidth``
    # with no wait anywhere, and its step time ``compute + slowest``.
    covered = (compute_time + 0.0 - 0.0) * bandwidth
    quiet_time = compute_time + 0.0
    times = np.empty(steps, np.float64)
    stall = np.zeros((steps, nodes), np.float64)
    after = np.empty((steps, nodes), np.int64)
    # The steps run by the scalar loop, and what it found (written at the end).
    stepped: list[int] = []
    stepped_times: list[float] = []
    stepped_stall: list[float] = []
    stepped_after: list[int] = []
    window, backoff, retry = _WINDOW, 1, 0
    s = 0
    while s < steps:
        if skip_quiet and s >= retry and not any(progress):
            end = min(steps, s + window)
            k, reached = _quiet_steps(target[s:end], limit[s:end], prefix, pos, covered)
            if k:
                times[s : s + k] = quiet_time
                after[s : s + k] = reached[:k]
                pos = reached[k - 1].tolist()
                s += k
            if s == end:
                window = min(2 * window, _MAX_WINDOW)
                continue
            # Step ``s`` is not quiet: look again soon after a long stretch, later after
            # short ones, so runs that are rarely quiet pay little for looking.
            backoff = 1 if k >= 8 else min(2 * backoff, _MAX_BACKOFF)
            window = max(_WINDOW, window // 2) if k < window // 2 else window
            retry = s + backoff
        row = s * nodes
        for n in range(nodes):
            goal = targets[row + n]
            if goal > pos[n]:
                at = pre[pos[n]] + progress[n]
                w = max(pre[goal] - at, 0.0) / bandwidth
                wait[n] = math.floor(w) if rounding else w
                pos[n], progress[n] = goal, 0.0
            else:
                wait[n] = 0.0
        slowest = max(wait)
        stepped.append(s)
        stepped_times.append(compute_time + slowest)
        stepped_stall += wait
        for n in range(nodes):
            # Prefetch for the rest of the step, carrying the head shard's progress.
            here = pos[n]
            reach = pre[here] + progress[n] + (compute_time + slowest - wait[n]) * bandwidth
            end = max(limits[row + n], here)
            new = max(min(bisect_right(pre, reach) - 1, end), here)
            progress[n] = reach - pre[new] if new < end else 0.0
            pos[n] = new
        stepped_after += pos
        s += 1
    if stepped:
        times[stepped] = stepped_times
        stall[stepped] = np.asarray(stepped_stall, np.float64).reshape(len(stepped), nodes)
        after[stepped] = np.asarray(stepped_after, np.int64).reshape(len(stepped), nodes)
    return times, stall, after

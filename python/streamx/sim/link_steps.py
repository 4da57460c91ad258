"""The one-rate link (mosaic's model) stepped with Python scalars.

The same arithmetic as :func:`streamx.sim.network.run_links` without a slow start, one
node at a time: per step a handful of float operations and one bisection per node,
which for the few nodes of a run is several times cheaper than numpy calls on arrays
of that length.
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np
from numpy.typing import NDArray

__all__ = ["one_rate_steps"]


def one_rate_steps(
    target: NDArray[np.int64],
    limit: NDArray[np.int64],
    prefix: NDArray[np.float64],
    starts: NDArray[np.int64],
    compute_time: float,
    bandwidth: float,
    rounding: bool,
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
    """
    steps, nodes = target.shape
    pre = prefix.tolist()
    targets, limits = target.tolist(), limit.tolist()
    pos = starts.tolist()
    progress = [0.0] * nodes
    wait = [0.0] * nodes
    times = [0.0] * steps
    stall = [[0.0] * nodes for _ in range(steps)]
    after = [[0] * nodes for _ in range(steps)]
    for s in range(steps):
        row_target, row_limit = targets[s], limits[s]
        for n in range(nodes):
            goal = row_target[n]
            if goal > pos[n]:
                at = pre[pos[n]] + progress[n]
                w = max(pre[goal] - at, 0.0) / bandwidth
                wait[n] = math.floor(w) if rounding else w
                pos[n], progress[n] = goal, 0.0
            else:
                wait[n] = 0.0
        slowest = max(wait)
        times[s] = compute_time + slowest
        stall[s] = list(wait)
        for n in range(nodes):
            # Prefetch for the rest of the step, carrying the head shard's progress.
            here = pos[n]
            reach = pre[here] + progress[n] + (compute_time + slowest - wait[n]) * bandwidth
            end = max(row_limit[n], here)
            new = max(min(bisect_right(pre, reach) - 1, end), here)
            progress[n] = reach - pre[new] if new < end else 0.0
            pos[n] = new
        after[s] = list(pos)
    return (
        np.asarray(times, np.float64),
        np.asarray(stall, np.float64).reshape(steps, nodes),
        np.asarray(after, np.int64).reshape(steps, nodes),
    )

"""The step-by-step timing model: each node's link works through its download list.

Per step and node, as in mosaic's simulator:

1. *Stall*: the node downloads, in list order, until every shard the step needs is local.
   The step takes its compute time plus the slowest node's stall; devices wait for each
   other at every step.
2. *Prefetch*: for the rest of the step the link keeps downloading released shards. A
   shard that does not finish carries its progress into the next step; bytes count in the
   step that completes the shard.

Each node's lists are concatenated into one array with a running byte prefix ``P``, so a
step is a handful of vectorised operations over the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streamx.sim.schedule import NodeQueue

__all__ = ["LinkTrace", "run_links"]


@dataclass(frozen=True)
class LinkTrace:
    """What the links did.

    Attributes:
        step_times: Seconds each step took.
        step_bytes: Bytes all nodes completed downloading during each step.
        stall: Seconds each node waited on downloads, per (step, node).
        done_step: For each queue entry (concatenated over nodes), the step it completed in.
    """

    step_times: NDArray[np.float64]
    step_bytes: NDArray[np.int64]
    stall: NDArray[np.float64]
    done_step: NDArray[np.int64]


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


def run_links(
    queues: Sequence[NodeQueue],
    sizes: NDArray[np.int64],
    steps: int,
    compute_time: float,
    bandwidth: float,
) -> LinkTrace:
    """Runs every node's link over ``steps`` steps.

    Args:
        queues: Each node's downloads over the whole run, in order.
        sizes: Download bytes of every shard.
        steps: Steps in the run.
        compute_time: Seconds a step takes when nothing stalls it.
        bandwidth: Bytes per second of each node's link.
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
    step_bytes = np.empty(steps, np.int64)
    stall = np.empty((steps, len(queues)))
    pos_after = np.empty((steps, len(queues)), np.int64)
    for s in range(steps):
        start_pos = pos
        behind = target[s] > pos
        wait = np.where(behind, (prefix[target[s]] - prefix[pos] - progress) / bandwidth, 0.0)
        pos = np.maximum(pos, target[s])
        progress = np.where(behind, 0.0, progress)
        slowest = wait.max()
        step_times[s] = compute_time + slowest
        stall[s] = wait
        # Prefetch: the link's remaining time this step, plus what the head shard has.
        reach = prefix[pos] + progress + (compute_time + slowest - wait) * bandwidth
        end = np.maximum(limit[s], pos)
        new_pos = np.minimum(np.searchsorted(prefix, reach, side="right") - 1, end)
        new_pos = np.maximum(new_pos, pos)
        progress = np.where(new_pos < end, reach - prefix[new_pos], 0.0)
        pos = new_pos
        pos_after[s] = pos
        step_bytes[s] = exact[pos].sum() - exact[start_pos].sum()
    done = np.concatenate(
        [
            np.searchsorted(pos_after[:, n], np.arange(offsets[n], offsets[n + 1]), side="right")
            for n in range(len(queues))
        ]
    )
    return LinkTrace(step_times, step_bytes, stall, done.astype(np.int64))

"""Per-step counts of a schedule of held points, segment by segment: a resume anywhere costs
O(points before it), not O(steps before it).

Between two points of an ``interpolate="step"`` schedule each stream's quota ``q`` (in units
of ``1 / QUANTA`` sample per step) is fixed, and the rounding carry starts from zero (it
restarts at every point: :mod:`streamx.mixture.counts`). Step by step, the carry rule then
keeps each stream's total after ``t`` steps of the segment at the largest-remainder rounding
of ``t * q / QUANTA`` (the totals summing to ``t * batch``; ties to the lower stream), and a
step's counts are the increments. That holds while every stream with a quota has at least a
sample's worth per step (``q >= QUANTA``): a stream's due is then never negative, and the
clamp at 0 (where the carry rule departs from the rounding) never acts. A segment with a
smaller quota is counted step by step from its own start, as :class:`StepCounts` counts.

10^10 samples in global batches of 1,024 are about 10^7 steps: counted step by step, a
resume near the end took tens of seconds and a gigabyte; by segment, microseconds.

A state's fingerprint describes the segments before its resume step (their bounds and
quotas), which fix the counts there.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right

import numpy as np
from numpy.typing import NDArray

from streamx.mixture.counts import QUANTA, apportion, quotas

__all__ = ["SegmentCounts"]


def _rounded_totals(quota: list[int], batch: int, steps: int) -> list[int]:
    """Each stream's samples in the first ``steps`` steps of a segment of ``quota``: the
    largest-remainder rounding of ``steps * quota / QUANTA`` to a sum of ``steps * batch``."""
    due = [steps * q for q in quota]
    totals = [d // QUANTA for d in due]
    rest = steps * batch - sum(totals)
    active = [i for i, q in enumerate(quota) if q > 0]
    for i in sorted(active, key=lambda i: (-(due[i] % QUANTA), i))[:rest]:
        totals[i] += 1
    return totals


class _StepByStep:
    """A segment's running totals counted one step at a time, kept as far as asked."""

    def __init__(self, quota: list[int], batch: int) -> None:
        self.quota, self.batch = quota, batch
        self._carry = [0] * len(quota)
        self._totals = np.zeros((1, len(quota)), np.int64)  # row t: totals after t steps
        self._n = 0

    def totals(self, steps: int) -> list[int]:
        if steps > self._n:
            if steps >= len(self._totals):  # double the storage: amortised O(1) per step
                grow = max(steps + 1, 2 * len(self._totals))
                self._totals = np.resize(self._totals, (grow, len(self.quota)))
            for t in range(self._n, steps):
                counts, self._carry = apportion(self.quota, self._carry, self.batch)
                self._totals[t + 1] = self._totals[t] + counts
            self._n = steps
        row: list[int] = self._totals[steps].tolist()
        return row


class SegmentCounts:
    """The counts of ``names`` (in order) at each step of a schedule of held ``points``
    (``MixtureSchedule.held_points``), in global batches of ``batch``."""

    def __init__(
        self, points: list[tuple[int, dict[str, float]]], names: list[str], batch: int
    ) -> None:
        self.names, self.batch = names, batch
        self.starts = [step for step, _ in points]
        self.quotas = [quotas([w.get(n, 0.0) for n in names], batch) for _, w in points]
        self._step_by_step: dict[int, _StepByStep] = {}
        # Totals before segment j (filled as far as asked).
        self._before_segment: list[list[int]] = [[0] * len(names)]

    def _totals_in(self, segment: int, steps: int) -> list[int]:
        quota = self.quotas[segment]
        if all(q == 0 or q >= QUANTA for q in quota):
            return _rounded_totals(quota, self.batch, steps)
        counter = self._step_by_step.get(segment)
        if counter is None:
            counter = self._step_by_step[segment] = _StepByStep(quota, self.batch)
        return counter.totals(steps)

    def _before(self, segment: int) -> list[int]:
        while len(self._before_segment) <= segment:
            j = len(self._before_segment) - 1
            whole = self._totals_in(j, self.starts[j + 1] - self.starts[j])
            self._before_segment.append([a + b for a, b in zip(self._before_segment[j], whole)])
        return self._before_segment[segment]

    def before(self, step: int) -> NDArray[np.int64]:
        """Samples of each stream in the steps before ``step``."""
        segment = bisect_right(self.starts, step) - 1
        inside = self._totals_in(segment, step - self.starts[segment])
        return np.array([a + b for a, b in zip(self._before(segment), inside)], np.int64)

    def counts(self, step: int) -> NDArray[np.int64]:
        """Samples of each stream in ``step``."""
        segment = bisect_right(self.starts, step) - 1
        t = step - self.starts[segment]
        after, now = self._totals_in(segment, t + 1), self._totals_in(segment, t)
        return np.array([a - b for a, b in zip(after, now)], np.int64)

    def fingerprint(self, steps: int) -> str:
        """A fingerprint of the counts of the first ``steps`` steps: the segments there
        (bounds, clipped at ``steps``, and quotas), which fix them."""
        parts = [f"batch={self.batch}"]
        for j, start in enumerate(self.starts):
            if start >= steps:
                break
            end = min(self.starts[j + 1], steps) if j + 1 < len(self.starts) else steps
            parts.append(f"{start}-{end}:{','.join(map(str, self.quotas[j]))}")
        return hashlib.blake2b(";".join(parts).encode(), digest_size=16).hexdigest()

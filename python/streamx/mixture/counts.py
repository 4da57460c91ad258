"""Per-step sample counts of each stream, from the schedule's weights, in exact integers.

Each step's weights become integer quotas in units of ``1 / QUANTA`` of a sample (largest
remainder, so they sum to exactly ``batch * QUANTA``); from then on everything is integer
arithmetic, identical on every machine. A stream's count at a step is its quota plus the
error carried from earlier steps, rounded by largest remainder so the counts sum to the
batch; what rounding left over is carried on. From one point to the next, the carry keeps
each stream's running total within a sample of its share (independent rounding per step
would favour one stream forever when ``weight * batch`` has the same fraction every
step). A stream of weight 0 gets 0
samples and carries nothing; the carry restarts at the schedule's points and when the set
of weighted streams changes, so that a point's weights hold from its step exactly.

The counts are computed in step order and kept (one row of ints per step visited), with
the per-stream prefix sums, so a position's stream cursor is a lookup.
"""

from __future__ import annotations

import hashlib

import numpy as np
from numpy.typing import NDArray

from streamx.mixture.schedule import MixtureSchedule

__all__ = ["QUANTA", "StepCounts", "apportion", "quotas"]

QUANTA = 1 << 20  # quota units per sample: weights resolve to about 1e-6 of a sample
_BLOCK = 1024  # steps computed (and storage grown) at once


def _distribute(
    values: list[int], key: list[int], eligible: list[int], amount: int, step_of: int
) -> None:
    """Adds ``step_of`` (+1 or -1) to ``values`` ``amount`` times, over ``eligible`` ordered
    by ``key`` descending (ties: lower index), wrapping round when ``amount`` is larger."""
    order = sorted(eligible, key=lambda i: (-key[i], i))
    while amount > 0 and order:
        for i in order:
            if amount == 0:
                break
            if step_of < 0 and values[i] == 0:
                continue
            values[i] += step_of
            amount -= 1
        order = [i for i in order if step_of > 0 or values[i] > 0]


def quotas(weights: list[float], batch: int) -> list[int]:
    """Integer quotas (units of ``1 / QUANTA`` sample) of normalised ``weights``, summing to
    ``batch * QUANTA``; a weight of 0 gets 0."""
    total = batch * QUANTA
    raw = [w * total for w in weights]
    out = [int(r) for r in raw]  # floor: raw >= 0
    frac = [int((r - o) * QUANTA) for r, o in zip(raw, out)]
    active = [i for i, w in enumerate(weights) if w > 0]
    rest = total - sum(out)
    if rest >= 0:
        _distribute(out, frac, active, rest, +1)
    else:  # float rounding overshot: take from the smallest fractions
        _distribute(out, [-f for f in frac], active, -rest, -1)
    return out


def apportion(quota: list[int], carry: list[int], batch: int) -> tuple[list[int], list[int]]:
    """This step's counts (summing to ``batch``, 0 where the quota is 0) and the carry on."""
    due = [c + q if q > 0 else 0 for c, q in zip(carry, quota)]
    counts = [max(0, d // QUANTA) for d in due]
    left = [d - n * QUANTA for d, n in zip(due, counts)]
    active = [i for i, q in enumerate(quota) if q > 0]
    rest = batch - sum(counts)
    if rest >= 0:
        _distribute(counts, left, active, rest, +1)
    else:
        _distribute(counts, [-x for x in left], active, -rest, -1)
    return counts, [d - n * QUANTA if q > 0 else 0 for d, n, q in zip(due, counts, quota)]


class StepCounts:
    """The counts of ``names`` (in order) at each step under ``schedule``, computed lazily
    in step order and kept, with the per-stream samples before each step."""

    def __init__(self, schedule: MixtureSchedule, names: list[str], batch: int, limit: int) -> None:
        self.schedule = schedule
        self.limit = limit  # steps in the run: the schedule is never asked beyond them
        self.names = names
        self.batch = batch
        k = len(names)
        self._n = 0  # steps computed
        self._counts = np.zeros((_BLOCK, k), np.int64)  # rows below _n hold counts
        self._before = np.zeros((_BLOCK + 1, k), np.int64)  # row s: samples before step s
        self._chain = [b""]  # chain[b]: the fingerprint of the first b blocks of counts
        self._carry = [0] * k
        self._active: tuple[bool, ...] = ()
        self._memo: tuple[tuple[float, ...], list[int]] | None = None

    def _weights(self, step: int) -> list[float]:
        weights = self.schedule.weights(step)
        unknown = sorted(set(weights) - set(self.names))
        if any(weights[n] > 0 for n in unknown):
            raise ValueError(
                f"schedule: the weights at step {step} name {unknown}, which are not among "
                f"the sources {self.names}"
            )
        return [weights.get(n, 0.0) for n in self.names]

    def _quota(self, weights: list[float]) -> list[int]:
        key = tuple(weights)
        if self._memo is None or self._memo[0] != key:
            self._memo = (key, quotas(weights, self.batch))
        return self._memo[1]

    def _block(self, first: int, end: int, needed: int) -> list[list[int]]:
        """The counts of steps ``first`` to ``end`` (fewer when a step at or past ``needed``
        has bad weights: it raises when it is asked for)."""
        rows: list[list[int]] = []
        step = first
        while step < end:
            try:
                quota = self._quota(self._weights(step))
            except (ValueError, TypeError):
                if step < needed:
                    raise
                break
            active = tuple(q > 0 for q in quota)
            if active != self._active or self.schedule.restarts(step):
                self._carry = [0] * len(quota)
                self._active = active
            carried = any(self._carry)
            counts, self._carry = apportion(quota, self._carry, self.batch)
            held = 1
            if not carried and not any(self._carry):
                # Nothing carried in or out: a fixed point, the same counts until a change.
                held = min(end, self.schedule.held_until(step)) - step
            rows.extend([counts] * held)
            step += held
        return rows

    def _extend(self, steps: int) -> None:
        """Computes every step below ``steps`` (and on to the end of its block)."""
        while self._n < steps:
            # One block at a time, and within the run unless a step past it is asked for.
            end = min((self._n // _BLOCK + 1) * _BLOCK, max(steps, self.limit))
            rows = self._block(self._n, end, steps)
            if not rows:
                return
            block = np.array(rows, np.int64)
            n, m = self._n, len(rows)
            if n + m > len(self._counts):  # double the storage: amortised O(1) per step
                grow = max(n + m, 2 * len(self._counts))
                self._counts = np.resize(self._counts, (grow, len(self.names)))
                self._before = np.resize(self._before, (grow + 1, len(self.names)))
            self._counts[n : n + m] = block
            self._before[n + 1 : n + m + 1] = self._before[n] + np.cumsum(block, axis=0)
            self._n = n + m

    def counts(self, step: int) -> NDArray[np.int64]:
        """Samples of each stream in ``step``."""
        self._extend(step + 1)
        row: NDArray[np.int64] = self._counts[step]
        return row

    def before(self, step: int) -> NDArray[np.int64]:
        """Samples of each stream in the steps before ``step``."""
        self._extend(step)
        row: NDArray[np.int64] = self._before[step]
        return row

    def _hash(self, prefix: bytes, first: int, end: int) -> bytes:
        rows = np.ascontiguousarray(self._counts[first:end], dtype="<i8").tobytes()
        return hashlib.blake2b(prefix + rows, digest_size=16).digest()

    def digest(self, steps: int) -> str:
        """A fingerprint of the counts of the first ``steps`` steps: chained per block, so
        a state taken every step costs O(block), not O(steps)."""
        self._extend(steps)
        while len(self._chain) <= steps // _BLOCK:
            b = len(self._chain) - 1
            self._chain.append(self._hash(self._chain[b], b * _BLOCK, (b + 1) * _BLOCK))
        b = steps // _BLOCK
        return self._hash(self._chain[b], b * _BLOCK, steps).hex()

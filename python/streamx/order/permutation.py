"""A seeded permutation of ``range(n)`` evaluated one index at a time, in O(1) memory.

A source of a billion samples cannot afford a materialised permutation per epoch; a
Feistel network over the smallest even bit width that holds ``n`` is a bijection of that
power of two, and walking the cycle (applying it again while the value is ``>= n``) makes
it a bijection of ``range(n)``. Each walk step lands below ``n`` with probability over 1/4,
so an index costs a few network evaluations. The round function is splitmix64's finaliser
keyed per round; the keys come from the caller's key only (the seed, the epoch, and the
mixture's source or the packed order's tag).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["Permutation", "mix64"]

_M64 = (1 << 64) - 1
_ROUNDS = 6


def _mix64_many(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """:func:`mix64` of each element; unsigned array arithmetic wraps mod 2**64 as the
    masks do there."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def mix64(x: int) -> int:
    """splitmix64: a 64-bit integer hash (bijective, well mixed)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


class Permutation:
    """A bijection of ``range(n)`` fixed by ``key`` (any tuple of non-negative ints)."""

    def __init__(self, n: int, key: tuple[int, ...]) -> None:
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        self.n = n
        self.key = key
        bits = max(2, (n - 1).bit_length())
        self._half = (bits + 1) // 2
        self._mask = (1 << self._half) - 1
        seed = 0
        for part in key:
            seed = mix64(seed ^ (part & _M64))
        self._keys = [mix64(seed + r) for r in range(_ROUNDS)]

    def _network(self, x: int) -> int:
        half, mask = self._half, self._mask
        left, right = x >> half, x & mask
        for k in self._keys:
            left, right = right, left ^ (mix64(right ^ k) & mask)
        return (left << half) | right

    def _network_many(self, x: NDArray[np.uint64]) -> NDArray[np.uint64]:
        half, mask = np.uint64(self._half), np.uint64(self._mask)
        left, right = x >> half, x & mask
        for k in self._keys:
            left, right = right, left ^ (_mix64_many(right ^ np.uint64(k)) & mask)
        return (left << half) | right

    def many(self, indices: NDArray[np.int64]) -> NDArray[np.int64]:
        """``[self(i) for i in indices]`` as one array: a window of a billion-document
        order costs a few vector passes, not a Python call per index."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.n):
            bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
            raise IndexError(f"index {bad} out of range(0, {self.n})")
        x = self._network_many(idx.astype(np.uint64))
        walking = np.flatnonzero(x >= np.uint64(self.n))
        while walking.size:  # cycle walking, only for the values still outside range(n)
            x[walking] = self._network_many(x[walking])
            walking = walking[x[walking] >= np.uint64(self.n)]
        return x.astype(np.int64)

    def __call__(self, i: int) -> int:
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range(0, {self.n})")
        x = self._network(i)
        while x >= self.n:
            x = self._network(x)
        return x

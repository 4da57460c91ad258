"""The keyed permutation of the mixture's sources and the packed documents: a bijection of
``range(n)`` for any ``n`` (cycle walking over a Feistel network), fixed by its key and
different for another key, one index at a time or a window of them at once."""

from __future__ import annotations

import numpy as np
import pytest

from streamx.order.permutation import Permutation


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 4097])
def test_bijection(n: int) -> None:
    perm = Permutation(n, (7, 0, 3))
    assert sorted(perm(i) for i in range(n)) == list(range(n))
    assert [perm(i) for i in range(n)] == [Permutation(n, (7, 0, 3))(i) for i in range(n)]
    if n >= 64:
        other = Permutation(n, (7, 0, 4))
        assert [perm(i) for i in range(n)] != [other(i) for i in range(n)]
        # Not the identity, nor close to it.
        assert sum(perm(i) == i for i in range(n)) < n // 8


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="n must be at least 1"):
        Permutation(0, (1,))
    with pytest.raises(IndexError, match="out of range"):
        Permutation(5, (1,))(5)


@pytest.mark.parametrize("n", [1, 3, 1000, 4097, 10**10])
def test_many_equals_one_at_a_time(n: int) -> None:
    perm = Permutation(n, (11, 2, 5))
    rng = np.random.default_rng(n)
    indices = np.unique(rng.integers(0, n, size=min(n, 3000), dtype=np.int64))
    got = perm.many(indices)
    assert got.dtype == np.int64
    assert got.tolist() == [perm(int(i)) for i in indices]
    assert perm.many(np.arange(0, dtype=np.int64)).tolist() == []
    with pytest.raises(IndexError, match="out of range"):
        perm.many(np.array([0, n], dtype=np.int64))
    with pytest.raises(IndexError, match="out of range"):
        perm.many(np.array([-1], dtype=np.int64))

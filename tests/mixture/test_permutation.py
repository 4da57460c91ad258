"""The per-source permutation: a bijection of ``range(n)`` for any ``n`` (cycle walking over a
Feistel network), fixed by its key and different for another key."""

from __future__ import annotations

import pytest

from streamx.mixture.permutation import Permutation


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

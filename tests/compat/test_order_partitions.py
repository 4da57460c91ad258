"""``get_partitions`` parity with mosaicml-streaming 0.13.0: ``orig`` and ``relaxed``, with
``drop_first`` and ``initial_physical_nodes``, over sample counts and world shapes.

Cases are drawn from fixed-seed generators so every run checks the same configurations; the
``slow`` marker adds larger sizes and more draws.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from order_helpers import assert_same_outcome, capture, emit

from streamx import _core

streaming = pytest.importorskip("streaming")
from streaming.base.partition import get_partitions as mosaic_partitions  # noqa: E402

pytestmark = pytest.mark.compat


def _ours_partitions(*args: Any) -> Any:
    ids, messages = _core.get_partitions(*args)
    emit(messages)
    return ids


def _check_partitions(*args: Any) -> None:
    theirs = capture(lambda: mosaic_partitions(*args))
    ours = capture(lambda: _ours_partitions(*args))
    assert_same_outcome(theirs, ours, f"get_partitions{args}")


def _partition_cases(seed: int, count: int, sizes: list[int]) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        n = rng.choice(sizes)
        pn = rng.choice([1, 2, 3, 4, 6, 8])
        ncn = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, pn, 2 * pn])
        rpn, wpr, bs = (
            rng.choice([1, 2, 3, 8]),
            rng.choice([1, 2, 3, 4]),
            rng.choice([1, 2, 3, 7, 32]),
        )
        drop = rng.choice([0, 0, rng.randrange(n + 1), n, n + pn * rpn, 3 * n + 1000])
        ipn = rng.choice([None, None, 1, 2, 3, 4, 8])
        algo = rng.choice(["orig", "relaxed"])
        cases.append((algo, n, ncn, pn, rpn, wpr, bs, drop, ipn))
    return cases


SMALL_NS = [1, 2, 3, 5, 7, 10, 16, 17, 64, 100, 101, 999, 1000, 1234, 4096]


@pytest.mark.parametrize("chunk", range(6))
def test_get_partitions_sweep(chunk: int) -> None:
    for case in _partition_cases(chunk, 250, SMALL_NS):
        _check_partitions(*case)


@pytest.mark.parametrize(
    "case",
    [
        ("orig", 10, 2, 1, 2, 2, 2, 0, None),
        ("orig", 10, 2, 1, 2, 2, 2, 4, None),
        ("orig", 10, 4, 2, 1, 1, 1, 0, None),
        ("relaxed", 12, 2, 3, 1, 1, 2, 0, 2),
        ("relaxed", 12, 2, 3, 1, 1, 2, 6, 2),
        ("relaxed", 100, 4, 3, 2, 2, 4, 0, 4),
        ("relaxed", 100, 4, 3, 2, 2, 5, 0, 4),  # G not divisible by the initial devices
        ("orig", 100, 4, 3, 2, 2, 4, 0, None),  # neither node count divides the other
        ("orig", 5, 8, 2, 1, 1, 1, 0, None),  # fewer samples than canonical nodes
        ("orig", 8, 8, 16, 1, 1, 1, 0, None),  # N == ncn < pn
        ("orig", 10, 2, 2, 1, 1, 1, 3, None),  # drop_first not a multiple of pn
        ("orig", 10, 2, 2, 1, 1, 1, 12, None),  # resume exactly past the padded end
        ("orig", 10, 2, 2, 1, 1, 1, 13, None),  # resume further than the dataset
        ("relaxed", 1000, 3, 2, 4, 3, 7, 500, 3),
    ],
    ids=str,
)
def test_get_partitions_edges(case: tuple[Any, ...]) -> None:
    _check_partitions(*case)


def test_get_partitions_spec_vectors() -> None:
    ids, _ = _core.get_partitions("orig", 10, 2, 1, 2, 2, 2)
    assert ids.tolist() == [
        [[[[0, 1], [4, -1]], [[2, 3], [-1, -1]]], [[[5, 6], [9, -1]], [[7, 8], [-1, -1]]]]
    ]
    ids, _ = _core.get_partitions("relaxed", 12, 2, 3, 1, 1, 2, 0, 2)
    assert ids.reshape(3, -1).tolist() == [[0, 1, 3, 4], [2, 6, 5, 9], [7, 8, 10, 11]]


@pytest.mark.parametrize("n", [10**5, 123_457])
def test_get_partitions_medium(n: int) -> None:
    for case in _partition_cases(n, 6, [n]):
        _check_partitions(*case)


@pytest.mark.slow
@pytest.mark.parametrize("n", [10**6, 999_983])
def test_get_partitions_million(n: int) -> None:
    for case in _partition_cases(n, 12, [n]):
        _check_partitions(*case)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(6, 30))
def test_get_partitions_sweep_more(chunk: int) -> None:
    sizes = [*SMALL_NS, *random.Random(chunk).sample(range(1, 50_000), 10)]
    for case in _partition_cases(chunk, 300, sizes):
        _check_partitions(*case)

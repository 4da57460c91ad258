"""``get_shuffle`` parity with mosaicml-streaming 0.13.0, for every algorithm over shard
lists with uneven and empty shards: identical permutations, the same exception class in the
same cases, and the same ``UserWarning`` messages.

Cases are drawn from fixed-seed generators so every run checks the same configurations; the
``slow`` marker adds larger sizes and more draws.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest
from order_cases import ALGOS, SEEDS
from order_helpers import assert_same_outcome, capture, emit

from streamx import _core

streaming = pytest.importorskip("streaming")
from streaming.base.shuffle import get_shuffle as mosaic_shuffle  # noqa: E402

pytestmark = pytest.mark.compat

# Shard size lists: even, uneven, tiny, and with empty (0-sample) shards anywhere.
SHARD_LISTS: dict[str, list[int]] = {
    "one": [1],
    "single": [37],
    "spec": [3, 5, 4, 6],
    "even": [10] * 12,
    "uneven": [100, 3, 57, 1, 250, 18],
    "empty_mid": [7, 0, 0, 9, 4],
    "empty_ends": [0, 5, 0, 3, 0],
    "ones": [1] * 9,
    "big_last": [4, 4, 4, 500],
    "random40": random.Random(3).choices(range(0, 90), k=40),
}


def _ours_shuffle(algo: str, sizes: list[int], ncn: int, seed: int, epoch: int, block: int) -> Any:
    perm, messages = _core.get_shuffle(algo, sizes, ncn, seed, epoch, block)
    emit(messages)
    return perm


def _check_shuffle(
    algo: str, sizes: list[int], ncn: int, seed: int, epoch: int, block: int
) -> None:
    theirs = capture(
        lambda: mosaic_shuffle(algo, np.array(sizes, np.int64), ncn, seed, epoch, block)
    )
    ours = capture(lambda: _ours_shuffle(algo, sizes, ncn, seed, epoch, block))
    assert_same_outcome(theirs, ours, f"{algo} {sizes} ncn={ncn} seed={seed} e={epoch} b={block}")


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("shards", sorted(SHARD_LISTS))
def test_get_shuffle(algo: str, shards: str) -> None:
    sizes = SHARD_LISTS[shards]
    rng = random.Random(f"{algo}-{shards}")
    combos = list(itertools.product((1, 2, 3, 4, 8, 16), SEEDS, range(4), (2, 5, 16, 100, 1 << 18)))
    for ncn, seed, epoch, block in rng.sample(combos, 60):
        _check_shuffle(algo, sizes, ncn, seed, epoch, block)


def test_get_shuffle_spec_vectors() -> None:
    """COMPAT-SPEC §4.6's verified outputs, through both libraries."""
    for algo in ALGOS:
        for epoch in range(4):
            _check_shuffle(algo, [3, 5, 4, 6], 2, 42, epoch, 8)
    perm, _ = _core.get_shuffle("py1e", [3, 5, 4, 6], 2, 42, 1, 8)
    assert perm.tolist() == [15, 14, 17, 10, 12, 9, 8, 13, 16, 3, 7, 2, 6, 5, 11, 1, 4, 0]


@pytest.mark.parametrize("algo", ["py1e", "py1br"])
def test_small_block_warning(algo: str) -> None:
    """py1e warns when a block is smaller than a shard; both libraries agree on when."""
    for block in (4, 8, 16, 64, 1000):
        _check_shuffle(algo, [30, 5, 12, 40], 2, 7, 0, block)
    theirs = capture(lambda: mosaic_shuffle("py1e", np.array([30, 40]), 1, 0, 0, 8))
    assert theirs.warnings, "the oracle is expected to warn here"


def test_py1b_is_rejected_by_both() -> None:
    theirs = capture(lambda: mosaic_shuffle("py1b", np.array([3, 5]), 1, 0, 0, 8))
    ours = capture(lambda: _ours_shuffle("py1b", [3, 5], 1, 0, 0, 8))
    assert theirs.error is KeyError
    assert ours.error is not None and issubclass(ours.error, ValueError)
    assert "py1b" in ours.message


def test_get_shuffle_errors_match() -> None:
    """Canonical nodes without samples, zero block sizes: raise in both or in neither."""
    for algo in ALGOS:
        for sizes, ncn, block in (
            ([2, 1], 8, 16),
            ([0, 0, 3], 4, 8),
            ([5, 5], 2, 1),
            ([5, 5], 2, 0),
        ):
            _check_shuffle(algo, sizes, ncn, 3, 1, block)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
def test_get_shuffle_large(algo: str) -> None:
    rng = np.random.default_rng(11)
    for num_shards, high, ncn, block in ((500, 400, 8, 10_000), (2_000, 1_000, 64, 1 << 18)):
        sizes = rng.integers(0, high, num_shards).tolist()
        for epoch in range(2):
            _check_shuffle(algo, sizes, ncn, 9176, epoch, block)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_get_shuffle_random_sweep(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        sizes = [rng.choice([0, 1, 2, 7, 10, 33, 100, 512]) for _ in range(rng.randint(1, 25))]
        _check_shuffle(
            rng.choice(ALGOS),
            sizes,
            rng.choice([1, 2, 3, 5, 8, 16]),
            rng.choice(SEEDS),
            rng.randrange(4),
            rng.choice([2, 3, 8, 50, 300, 1 << 18]),
        )

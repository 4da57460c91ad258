"""Whole-epoch parity with mosaicml-streaming 0.13.0: ``generate_work`` for every batching
method over many (nodes, ranks, workers, batch) shapes, stream weightings, sampling options,
seeds, epochs and resume offsets, without launching any process.

Cases are drawn from fixed-seed generators (and hypothesis) so every run checks the same
configurations; the ``slow`` marker adds larger sizes and more draws.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from order_cases import ALGOS, BATCHING, SEEDS, SHAPES, WORK_SPECS, check_work
from order_helpers import OrderSpec

pytest.importorskip("streaming")
pytestmark = pytest.mark.compat


def _work_cases(spec_name: str, method: str, count: int) -> list[tuple[Any, ...]]:
    rng = random.Random(f"{spec_name}/{method}")
    cases = []
    for _ in range(count):
        shape = rng.choice(SHAPES)
        ncn = rng.choice([1, 2, 4, 8, shape[0], 2 * shape[0], 3])
        changes = {
            "batching_method": method,
            "num_canonical_nodes": ncn,
            "shuffle": rng.random() < 0.75,
            "shuffle_algo": rng.choice(ALGOS),
            "seed": rng.choice(SEEDS[:5]),
            "partition_algo": rng.choice(["orig", "relaxed"]),
            "initial_physical_nodes": rng.choice([None, None, 1, 2, shape[0]]),
            "sampling_method": rng.choice(["balanced", "fixed"]),
        }
        at = rng.choice([0, 0, 1, 8, 24, 50, 97])
        cases.append((changes, shape, rng.randrange(4), at))
    return cases


@pytest.mark.parametrize("method", BATCHING)
@pytest.mark.parametrize("spec_name", sorted(WORK_SPECS))
def test_generate_work(spec_name: str, method: str) -> None:
    ok = 0
    for changes, shape, epoch, at in _work_cases(spec_name, method, 24):
        ok += check_work(WORK_SPECS[spec_name].with_(**changes), shape, epoch, at)
    assert ok >= 3, "too few configurations planned without error to be a real check"


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_generate_work_shapes_every_algo(shape: tuple[int, int, int]) -> None:
    """The default spec on each world shape, for every shuffle algorithm and epoch."""
    base = WORK_SPECS["uneven_empty"].with_(num_canonical_nodes=2 * shape[0])
    for algo in ALGOS:
        for epoch in range(4):
            assert check_work(base.with_(shuffle_algo=algo), shape, epoch, 0)


@pytest.mark.parametrize("method", BATCHING)
def test_generate_work_resume_offsets(method: str) -> None:
    spec = WORK_SPECS["mix_prop"].with_(batching_method=method, num_canonical_nodes=2)
    shape = (2, 2, 2)
    for at in (0, 1, 15, 16, 17, 64, 150, 288, 299, 300, 320, 10_000):
        check_work(spec, shape, 1, at)


@pytest.mark.slow
@pytest.mark.parametrize("method", BATCHING)
@pytest.mark.parametrize("spec_name", sorted(WORK_SPECS))
def test_generate_work_more(spec_name: str, method: str) -> None:
    for changes, shape, epoch, at in _work_cases(spec_name + "-slow", method, 150):
        check_work(WORK_SPECS[spec_name].with_(**changes), shape, epoch, at)


@pytest.mark.slow
@pytest.mark.parametrize("n", [10**4, 10**5])
def test_generate_work_large(n: int) -> None:
    sizes = tuple(np.random.default_rng(n).integers(0, 2 * n // 50, 50).tolist())
    spec = OrderSpec(
        shards=(sizes,), batch_size=8, num_canonical_nodes=8, shuffle_block_size=n // 10
    )
    for algo in ALGOS:
        for shape in ((1, 1, 1), (2, 4, 2), (8, 2, 3)):
            assert check_work(spec.with_(shuffle_algo=algo), shape, 1, 0)


weights_st = st.one_of(
    st.none(),
    st.tuples(st.just("proportion"), st.sampled_from([0.2, 0.5, 1.0, 3.0])),
    st.tuples(st.just("repeat"), st.sampled_from([0.3, 1.0, 1.5, 2.25])),
    st.tuples(st.just("choose"), st.integers(1, 150)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shards=st.lists(
        st.lists(st.integers(0, 45), min_size=1, max_size=5).filter(lambda s: sum(s) > 0),
        min_size=1,
        max_size=3,
    ),
    weight=weights_st,
    epoch_size=st.sampled_from([None, None, 60, 250]),
    method=st.sampled_from(BATCHING),
    algo=st.sampled_from(ALGOS),
    shuffle=st.booleans(),
    block=st.sampled_from([5, 20, 100, 1 << 18]),
    shape=st.sampled_from(SHAPES),
    ncn=st.sampled_from([1, 2, 3, 4, 8]),
    batch=st.integers(1, 5),
    partition=st.sampled_from(["orig", "relaxed"]),
    ipn=st.sampled_from([None, 1, 2, 4]),
    sampling=st.sampled_from(["balanced", "fixed"]),
    granularity=st.integers(1, 6),
    seed=st.sampled_from(SEEDS[:5]),
    epoch=st.integers(0, 3),
    at=st.integers(0, 120),
)
def test_generate_work_hypothesis(
    shards: list[list[int]],
    weight: Any,
    epoch_size: int | None,
    method: str,
    algo: str,
    shuffle: bool,
    block: int,
    shape: tuple[int, int, int],
    ncn: int,
    batch: int,
    partition: str,
    ipn: int | None,
    sampling: str,
    granularity: int,
    seed: int,
    epoch: int,
    at: int,
) -> None:
    """Random configurations (one weighting kind for all streams, as upstream requires)."""
    relative = weight is not None and weight[0] == "proportion"
    spec = OrderSpec(
        shards=tuple(tuple(s) for s in shards),
        weights=tuple(weight for _ in shards),
        epoch_size=epoch_size if relative or weight is None else None,
        seed=seed,
        shuffle=shuffle,
        shuffle_algo=algo,
        shuffle_block_size=block,
        num_canonical_nodes=ncn,
        partition_algo=partition,
        batching_method=method,
        batch_size=batch,
        initial_physical_nodes=ipn,
        sampling_method=sampling,
        sampling_granularity=granularity,
    )
    check_work(spec, shape, epoch, at)


@pytest.mark.parametrize(
    "spec",
    [
        OrderSpec(shards=((5, 7), (3,)), weights=(("choose", 0), ("choose", 6))),
        OrderSpec(shards=((5, 7), (3,)), weights=(("choose", 0), ("choose", 0))),
        OrderSpec(shards=((5, 7), (3,)), weights=(("repeat", 0), ("repeat", 0))),
        OrderSpec(
            shards=((5, 7), (3,)), weights=(("proportion", 0), ("proportion", 1)), epoch_size=20
        ),
        OrderSpec(shards=((5, 7), (3,)), epoch_size=1),
    ],
    ids=["one_stream_empty", "all_empty", "zero_repeats", "zero_proportion", "epoch_of_one"],
)
def test_generate_work_degenerate_weights(spec: OrderSpec) -> None:
    """Streams that contribute nothing: same ids where upstream plans, ValueError where not."""
    for method in BATCHING:
        for shuffle in (False, True):
            check_work(spec.with_(batching_method=method, shuffle=shuffle), (1, 1, 1), 0, 0)

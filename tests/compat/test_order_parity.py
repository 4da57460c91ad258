"""Epoch sample order parity with mosaicml-streaming 0.13.0, building block by building block.

Each test runs one configuration through both libraries and asserts identical arrays, the
same exception class in the same cases, and the same ``UserWarning`` messages:

* ``get_shuffle`` for every algorithm over shard lists with uneven and empty shards;
* ``get_partitions`` (``orig`` and ``relaxed``, with ``drop_first`` and
  ``initial_physical_nodes``) over sizes and world shapes;
* ``get_sampling`` and ``resample_streams``;
* the whole epoch (``generate_work`` for every batching method) over many
  (nodes, ranks, workers, batch) shapes, stream weightings, sampling options, seeds, epochs
  and resume offsets, without launching any process.

Cases are drawn from fixed-seed generators so every run checks the same configurations; the
``slow`` marker adds larger sizes and more draws.
"""

from __future__ import annotations

import itertools
import random
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from order_helpers import (
    OrderSpec,
    assert_same_outcome,
    capture,
    emit,
    mosaic_dataset,
    mosaic_work,
    streamx_config,
    streamx_dataset,
    streamx_work,
)

from streamx import _core

streaming = pytest.importorskip("streaming")
from streaming.base.partition import get_partitions as mosaic_partitions  # noqa: E402
from streaming.base.sampling import get_sampling as mosaic_sampling  # noqa: E402
from streaming.base.shuffle import get_shuffle as mosaic_shuffle  # noqa: E402

pytestmark = pytest.mark.compat

ALGOS = ("naive", "py1br", "py1e", "py1s", "py2s")
SEEDS = (0, 1, 42, 9176, 2**31 - 1, 2**40 + 7, 2**64 - 4)

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


# ---- get_partitions ---------------------------------------------------------------------


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


# ---- get_sampling and resample_streams --------------------------------------------------

SAMPLING_SHARDS = [
    [4, 4, 4],
    [5, 0, 3],
    [0, 5, 3],
    [10, 0, 0, 9],
    [1, 0, 1, 0, 7],
    [7],
    [3, 11, 2, 30],
]


@pytest.mark.parametrize("sizes", SAMPLING_SHARDS, ids=str)
def test_get_sampling(sizes: list[int]) -> None:
    total = sum(sizes)
    for granularity in (1, 2, 3, 7):
        for choose in sorted({0, 1, total // 2, total - 1, total, total + 1, 2 * total + 3, 5}):
            for seed, epoch, use_epoch in (
                (0, 0, True),
                (42, 3, True),
                (42, 3, False),
                (2**40, 1, True),
            ):
                args = (sizes, choose, granularity, seed, epoch, use_epoch)
                theirs = capture(lambda a=args: mosaic_sampling(np.array(a[0], np.int64), *a[1:]))
                ours = capture(lambda a=args: _core.get_sampling(*a))
                assert_same_outcome(theirs, ours, f"get_sampling{args}")


def test_get_sampling_spec_vectors() -> None:
    assert _core.get_sampling([4, 4, 4], 5, 1, 42, 0, True).tolist() == [1, 2, 2]
    assert _core.get_sampling([4, 4, 4], 30, 2, 42, 0, True).tolist() == [8, 12, 10]


def test_get_sampling_rejects_bad_arguments() -> None:
    for args in (([4, 4], -1, 1, 0, 0, True), ([4, 4], 3, 0, 0, 0, True)):
        theirs = capture(lambda a=args: mosaic_sampling(np.array(a[0]), *a[1:]))
        ours = capture(lambda a=args: _core.get_sampling(*a))
        assert theirs.error is ValueError
        assert_same_outcome(theirs, ours, str(args))


RESAMPLE_SPECS = {
    "natural": OrderSpec(shards=((5, 7, 3), (11, 2))),
    "repeat": OrderSpec(shards=((5, 7, 3), (11, 2)), weights=(("repeat", 2.5), ("repeat", 0.3))),
    "choose": OrderSpec(shards=((5, 0, 7, 3), (11, 2)), weights=(("choose", 40), ("choose", 6))),
    "proportion": OrderSpec(
        shards=((5, 7, 3), (11, 2), (8,)),
        weights=(("proportion", 1), ("proportion", 2), ("proportion", 0.5)),
        epoch_size=101,
    ),
    "epoch_size": OrderSpec(shards=((5, 7, 3), (11, 2)), epoch_size=17),
    "granular": OrderSpec(
        shards=((50, 70, 33),), weights=(("repeat", 1.7),), sampling_granularity=8
    ),
    "fixed": OrderSpec(shards=((50, 70, 33),), weights=(("repeat", 0.6),), sampling_method="fixed"),
}


@pytest.mark.parametrize("name", sorted(RESAMPLE_SPECS))
@pytest.mark.parametrize("shuffle", [False, True])
def test_resample_streams(name: str, shuffle: bool) -> None:
    spec = RESAMPLE_SPECS[name].with_(shuffle=shuffle)
    theirs_ds = mosaic_dataset(spec)
    ours_ds = streamx_dataset(spec)
    assert ours_ds.epoch_size == theirs_ds.epoch_size
    for s_ours, s_theirs in zip(ours_ds.streams, theirs_ds.streams):
        assert int(s_ours.choose) == int(s_theirs.choose)
        assert float(s_ours.proportion) == float(s_theirs.proportion)
        assert float(s_ours.repeat) == float(s_theirs.repeat)
    for epoch in range(4):
        config = streamx_config(spec, (1, 1, 1), epoch, 0)
        for stream_id in (None, *range(len(spec.shards))):
            units, ids = _core.resample_streams(config, stream_id)
            with warnings.catch_warnings():
                # Upstream divides by an empty shard's size (numpy warns, the result is 0).
                warnings.simplefilter("ignore", RuntimeWarning)
                want_units, want_ids = theirs_ds.resample_streams(epoch, stream_id)
            np.testing.assert_array_equal(units, want_units)
            np.testing.assert_array_equal(ids, want_ids)


# ---- whole epochs over world shapes -------------------------------------------------------

SHAPES = [
    (1, 1, 1),
    (1, 1, 2),
    (1, 2, 1),
    (1, 3, 2),
    (2, 1, 1),
    (2, 2, 2),
    (2, 4, 1),
    (3, 1, 2),
    (4, 2, 3),
    (4, 8, 1),
    (8, 1, 1),
    (6, 2, 2),
]

WORK_SPECS: dict[str, OrderSpec] = {
    "one_stream": OrderSpec(shards=((30, 30, 30, 7),), batch_size=2),
    "uneven_empty": OrderSpec(shards=((11, 0, 40, 3, 0, 25),), batch_size=3, shuffle_block_size=20),
    "tiny": OrderSpec(shards=((3,),), batch_size=1),
    "mix_prop": OrderSpec(
        shards=((40, 25, 8), (17, 17, 17), (60,)),
        weights=(("proportion", 0.5), ("proportion", 0.3), ("proportion", 0.2)),
        epoch_size=300,
        batch_size=4,
        shuffle_block_size=64,
    ),
    "mix_repeat": OrderSpec(
        shards=((40, 25, 8), (17, 17, 17)),
        weights=(("repeat", 1.5), ("repeat", 0.4)),
        batch_size=2,
        sampling_granularity=4,
    ),
    "mix_choose": OrderSpec(
        shards=((40, 25, 8), (33, 0, 17)),
        weights=(("choose", 50), ("choose", 120)),
        batch_size=2,
        sampling_method="fixed",
    ),
    "mix_natural": OrderSpec(shards=((90, 70), (50, 51, 52)), batch_size=4, shuffle_block_size=50),
    "equal_halves": OrderSpec(
        shards=((64, 64), (64, 64)),
        weights=(("proportion", 1), ("proportion", 1)),
        batch_size=3,
    ),
}
BATCHING = ("random", "stratified", "per_stream", "device_per_stream")


def _check_work(
    spec: OrderSpec, shape: tuple[int, int, int], epoch: int, sample_in_epoch: int
) -> bool:
    theirs = mosaic_work(spec, shape, epoch, sample_in_epoch)
    ours = streamx_work(spec, shape, epoch, sample_in_epoch)
    assert_same_outcome(theirs, ours, f"{spec} world={shape} epoch={epoch} at={sample_in_epoch}")
    return theirs.error is None


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
        ok += _check_work(WORK_SPECS[spec_name].with_(**changes), shape, epoch, at)
    assert ok >= 3, "too few configurations planned without error to be a real check"


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_generate_work_shapes_every_algo(shape: tuple[int, int, int]) -> None:
    """The default spec on each world shape, for every shuffle algorithm and epoch."""
    base = WORK_SPECS["uneven_empty"].with_(num_canonical_nodes=2 * shape[0])
    for algo in ALGOS:
        for epoch in range(4):
            assert _check_work(base.with_(shuffle_algo=algo), shape, epoch, 0)


@pytest.mark.parametrize("method", BATCHING)
def test_generate_work_resume_offsets(method: str) -> None:
    spec = WORK_SPECS["mix_prop"].with_(batching_method=method, num_canonical_nodes=2)
    shape = (2, 2, 2)
    for at in (0, 1, 15, 16, 17, 64, 150, 288, 299, 300, 320, 10_000):
        _check_work(spec, shape, 1, at)


@pytest.mark.slow
@pytest.mark.parametrize("method", BATCHING)
@pytest.mark.parametrize("spec_name", sorted(WORK_SPECS))
def test_generate_work_more(spec_name: str, method: str) -> None:
    for changes, shape, epoch, at in _work_cases(spec_name + "-slow", method, 150):
        _check_work(WORK_SPECS[spec_name].with_(**changes), shape, epoch, at)


@pytest.mark.slow
@pytest.mark.parametrize("n", [10**4, 10**5])
def test_generate_work_large(n: int) -> None:
    sizes = tuple(np.random.default_rng(n).integers(0, 2 * n // 50, 50).tolist())
    spec = OrderSpec(
        shards=(sizes,), batch_size=8, num_canonical_nodes=8, shuffle_block_size=n // 10
    )
    for algo in ALGOS:
        for shape in ((1, 1, 1), (2, 4, 2), (8, 2, 3)):
            assert _check_work(spec.with_(shuffle_algo=algo), shape, 1, 0)


def _check_workers_at_scale(algo: str, n: int, shards: int, ncn: int, block: int) -> None:
    """One worker's plan (computed alone, skipping what it does not read) vs upstream's slice."""
    sizes = tuple(np.random.default_rng(n).integers(0, 2 * n // shards, shards).tolist())
    spec = OrderSpec(shards=(sizes,), batch_size=8, num_canonical_nodes=ncn, shuffle_algo=algo)
    spec = spec.with_(shuffle_block_size=block, seed=n)
    shape = (4, 2, 3)
    theirs = mosaic_work(spec, shape, 2, 0)
    assert theirs.error is None, theirs.message
    config = streamx_config(spec, shape, 2, 0)
    for node, rank, worker in ((0, 0, 0), (1, 1, 2), (3, 0, 1), (3, 1, 2)):
        ids, _ = _core.plan_worker(config, node, rank, worker)
        np.testing.assert_array_equal(ids, theirs.value[node, rank, worker].reshape(-1))


@pytest.mark.parametrize("algo", ALGOS)
def test_plan_worker_matches_mosaic_at_scale(algo: str) -> None:
    _check_workers_at_scale(algo, 60_000, 40, 8, 5_000)
    _check_workers_at_scale(algo, 30_000, 300, 32, 900)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
def test_plan_worker_matches_mosaic_million(algo: str) -> None:
    _check_workers_at_scale(algo, 10**6, 500, 8, 1 << 18)
    _check_workers_at_scale(algo, 10**6, 2_000, 256, 10_000)


def test_plan_worker_matches_epoch_slice() -> None:
    spec = WORK_SPECS["mix_prop"].with_(num_canonical_nodes=4)
    for method in BATCHING:
        config = streamx_config(spec.with_(batching_method=method), (2, 2, 3), 2, 40)
        whole, _ = _core.plan_epoch(config)
        for node, rank, worker in itertools.product(range(2), range(2), range(3)):
            ids, _ = _core.plan_worker(config, node, rank, worker)
            np.testing.assert_array_equal(ids, whole[node, rank, worker].reshape(-1))


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
    _check_work(spec, shape, epoch, at)


@pytest.mark.parametrize("replication", [1, 2, 3, 4, 8])
def test_replicated_world_matches(replication: int) -> None:
    """The world the plan is laid out over after ``replication`` (node, rank and counts)."""
    from streaming.base.world import World as MosaicWorld

    from streamx.world import World

    for nodes, ranks, workers in itertools.product((1, 2, 3, 4), (1, 2, 4, 6, 8), (1, 3)):
        if (nodes * ranks) % replication:
            continue
        for rank in range(nodes * ranks):
            ours = World(nodes, ranks, rank, workers, workers - 1).replicate(replication)
            theirs = MosaicWorld(nodes, ranks, workers, rank * workers + workers - 1)
            theirs = theirs.replicate(replication)
            got = (ours.num_nodes, ours.ranks_per_node, ours.node, ours.rank_of_node)
            assert got == (
                theirs.num_nodes,
                theirs.ranks_per_node,
                theirs.node,
                theirs.rank_of_node,
            )
            assert (ours.rank, ours.worker_of_rank) == (theirs.rank, theirs.worker_of_rank)


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
            _check_work(spec.with_(batching_method=method, shuffle=shuffle), (1, 1, 1), 0, 0)

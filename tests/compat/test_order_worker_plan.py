"""One worker's plan (``plan_worker``, computed alone) against mosaicml-streaming 0.13.0's
slice of the whole epoch, and the replicated world the plan is laid out over."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from order_cases import ALGOS, BATCHING, WORK_SPECS
from order_helpers import OrderSpec, mosaic_work, streamx_config

from streamx import _core

pytest.importorskip("streaming")
pytestmark = pytest.mark.compat


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


@pytest.mark.parametrize("replication", [1, 2, 3, 4, 8])
def test_replicated_world_matches(replication: int) -> None:
    """The world the plan is laid out over after ``replication`` (node, rank and counts)."""
    from streaming.base.world import World as MosaicWorld

    from streamx.order.world import World

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

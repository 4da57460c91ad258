"""Properties of the epoch order through the Python-facing planner (``streamx._core``).

* Every underlying sample appears the number of times its stream's weighting asks for.
* Elastic determinism: with ``num_canonical_nodes`` and the global batch size fixed, every
  global batch holds the same samples however the world is split into nodes, ranks,
  workers and per-device batches, with or without shuffling, mixing and resumption.
* Resuming at a global-batch boundary yields the rest of the uninterrupted order.
* ``plan_worker`` is exactly the worker's block of ``plan_epoch``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, cast

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from streamx import _core
from streamx.dataset.stream import Stream, apply_weights
from streamx.order.settings import PlanConfig

ALGOS = ("naive", "py1br", "py1e", "py1s", "py2s")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

shard_lists = st.lists(st.integers(0, 60), min_size=1, max_size=6).filter(lambda s: sum(s) > 0)


def _config(
    shards: list[list[int]], repeats: list[float] | None = None, **overrides: Any
) -> dict[str, Any]:
    """A plan config with absolute (``repeat``) stream weights derived by streamx itself."""
    streams = [Stream(local=f"/nonexistent/{i}", repeat=r) for i, r in enumerate(repeats or [])]
    streams = streams or [Stream(local=f"/nonexistent/{i}") for i in range(len(shards))]
    apply_weights(streams, np.array([sum(s) for s in shards], np.int64), None, 9176)
    config = {
        "streams": [(s, int(x.choose), float(x.proportion)) for s, x in zip(shards, streams)],
        "seed": 9176,
        "epoch": 0,
        "shuffle": True,
        "shuffle_algo": "py1e",
        "shuffle_block_size": 64,
        "num_canonical_nodes": 1,
        "partition_algo": "orig",
        "batching_method": "random",
        "batch_size": 1,
        "world": (1, 1, 1),
        "sample_in_epoch": 0,
        "initial_physical_nodes": None,
        "sampling_method": "balanced",
        "sampling_granularity": 1,
    }
    config.update(overrides)
    return config


def _plan_config(config: dict[str, Any]) -> PlanConfig:
    """The tests build configs as plain dicts (``_config`` fills every key, the tests swap
    values in); ``_core`` takes them as the ``PlanConfig`` they are."""
    return cast(PlanConfig, config)


def _plan(config: dict[str, Any]) -> NDArray[np.int64]:
    try:
        ids, _ = _core.plan_epoch(_plan_config(config))
    except ValueError as err:
        # Far more physical nodes than samples make upstream's padding copy fail with numpy's
        # broadcast error, which streamx reproduces (pinned by the parity tests); such worlds
        # have no order to check.
        assume("could not broadcast" not in str(err))
        raise
    return ids


def _traversal(ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """The order in which global steps consume the plan: (batch, worker, node, rank, slot)."""
    return ids.transpose(3, 2, 0, 1, 4).reshape(-1)


def _global_batches(ids: NDArray[np.int64], global_batch: int) -> list[list[int]]:
    """Each global batch's samples, sorted, padding dropped; trailing padding-only steps go."""
    out = [sorted(int(i) for i in c if i >= 0) for c in _traversal(ids).reshape(-1, global_batch)]
    while out and not out[-1]:
        out.pop()
    return out


@st.composite
def worlds_for(draw: st.DrawFn, ncn: int, global_batch: int) -> tuple[int, int, int, int]:
    """(nodes, ranks per node, workers per rank, batch) with nodes*ranks*batch == global_batch
    and nodes dividing or divided by ``ncn``."""
    nodes = draw(
        st.sampled_from(
            [
                p
                for p in range(1, global_batch + 1)
                if not global_batch % p and (ncn % p == 0 or p % ncn == 0)
            ]
        )
    )
    rest = global_batch // nodes
    ranks = draw(st.sampled_from([r for r in range(1, rest + 1) if not rest % r]))
    return nodes, ranks, draw(st.integers(1, 3)), rest // ranks


@SETTINGS
@given(
    shards=st.lists(shard_lists, min_size=1, max_size=3),
    repeat_tenths=st.lists(st.integers(0, 30), min_size=3, max_size=3),
    algo=st.sampled_from(ALGOS),
    shuffle=st.booleans(),
    granularity=st.integers(1, 5),
    epoch=st.integers(0, 3),
    data=st.data(),
)
def test_each_sample_appears_as_weighted(
    shards: list[list[int]],
    repeat_tenths: list[int],
    algo: str,
    shuffle: bool,
    granularity: int,
    epoch: int,
    data: st.DataObject,
) -> None:
    repeats = [t / 10 for t in repeat_tenths[: len(shards)]]
    ncn = data.draw(st.integers(1, 4))
    nodes, ranks, workers, batch = data.draw(
        worlds_for(ncn, data.draw(st.sampled_from([1, 2, 4, 6])))
    )
    # An epoch size that neither the canonical nodes nor the devices leave a remainder of needs
    # no repeated (padding) samples; a filler stream tops the epoch up to one.
    unit = math.lcm(ncn, nodes * ranks)
    epoch_size = sum(int(r * sum(s)) for r, s in zip(repeats, shards))
    if epoch_size % unit or not epoch_size:
        shards = [*shards, [unit - epoch_size % unit]]
        repeats = [*repeats, 1.0]
    config = _config(shards, repeats, shuffle_algo=algo, shuffle=shuffle, epoch=epoch)
    config.update(num_canonical_nodes=ncn, world=(nodes, ranks, workers), batch_size=batch)
    # With granularity > 1, upstream's pick sizes let an empty shard hand its predecessor one
    # extra pick (samples of that shard then repeat unevenly; the parity tests pin that quirk).
    if any(0 in s for s in shards):
        granularity = 1
    config["sampling_granularity"] = granularity
    choose = [c for _, c, _ in config["streams"]]
    epoch_size = sum(choose)
    assert epoch_size % unit == 0
    ids = _plan(config)
    counts = Counter(int(i) for i in ids.reshape(-1) if i >= 0)
    assert sum(counts.values()) == epoch_size
    offset = 0
    for sizes, want in zip(shards, choose):
        total = sum(sizes)
        got = [counts.get(offset + i, 0) for i in range(total)]
        assert sum(got) == want
        low = want // total
        assert set(got) <= {low, low + 1}, (got, want, total)
        offset += total


@SETTINGS
@given(
    shards=st.lists(shard_lists, min_size=1, max_size=2),
    algo=st.sampled_from(ALGOS),
    shuffle=st.booleans(),
    ncn=st.sampled_from([1, 2, 4, 8]),
    global_batch=st.sampled_from([4, 8, 12, 16]),
    partition=st.sampled_from(["orig", "relaxed"]),
    resume_steps=st.integers(0, 4),
    data=st.data(),
)
def test_global_batches_do_not_depend_on_world_split(
    shards: list[list[int]],
    algo: str,
    shuffle: bool,
    ncn: int,
    global_batch: int,
    partition: str,
    resume_steps: int,
    data: st.DataObject,
) -> None:
    base = _config(shards, shuffle_algo=algo, shuffle=shuffle, num_canonical_nodes=ncn)
    base.update(partition_algo=partition, sample_in_epoch=resume_steps * global_batch)
    epoch_size = sum(c for _, c, _ in base["streams"])
    if shuffle and algo == "py1e" and epoch_size < ncn:
        return
    if resume_steps * global_batch > epoch_size:
        return
    # The last, partial global batch is topped up with repeated samples in a world-dependent
    # way; every complete global batch is world-independent.
    complete = (epoch_size - resume_steps * global_batch) // global_batch
    seen = []
    for _ in range(3):
        nodes, ranks, workers, batch = data.draw(worlds_for(ncn, global_batch))
        config = {**base, "world": (nodes, ranks, workers), "batch_size": batch}
        batches = _global_batches(_plan(config), global_batch)
        assert len(batches) >= complete
        seen.append(((nodes, ranks, workers, batch), batches[:complete]))
    for shape, batches in seen[1:]:
        assert batches == seen[0][1], (seen[0][0], shape)


@SETTINGS
@given(
    shards=st.lists(shard_lists, min_size=1, max_size=2),
    algo=st.sampled_from(ALGOS),
    ncn=st.sampled_from([1, 2, 4]),
    world=st.tuples(st.sampled_from([1, 2, 4]), st.integers(1, 3), st.integers(1, 3)),
    batch=st.integers(1, 4),
    steps=st.integers(1, 6),
)
def test_resume_at_global_batch_is_suffix(
    shards: list[list[int]],
    algo: str,
    ncn: int,
    world: tuple[int, int, int],
    batch: int,
    steps: int,
) -> None:
    nodes = world[0]
    if ncn % nodes and nodes % ncn:
        return
    config = _config(shards, shuffle_algo=algo, num_canonical_nodes=ncn, world=world)
    config["batch_size"] = batch
    epoch_size = sum(c for _, c, _ in config["streams"])
    if algo == "py1e" and epoch_size < ncn:
        return
    global_batch = nodes * world[1] * batch
    at = steps * global_batch
    if at > epoch_size:
        return
    full = _global_batches(_plan(config), global_batch)
    resumed = _global_batches(_plan({**config, "sample_in_epoch": at}), global_batch)
    # As above, only the trailing partial batch's padding may differ.
    complete = epoch_size // global_batch
    assert len(resumed) >= complete - steps
    assert resumed[: complete - steps] == full[steps:complete]


@SETTINGS
@given(
    shards=st.lists(shard_lists, min_size=1, max_size=3),
    method=st.sampled_from(["random", "stratified", "per_stream", "device_per_stream"]),
    algo=st.sampled_from(ALGOS),
    world=st.tuples(st.sampled_from([1, 2, 4]), st.integers(1, 3), st.integers(1, 3)),
    ncn=st.sampled_from([1, 2, 4, 8]),
    batch=st.integers(1, 4),
    at=st.integers(0, 50),
)
def test_plan_worker_is_the_epochs_block(
    shards: list[list[int]],
    method: str,
    algo: str,
    world: tuple[int, int, int],
    ncn: int,
    batch: int,
    at: int,
) -> None:
    config = _config(shards, shuffle_algo=algo, num_canonical_nodes=ncn, world=world)
    config.update(
        batching_method=method, batch_size=batch, sample_in_epoch=at, partition_algo="relaxed"
    )
    try:
        whole = _plan(config)
    except ValueError:
        return  # shapes the method rejects are covered by the parity tests
    nodes, ranks, workers = world
    for node in range(nodes):
        for rank in range(ranks):
            for worker in range(workers):
                ids, _ = _core.plan_worker(_plan_config(config), node, rank, worker)
                np.testing.assert_array_equal(ids, whole[node, rank, worker].reshape(-1))

"""The loader's chunks in the calibrated model: a worker yields nothing of a chunk before all
of its shards are local, and at the start every worker fetches its first chunk's shards one
by one, a shard two workers share fetched once (the first batch was 26-30% early with 0 or
1 worker: it waited for the batch's shards, not the chunk's). No timing of this machine."""

from __future__ import annotations

import numpy as np
import pytest

from streamx.sim.first_chunks import first_chunk_ready
from streamx.sim.schedule import chunk_rows, node_queue


def _shard_of(per: int):  # type: ignore[no-untyped-def]
    return lambda ids: ids // per


def test_chunk_rows_point_at_the_step_starting_the_chunk() -> None:
    # 1 device, 2 workers, 3 batches of 4, chunks of 6 samples: worker w's positions 0-5
    # are its chunk 0 (starts at its step 0, i.e. global step w), 6-11 its chunk 1 (starts
    # in its batch 1, global step 2 + w).
    keys = chunk_rows((1, 2, 3, 4), 6)
    span = 6 + 4
    need, offset = keys // span, keys % span
    assert need.tolist() == [
        [0, 0, 0, 0],  # worker 0, batch 0
        [1, 1, 1, 1],  # worker 1, batch 0
        [0, 0, 2, 2],  # worker 0, batch 1: positions 4-5 in chunk 0, 6-7 in chunk 1
        [1, 1, 3, 3],
        [2, 2, 2, 2],  # worker 0, batch 2: chunk 1
        [3, 3, 3, 3],
    ]
    # Offsets count from the first sample of the chunk's first batch.
    assert offset[2].tolist() == [4, 5, 2, 3]
    assert offset[4].tolist() == [4, 5, 6, 7]


def test_a_chunk_is_needed_whole_at_its_first_step() -> None:
    # One worker, batches of 2, chunks of 4: shards 0..3 of one sample each, read 0,1,2,3.
    ids = np.arange(4, dtype=np.int64).reshape(1, 1, 2, 2)
    present, last_use = np.zeros(4, bool), np.full(4, -1, np.int64)
    plain = node_queue(ids, _shard_of(1), 2, 0, 0, present.copy(), last_use.copy())
    chunked = node_queue(ids, _shard_of(1), 2, 0, 0, present, last_use, chunk=4)
    assert plain.need.tolist() == [0, 0, 1, 1]
    # Shards 2 and 3 are read in step 1, but the chunk holding them starts in step 0.
    assert chunked.shards.tolist() == [0, 1, 2, 3]
    assert chunked.need.tolist() == [0, 0, 0, 0]
    assert last_use.tolist() == [0, 0, 1, 1]  # the last use is still the reading step


def test_chunked_queue_fetches_in_sample_order_within_a_chunk() -> None:
    # Sample order 3, 0, 2, 1 (one sample per shard), one chunk of 4 over two batches: the
    # loader fetches the chunk's shards in the order its samples are read.
    ids = np.array([3, 0, 2, 1], np.int64).reshape(1, 1, 2, 2)
    queue = node_queue(
        ids, _shard_of(1), 2, 0, 0, np.zeros(4, bool), np.full(4, -1, np.int64), chunk=4
    )
    assert queue.shards.tolist() == [3, 0, 2, 1]


def test_one_worker_fetches_its_chunk_one_by_one() -> None:
    # Samples of shards 0, 0, 1, 2 (chunk of 4; shard 3 is in the next chunk).
    ids = np.array([0, 1, 2, 4, 6, 6], np.int64).reshape(1, 1, 3, 2)
    sizes = np.array([10, 20, 30, 40], np.int64)
    ready = first_chunk_ready(ids, _shard_of(2), 4, sizes, 10.0)
    assert ready.tolist() == [pytest.approx(6.0)]  # (10 + 20 + 30) / 10


def test_workers_fetch_a_shared_shard_once() -> None:
    # Two workers: worker 0 reads shards 0, 1; worker 1 reads shards 2, 1 (chunk of 2).
    ids = np.array([[[[0, 1]], [[2, 1]]]], np.int64)  # (1 device, 2 workers, 1 batch, 2)
    sizes = np.array([10, 10, 30], np.int64)
    ready = first_chunk_ready(ids, _shard_of(1), 2, sizes, 10.0)
    # Worker 0: shard 0 by t=1, shard 1 by t=2 (it starts first: worker 1 is busy with
    # shard 2 until t=3, then finds shard 1 already here).
    assert ready.tolist() == [pytest.approx(2.0), pytest.approx(3.0)]
    # Had worker 1 started shard 1 first, worker 0 would wait for that download.
    ids = np.array([[[[0, 1]], [[1, 2]]]], np.int64)
    sizes = np.array([30, 10, 10], np.int64)
    ready = first_chunk_ready(ids, _shard_of(1), 2, sizes, 10.0)
    assert ready.tolist() == [pytest.approx(3.0), pytest.approx(2.0)]


def test_a_worker_waits_for_a_shard_another_is_fetching() -> None:
    # Worker 1 starts shard 1 at t=0 (3 s); worker 0 reaches it at t=1 and waits until t=3.
    ids = np.array([[[[0, 1]], [[1, 1]]]], np.int64)
    sizes = np.array([10, 30], np.int64)
    ready = first_chunk_ready(ids, _shard_of(1), 2, sizes, 10.0)
    assert ready.tolist() == [pytest.approx(3.0), pytest.approx(3.0)]


def test_the_slowest_device_sets_a_workers_ready_time() -> None:
    # Two devices, one worker each: device 1's chunk is twice as large.
    ids = np.array([[[[0, 0]]], [[[1, 2]]]], np.int64)
    sizes = np.array([10, 10, 10], np.int64)
    assert first_chunk_ready(ids, _shard_of(1), 2, sizes, 10.0).tolist() == [pytest.approx(2.0)]

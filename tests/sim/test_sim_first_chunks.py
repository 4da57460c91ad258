"""The loader's chunks in the calibrated model: a worker yields nothing of a chunk before all
of its shards are local, and at the start every worker fetches all its first chunk's shards
at once over the node's link, a shard two workers share fetched once (the first batch was
26-30% early with 0 or 1 worker: it waited for the batch's shards, not the chunk's). No
timing of this machine."""

from __future__ import annotations

import numpy as np
import pytest

from streamx.sim.first_chunks import first_chunk_ready, shared_finish_times
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


def test_downloads_share_the_link_and_speed_up_as_others_end() -> None:
    # 10, 20 and 30 bytes at once over a 30 B/s link, at most 20 B/s each: 10 B/s each
    # until the first ends (t=1), then 15 B/s each for 10 more bytes of the second (t=1.67),
    # then the third's last 10 bytes at its cap of 20 B/s (t=2.17).
    ends = shared_finish_times(np.array([30, 10, 20], np.int64), 20.0, 30.0)
    assert ends.tolist() == [pytest.approx(1 + 10 / 15 + 10 / 20), 1.0, pytest.approx(1 + 10 / 15)]
    # One download alone runs at its own cap, not the link's.
    assert shared_finish_times(np.array([40], np.int64), 10.0, 100.0).tolist() == [4.0]


def test_one_worker_fetches_its_chunks_shards_at_once() -> None:
    # Samples of shards 0, 0, 1, 2 (chunk of 4; shard 3 is in the next chunk): shards 0-2
    # start together; a fast link leaves each at its own rate, so the largest sets the time.
    ids = np.array([0, 1, 2, 4, 6, 6], np.int64).reshape(1, 1, 3, 2)
    sizes = np.array([10, 20, 30, 40], np.int64)
    ready = first_chunk_ready(ids, _shard_of(2), 4, sizes, 10.0, 1000.0)
    assert ready.tolist() == [pytest.approx(3.0)]  # 30 / 10, not (10 + 20 + 30) / 10
    # A link of one shard's rate: the three share it, the chunk's 60 bytes in 6 s.
    ready = first_chunk_ready(ids, _shard_of(2), 4, sizes, 10.0, 10.0)
    assert ready.tolist() == [pytest.approx(6.0)]


def test_a_paced_process_starts_its_chunks_downloads_a_slot_apart() -> None:
    # The same chunk (shards 0, 1, 2 of 10, 20, 30 bytes at 10 B/s) on a throttling host:
    # the downloads start 1 s apart in shard order, so shard 2 ends at 2 + 3 s, not 3 s.
    ids = np.array([0, 1, 2, 4, 6, 6], np.int64).reshape(1, 1, 3, 2)
    sizes = np.array([10, 20, 30, 40], np.int64)
    ready = first_chunk_ready(ids, _shard_of(2), 4, sizes, 10.0, 1000.0, start_gap=1.0)
    assert ready.tolist() == [pytest.approx(5.0)]
    # A gap shorter than the downloads changes nothing the link did not already set.
    ready = first_chunk_ready(ids, _shard_of(2), 4, sizes, 10.0, 10.0, start_gap=0.1)
    assert ready.tolist() == [pytest.approx(6.0)]


def test_workers_fetch_a_shared_shard_once() -> None:
    # Two workers: worker 0 reads shards 0, 1; worker 1 reads shards 2, 1 (chunk of 2). The
    # node fetches shards 0, 1, 2 once each, side by side, over a 30 B/s link.
    ids = np.array([[[[0, 1]], [[2, 1]]]], np.int64)  # (1 device, 2 workers, 1 batch, 2)
    sizes = np.array([10, 10, 30], np.int64)
    ready = first_chunk_ready(ids, _shard_of(1), 2, sizes, 100.0, 30.0)
    # Shards 0 and 1 end at t=1 (10 B/s each); shard 2 has 20 bytes left at 30 B/s.
    assert ready.tolist() == [pytest.approx(1.0), pytest.approx(1 + 20 / 30)]
    # Fetched twice, shard 1 would have taken a share of the link: 40 bytes, not 30, by t=1.
    assert ready[1] < (10 + 10 + 10 + 30) / 30


def test_the_slowest_device_sets_a_workers_ready_time() -> None:
    # Two devices, one worker each: device 1's chunk holds two shards of device 0's one.
    ids = np.array([[[[0, 0]]], [[[1, 2]]]], np.int64)
    sizes = np.array([10, 10, 20], np.int64)
    ready = first_chunk_ready(ids, _shard_of(1), 2, sizes, 10.0, 1000.0)
    assert ready.tolist() == [pytest.approx(2.0)]  # shard 2 alone, at 10 B/s

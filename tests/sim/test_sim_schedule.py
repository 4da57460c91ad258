"""The vectorised download schedule against a slot-by-slot reference on random plans."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from streamx.sim.schedule import node_queue

_NEVER = np.iinfo(np.int64).max


def _reference(
    ids: NDArray[np.int64],
    per: int,
    steps: int,
    predownload: int,
    num_shards: int,
    chunk: int | None = None,
) -> tuple[list[int], list[int], list[int], list[int]]:
    """(shards, need, release, last use) by walking every slot; order as the module's.

    With ``chunk``, a sample is needed at the step reading the first sample of its chunk
    (its worker's chunks start every ``chunk`` samples): the loader yields a chunk whole.

    Shards read after the last step are downloaded too when a worker's predownload window
    reaches them by then (the look-ahead past a run cut short, as mosaic's simulator has).
    """
    devices, workers, batches, batch = ids.shape
    ahead = (predownload // batch + 1) * workers
    need = [_NEVER] * num_shards
    release = [_NEVER] * num_shards
    last = [-1] * num_shards
    for b in range(batches):
        for w in range(workers):
            step = b * workers + w
            if step >= steps + ahead:
                continue
            for d in range(devices):
                for j in range(batch):
                    sample = int(ids[d, w, b, j])
                    if sample < 0:
                        continue
                    shard, position = sample // per, b * batch + j
                    later = (position - predownload) // batch * workers + w
                    rel = 0 if position < predownload else later
                    needed = step
                    if chunk is not None:
                        needed = (position // chunk * chunk) // batch * workers + w
                    need[shard] = min(need[shard], needed)
                    release[shard] = min(release[shard], rel)
                    if step < steps:
                        last[shard] = max(last[shard], step)
    new = [s for s in range(num_shards) if need[s] < steps or min(release[s], need[s]) < steps]
    new.sort(key=lambda s: (need[s], min(release[s], need[s]), s))
    return new, [need[s] for s in new], [min(release[s], need[s]) for s in new], last


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_matches_slot_by_slot_reference(seed: int, chunked: bool) -> None:
    rng = np.random.default_rng(seed)
    devices, workers, batches, batch = (int(x) for x in rng.integers(1, [4, 4, 10, 9]))
    num_shards, per = int(rng.integers(1, 25)), int(rng.integers(1, 6))
    ids = rng.integers(0, num_shards * per, size=(devices, workers, batches, batch))
    ids[rng.random(ids.shape) < 0.05] = -1  # padding
    steps = int(rng.integers(1, batches * workers + 1))
    predownload = int(rng.integers(0, 40))
    present = np.zeros(num_shards, bool)
    last_use = np.full(num_shards, -1, np.int64)
    chunk = int(rng.integers(1, 20)) if chunked else None
    queue = node_queue(ids, lambda x: x // per, steps, 7, predownload, present, last_use, chunk)
    shards, need, release, last = _reference(ids, per, steps, predownload, num_shards, chunk)
    assert sorted(queue.shards.tolist()) == sorted(shards)
    # Ties in (need, release) may come in any order; the keys must agree in order.
    assert (queue.need - 7).tolist() == need
    assert (queue.release - 7).tolist() == release
    assert last_use.tolist() == [x + 7 if x >= 0 else -1 for x in last]
    assert present.tolist() == [s in shards for s in range(num_shards)]

"""A dataset the user drops is collected, even when its look-ahead waits for a store to
throttle: the wait's listener holds it weakly. Kept alive, its streams' claims on their
`local` made the next dataset over that directory with another remote fail as a reuse."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import remote_data

import streamx
from streamx.storage import request_pace


def test_a_dropped_dataset_is_collected_while_its_look_ahead_waits(
    remote: str, tmp_path: Path
) -> None:
    request_pace.forget_paces()
    ds = streamx.StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4)
    count = int(ds.num_samples)
    # A pass: windows over the first shards, with the later shards held back until a store
    # throttles (none does here).
    assert sorted(remote_data.check(s) for s in ds) == list(range(count))
    dataset, cache = weakref.ref(ds), weakref.ref(ds._shard_cache)
    del ds
    gc.collect()
    assert dataset() is None
    assert cache() is None

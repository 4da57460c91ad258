"""A writable cache ledger brought in line with the cache directory when a dataset starts.

The ledger outlives processes: a download killed mid-way leaves a shard "preparing" with
no live owner and its temporary files on disk, and a shard the user deleted by hand is still
recorded as local. At start, each shard that can need anything (held by the ledger, or with
files in the cache) is checked once against the files really there.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.cache.cached_files import TempScan, bytes_present, normalize, remove_stale_temps
from streamx.cache.ledger_files import RemoteIndex, cached_shards
from streamx.cache.views import CacheLayout

__all__ = ["sync_with_disk"]


def sync_with_disk(
    ledger: _core.CacheLedger,
    layout: CacheLayout,
    remote: NDArray[np.bool_],
    indexes: list[RemoteIndex] | None,
) -> None:
    """Marks local-only shards unevictable, records which shards are already here, and
    removes what downloads killed mid-way left (no live process owns those shards).

    Args:
        ledger: The dataset's writable ledger.
        layout: The dataset's streams and shards.
        remote: Per shard, whether its stream copies it into the cache.
        indexes: The remote indexes read into columns (None: units listed in Python).
    """
    for stream_id, stream in enumerate(layout.streams):
        if not stream.copies_into_cache:
            # Never delete the user's only copy (mosaicml-streaming issue #988).
            shards = layout.shard_range(stream_id)
            ledger.set_evictable(shards.start, shards.stop, False)
    ledger.recover()
    scan = TempScan()  # each directory listed once, not once per shard
    for shard_id in _candidates(ledger, remote, indexes):
        shard = layout.shards[shard_id]
        stream = layout.streams[layout.stream_per_shard[shard_id]]
        state = ledger.state(shard_id)
        if state == "preparing":
            continue  # a live process is downloading it
        remove_stale_temps(shard, scan)
        if state == "local" and ledger.bytes(shard_id) == bytes_present(shard):
            # Only files this ledger recorded as downloaded by streamx are dropped here: a
            # file the index merely names (the user's own, even of the index's size) is
            # adopted as it is, as mosaicml-streaming keeps it.
            normalize(shard, stream.safe_keep_zip)
        ledger.sync(shard_id, bytes_present(shard) or None)


def _candidates(
    ledger: _core.CacheLedger, remote: NDArray[np.bool_], indexes: list[RemoteIndex] | None
) -> list[int]:
    """Only the shards the ledger holds or whose files (or temporaries) are in the cache can
    need anything done: for the others, a sync would record them absent again."""
    if indexes is None:  # units listed in Python: each is looked at
        return [int(s) for s in np.flatnonzero(remote)]
    held = {s for s in ledger.held_shards() if remote[s]}
    return sorted(held.union(cached_shards(indexes)))

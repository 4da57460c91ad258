"""Checking that a pass left none of its downloads running.

A pass can read a shard's last sample before that shard's download is done (by range, or
from a file renamed into place before the download is recorded). The pass then waits for
it as it ends (``ShardCache.settle``), so that the cache's accounting and files are final
once a loop over the dataset is over: tests that compare them check that here first.
"""

from __future__ import annotations

import streamx

__all__ = ["assert_no_downloads_running"]


def assert_no_downloads_running(dataset: streamx.StreamingDataset) -> None:
    """Fails if this process still runs or queues a download of one of ``dataset``'s
    shards."""
    cache = dataset._shard_cache
    if cache is None:
        return
    running = [s for s in range(len(dataset.shards)) if cache.fetching_here(s)]
    assert not running, f"shards still downloading after the pass: {running}"

"""Waiting for a dataset's background downloads before a test reads the cache's accounting.

A pass can end while a shard it has read already (by range, or from a file just renamed
into place) is still being recorded by its download thread: the ledger's figures are then
the in-flight ones for a moment. Tests that compare them with the files on disk wait here.
"""

from __future__ import annotations

import concurrent.futures

import streamx

__all__ = ["wait_for_background_downloads"]


def wait_for_background_downloads(dataset: streamx.StreamingDataset, timeout: float = 60) -> None:
    """Returns once every download this process queued for ``dataset`` has finished.

    Raises:
        TimeoutError: If some are still running after ``timeout`` seconds.
    """
    cache = dataset._shard_cache
    if cache is None:
        return
    with cache._lock:
        futures = list(cache._in_flight.values())
    _, running = concurrent.futures.wait(futures, timeout=timeout)
    if running:
        raise TimeoutError(f"{len(running)} downloads still running after {timeout} s")

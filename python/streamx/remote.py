"""Bringing remote shards into the local cache, under the node's shared cache ledger.

Each dataset has one :class:`ShardCache`. The Rust ledger (one memory-mapped file per cache
directory and dataset, shared by every process on the node) decides who downloads a shard
and which least-recently-used shards to evict to stay under ``cache_limit``; downloads run
on a small per-process thread pool so several are in flight at once.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from streamx import _core
from streamx.index import FileInfo, ShardInfo
from streamx.storage.download import download_file
from streamx.storage.prefetch import default_max_in_flight

__all__ = ["ShardCache", "fetch_index"]

_POLL_S = 0.005


def _remote_url(stream: Any, basename: str) -> str:
    parts = [stream.remote.rstrip("/")]
    if stream.split:
        parts.append(stream.split.strip("/"))
    return "/".join([*parts, basename])


def fetch_index(stream: Any, world: Any = None) -> None:
    """Downloads a stream's ``index.json`` into its local directory (atomically)."""
    download_file(
        _remote_url(stream, "index.json"),
        stream.index_path,
        retry=stream.download_retry,
        timeout=stream.download_timeout,
    )


class ShardCache:
    """Downloads, validates, decompresses and accounts for one dataset's shards."""

    def __init__(self, ds: Any, limit: int | None) -> None:
        self._streams = ds.streams
        self._stream_of_shard = ds.stream_per_shard.tolist()
        self._shards: list[ShardInfo] = ds.shards
        self._reader = ds._reader
        files = [
            [shard.local_path(f) for pair in shard.file_pairs for f in pair if f]
            for shard in ds.shards
        ]
        key = hashlib.blake2s(
            repr([(s.local, s.split, s.remote) for s in ds.streams]).encode(), digest_size=8
        ).hexdigest()
        path = os.path.join(ds._local_dirs()[0], ".streamx", f"ledger-{key}-{len(files)}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.ledger = _core.CacheLedger(path, len(files), limit, files)
        self._init_ledger(ds)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = -1
        self._in_flight: dict[int, Future[None]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_pool=None, _pool_pid=-1, _in_flight={}, _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _init_ledger(self, ds: Any) -> None:
        """Marks local-only streams unevictable and records which shards are already here."""
        for stream_id, stream in enumerate(ds.streams):
            start = int(ds.shard_offset_per_stream[stream_id])
            stop = start + int(ds.shards_per_stream[stream_id])
            if stream.remote is None or stream.remote == stream.local:
                # Never delete the user's only copy (mosaicml-streaming issue #988).
                self.ledger.set_evictable(start, stop, False)
        self.ledger.recover()
        for shard_id, shard in enumerate(self._shards):
            present = _bytes_present(shard)
            self.ledger.sync(shard_id, present or None)

    def prepare(self, shard_id: int, timeout: float | None = None) -> None:
        """Blocks until shard ``shard_id`` is local, downloading it here if nobody else is."""
        shard = self._shards[shard_id]
        needed = shard.get_max_size()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            decision, evicted = self.ledger.begin_download(shard_id, needed)
            for victim in evicted:
                self._reader.evict(victim)
            if decision == "local":
                if _files_ready(shard):
                    self.ledger.touch(shard_id)
                    return
                self.ledger.sync(shard_id, None)  # deleted behind our back: fetch again
                continue
            if decision == "download":
                self._download(shard_id)
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(
                    f"Timed out waiting for another process to fetch {shard.raw_data.basename}"
                )
            time.sleep(_POLL_S)

    def _download(self, shard_id: int) -> None:
        shard = self._shards[shard_id]
        stream = self._streams[self._stream_of_shard[shard_id]]
        try:
            for raw, packed in shard.file_pairs:
                _fetch_pair(stream, shard, raw, packed)
        except BaseException:
            self.ledger.abort_download(shard_id)
            raise
        self.ledger.finish_download(shard_id, _bytes_present(shard))

    def prepare_async(self, shard_ids: list[int]) -> None:
        """Starts fetching shards in the background (dedup'd per process)."""
        with self._lock:
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(
                    default_max_in_flight(), thread_name_prefix="streamx-dl"
                )
                self._pool_pid = os.getpid()
                self._in_flight = {}
            for shard_id in shard_ids:
                if shard_id not in self._in_flight and not _files_ready(self._shards[shard_id]):
                    future = self._pool.submit(self.prepare, shard_id)
                    self._in_flight[shard_id] = future
                    future.add_done_callback(lambda _f, s=shard_id: self._in_flight.pop(s, None))

    def usage(self) -> int:
        """Bytes the ledger counts as cached on this node."""
        return int(self.ledger.usage)


def _files_ready(shard: ShardInfo) -> bool:
    return all(
        os.path.exists(shard.local_path(raw))
        or (packed is not None and os.path.exists(shard.local_path(packed)))
        for raw, packed in shard.file_pairs
    )


def _bytes_present(shard: ShardInfo) -> int:
    total = 0
    for pair in shard.file_pairs:
        for info in pair:
            if info is not None and os.path.exists(shard.local_path(info)):
                total += os.path.getsize(shard.local_path(info))
    return total


def _fetch_pair(stream: Any, shard: ShardInfo, raw: FileInfo, packed: FileInfo | None) -> None:
    raw_path = shard.local_path(raw)
    if os.path.exists(raw_path):
        return
    if packed is None:
        _download_checked(stream, shard, raw)
        return
    zip_path = shard.local_path(packed)
    if not os.path.exists(zip_path):
        _download_checked(stream, shard, packed)
    assert shard.compression is not None
    _core.decompress_file(shard.compression, zip_path, raw_path)
    if not stream.safe_keep_zip:
        os.remove(zip_path)


def _download_checked(stream: Any, shard: ShardInfo, info: FileInfo) -> None:
    """Downloads one file and, with ``validate_hash``, checks it against the index."""
    path = shard.local_path(info)
    download_file(
        _remote_url(stream, info.basename),
        path,
        retry=stream.download_retry,
        timeout=stream.download_timeout,
        expected_size=info.bytes,
    )
    algo = stream.validate_hash
    if not algo:
        return
    if algo not in info.hashes:
        os.remove(path)
        raise ValueError(
            f"Hash algorithm `{algo}` chosen for data validation does not match with those "
            f"provided during dataset creation `{sorted(info.hashes)}`. Provide one of those."
        )
    if _core.hash_file(algo, path) != info.hashes[algo]:
        os.remove(path)  # never leave bad bytes where a reader could map them
        raise ValueError(f"Checksum failure: {path}")

"""The requests a simulated run sends, counted as streamx's downloader splits files.

The downloader (:mod:`streamx.storage.download`) fetches a file of known size as ranged
GETs of ``part_size(size, connections // files)`` bytes, where ``files`` is how many files
the process fetches at that moment: a shard fetched alone spreads over every connection
(parts down to 1 MiB), shards fetched together take fewer, larger parts (up to
``STREAMX_DOWNLOAD_PART_SIZE``, 8 MiB by default). A file of one part is one plain GET.
Each stream's ``index.json`` costs a HEAD and a GET per node (its size is not declared).

The simulator knows which downloads a node makes and when each is released to its
look-ahead and completed, so ``files`` is the node's backlog at the download's start (the
shards released and not yet complete) shared among its processes, at least one. Where the
largest part is at most 1 MiB, or each shard spread over the connections needs parts of the
largest size, ``files`` changes nothing and the count is exact; otherwise it is the model's
estimate. Not counted: the two small GETs of a range read (``STREAMX_RANGE_READS``) of an
uncompressed shard a reader needs before any download of it began, hedged GETs, and
throttled answers asked again (:mod:`~streamx.sim.link_model` counts those apart).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_CONNECTIONS",
    "DEFAULT_PART_SIZE",
    "INDEX_REQUESTS",
    "MIN_PART_SIZE",
    "S3_GET_PER_1000",
    "RequestCount",
    "backlog_files",
    "count_requests",
    "part_bytes",
    "parts_of",
]

# streamx.storage.settings' defaults (STREAMX_DOWNLOAD_PART_SIZE, _CONNECTIONS) and floor;
# tests/sim/test_sim_requests.py checks them against the downloader's own rule.
DEFAULT_PART_SIZE = 8 << 20
DEFAULT_CONNECTIONS = 32
MIN_PART_SIZE = 1 << 20
# S3 Standard's price of 1,000 GET or HEAD requests (us-east-1), in dollars.
S3_GET_PER_1000 = 0.0004
# A HEAD and a GET for each stream's index.json, per node.
INDEX_REQUESTS = 2
_GB = 1e9


def part_bytes(size: int, connections: int, largest: int = DEFAULT_PART_SIZE) -> int:
    """Bytes per ranged GET of a ``size``-byte file over ``connections`` connections, as
    :func:`streamx.storage.settings.part_size` chooses them.

    Examples:
        >>> part_bytes(64 << 20, 32) >> 20, part_bytes(64 << 20, 4) >> 20
        (2, 8)
    """
    spread = -(-size // max(connections, 1))
    return max(min(largest, spread), min(MIN_PART_SIZE, largest))


def parts_of(
    sizes: NDArray[np.int64], connections: NDArray[np.int64], largest: int = DEFAULT_PART_SIZE
) -> NDArray[np.int64]:
    """GETs of each file: ``ceil(size / part)`` with :func:`part_bytes`' part (vectorised).

    Examples:
        >>> parts_of(np.array([100, 3 << 20, 64 << 20]), np.array([32, 32, 32])).tolist()
        [1, 3, 32]
    """
    spread = -(-sizes // np.maximum(connections, 1))
    part = np.maximum(np.minimum(largest, spread), min(MIN_PART_SIZE, largest))
    parts: NDArray[np.int64] = np.maximum(-(-sizes // part), 1).astype(np.int64)
    return parts


@dataclass(frozen=True)
class RequestCount:
    """Requests of a run, all nodes together.

    Attributes:
        gets: Plain GETs (files of one part, and the index files).
        ranged_gets: Ranged GETs (the parts of larger files).
        heads: HEADs (the index files).
        throttled: Throttled answers (503/429) asked again; not billed by S3, so not priced.
        bytes: Bytes the requests brought.
    """

    gets: int
    ranged_gets: int
    heads: int
    throttled: int
    bytes: int

    @property
    def requests(self) -> int:
        """Billed requests: GETs, ranged GETs and HEADs."""
        return self.gets + self.ranged_gets + self.heads

    def per_gb(self) -> float:
        """Requests per 10^9 bytes brought."""
        return self.requests / (self.bytes / _GB) if self.bytes else 0.0

    def cost(self, price_per_1000: float) -> float:
        """Dollars at ``price_per_1000`` per 1,000 requests."""
        return self.requests * price_per_1000 / 1000


def count_requests(
    sizes: NDArray[np.int64],
    files: NDArray[np.int64],
    connections: int,
    largest: int,
    index_requests: int,
    throttled_share: float = 0.0,
) -> RequestCount:
    """Counts the GETs of downloads of ``sizes`` bytes, each made while its process fetched
    ``files`` files, plus ``index_requests`` (half HEADs, half GETs).

    A ``throttled_share`` of answers being 503 or 429 means each request is sent
    ``1 / (1 - share)`` times on average; the extra tries are counted as ``throttled``.
    """
    parts = parts_of(sizes, np.maximum(connections // np.maximum(files, 1), 1), largest)
    sent = int(parts.sum())
    heads = index_requests // 2
    billed = sent + index_requests
    extra = round(billed * throttled_share / (1 - throttled_share)) if throttled_share else 0
    return RequestCount(
        gets=int((parts == 1).sum()) + index_requests - heads,
        ranged_gets=int(parts[parts > 1].sum()),
        heads=heads,
        throttled=extra,
        bytes=int(sizes.sum()),
    )


def backlog_files(
    release: NDArray[np.int64], done: NDArray[np.int64], processes: int
) -> NDArray[np.int64]:
    """Per download of one node's list (in download order), the files its process fetches
    when it starts: the node's shards released and not yet complete at that step, shared
    among ``processes``, at least one."""
    if not len(done):
        return np.zeros(0, np.int64)
    # A download starts when the one before it completes, or at its release if later; the
    # link takes the list in order, so the ones before it are done and every later one
    # released by then is in flight with it.
    start = np.maximum(release, np.concatenate([[0], done[:-1]]))
    released = np.searchsorted(np.sort(release), start, side="right")
    backlog = np.maximum(released - np.arange(len(done)), 1)
    return np.maximum(-(-backlog // max(processes, 1)), 1).astype(np.int64)

"""The requests a simulated run sends, counted as streamx's downloader splits files.

The downloader (:mod:`streamx.storage.download`) fetches a file of known size as ranged
GETs of ``part_size(size, connections // files)`` bytes, where ``files`` is how many files
the process fetches at that moment: a shard fetched alone spreads over every connection
(parts down to 1 MiB), shards fetched together take fewer, larger parts (up to
``STREAMX_DOWNLOAD_PART_SIZE``, 8 MiB by default). A file of one part is one plain GET.
Each stream's ``index.json`` costs one GET per node, from any remote (streamx sends no
``HEAD`` for its size: the GET announces it): ``SimConfig.index_requests``.

The simulator knows which downloads a node makes and when each is released to its
look-ahead and completed, so ``files`` is the node's backlog as the download starts (its
earlier downloads released and not yet complete, and itself) shared among its processes. Where the
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

# The downloader's defaults and floor, re-exported: the part rule here is the downloader's.
from streamx.storage.settings import DEFAULT_CONNECTIONS, DEFAULT_PART_SIZE, MIN_PART_SIZE

__all__ = [
    "DEFAULT_CONNECTIONS",
    "DEFAULT_PART_SIZE",
    "MIN_PART_SIZE",
    "S3_GET_PER_1000",
    "S3_PUT_PER_1000",
    "RequestCount",
    "backlog_files",
    "count_requests",
    "part_bytes",
    "parts_of",
]

# S3 Standard's prices of 1,000 requests (us-east-1), in dollars: GET and HEAD; PUT, POST
# and LIST.
S3_GET_PER_1000 = 0.0004
S3_PUT_PER_1000 = 0.005
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


def _ramp_count(size: int, part: int, largest: int) -> int:
    """GETs of a file whose parts ramp: two of ``part``, then each twice the last, up to
    ``largest`` (``streamx.storage.part_plan.plan_parts``)."""
    count, start = 0, 0
    while start < size:
        start += part
        count += 1
        part = min(part * 2, largest) if count > 1 else part
    return max(count, 1)


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
    index: tuple[int, int] = (0, 0),
    throttled_share: float = 0.0,
    paced_gets: float | None = None,
    ahead: tuple[NDArray[np.bool_], int] | None = None,
    range_gets: int = 0,
    ramped: NDArray[np.bool_] | None = None,
) -> RequestCount:
    """Counts the GETs of downloads of ``sizes`` bytes, each made while its process fetched
    ``files`` files, plus ``index``: the index files' ``(GETs, HEADs)``.

    A ``throttled_share`` of answers being 503 or 429 means each request is sent
    ``1 / (1 - share)`` times on average; the extra tries are counted as ``throttled``.
    ``paced_gets``: the GETs a file takes on a paced host (a request-rate limit,
    :mod:`~streamx.sim.request_cap`), at most the calm split's parts. ``ahead``: which
    downloads were fetched ahead of their reader, and the least part they take.
    ``range_gets``: the ranged GETs of samples read by range (:mod:`~streamx.sim.first_reads`).
    ``ramped``: which downloads needed now follow range reads: their parts ramp up to the
    look-ahead's (``part_plan.plan_parts``).
    """
    shares = np.maximum(connections // np.maximum(files, 1), 1)
    parts = parts_of(sizes, shares, largest)
    if ahead is not None:
        # A file fetched ahead of its reader takes parts of at least the look-ahead's
        # (streamx.storage.part_plan).
        few = parts_of(sizes, np.ones_like(sizes), ahead[1])
        parts = np.where(ahead[0], np.minimum(parts, few), parts)
        if ramped is not None:
            for i in np.flatnonzero(ramped & ~ahead[0]).tolist():
                first = part_bytes(int(sizes[i]), int(shares[i]), largest)
                parts[i] = _ramp_count(int(sizes[i]), first, max(first, ahead[1]))
    if paced_gets is not None:
        parts = np.minimum(parts, max(round(paced_gets), 1))
    billed = int(parts.sum()) + sum(index) + range_gets
    extra = round(billed * throttled_share / (1 - throttled_share)) if throttled_share else 0
    return RequestCount(
        gets=int((parts == 1).sum()) + index[0],
        ranged_gets=int(parts[parts > 1].sum()) + range_gets,
        heads=index[1],
        throttled=extra,
        bytes=int(sizes.sum()),
    )


def backlog_files(
    release: NDArray[np.int64], done: NDArray[np.int64], processes: int
) -> NDArray[np.int64]:
    """Per download of one node's list (in download order), the files its process is
    fetching when it starts: itself and the node's earlier downloads released and not yet
    complete at its release (all of them in flight at once, as the loader hands a window
    over), shared among ``processes``.

    The downloader counts a file when it starts it, so of a window handed over at once the
    first sees one file, the next two, and so on.
    """
    if not len(done):
        return np.zeros(0, np.int64)
    order = np.arange(len(done))
    # The link takes the list in order: ``done`` does not decrease along it.
    finished = np.minimum(np.searchsorted(done, release, side="left"), order)
    pending = order - finished
    files: NDArray[np.int64] = (1 + pending // max(processes, 1)).astype(np.int64)
    return files

"""The download settings, read in one place.

``STREAMX_DOWNLOAD_CONNECTIONS`` (default 32)
    HTTP connections the processes of a node (every rank and DataLoader worker downloading
    into the same cache directory) keep open at once. Object stores serve each GET at tens
    of MB/s, so bandwidth comes from parallel GETs: 32 at 40 MB/s each is about 1.3 GB/s.
``STREAMX_DOWNLOAD_THREADS`` (default: the connection count)
    Threads of one process's download pool. A thread waiting for a free connection costs
    nothing, so a process alone on the node may use every connection.
``STREAMX_DOWNLOAD_PART_SIZE`` (default 8 MiB)
    The largest byte range one GET fetches. A file larger than this is fetched as ranged
    GETs in parallel; parts shrink (down to 1 MiB) so that a file spreads over the
    connections, which is what makes a file needed now arrive quickly. Requests cost money,
    so a file spreads only over its share: the connections divided by the files the process
    fetches at that moment (a shard alone takes all of them, four look-ahead shards a
    quarter each, in parts four times as large). A file fetched ahead of its reader takes
    ``STREAMX_DOWNLOAD_AHEAD_PART_SIZE`` parts instead.
``STREAMX_DOWNLOAD_AHEAD_PART_SIZE`` (default 8 MiB)
    The part size of a file fetched ahead of its reader (a look-ahead shard): its deadline
    is far, and the other files in flight keep the connections busy, so it needs few
    parts (:mod:`~streamx.storage.part_plan`). Never below the part a file needed now gets.
``STREAMX_DOWNLOAD_SHARDS_AHEAD`` (default 4)
    Shards past the ``predownload`` window that each reading process fetches ahead (under a
    ``cache_limit``, only as many as fit). A predownload of a few batches rarely leaves
    the shard being read, and one shard in flight leaves most connections idle; ``0``
    fetches only the window. Twice as many while a store throttles this process: its
    pace limits how often requests start, not how many run, so more whole shards in flight
    (few large parts each) keep the link busy between the pace's slots.
``STREAMX_RANGE_READS`` (default 1)
    ``0`` turns range reads off: a sample of a remote shard still downloading is then served
    only once the whole shard has arrived (:mod:`~streamx.cache.range_reads`).
``STREAMX_MAX_INDEX_BYTES`` (default 1 GiB)
    The most bytes fetched for a file whose size nothing declares (``index.json``).
"""

from __future__ import annotations

import os

__all__ = [
    "DEFAULT_AHEAD_PART_SIZE",
    "DEFAULT_CONNECTIONS",
    "DEFAULT_MAX_INDEX_BYTES",
    "DEFAULT_PART_SIZE",
    "MIN_PART_SIZE",
    "PACED_AHEAD_FACTOR",
    "ahead_part_size",
    "download_connections",
    "download_threads",
    "max_index_bytes",
    "part_size",
    "range_reads_enabled",
    "shards_ahead",
]

MIN_PART_SIZE = 1 << 20
DEFAULT_CONNECTIONS = 32
DEFAULT_PART_SIZE = 8 << 20
# 16 MiB cost a third of the rate over HTTPS capped at 40 MB/s per connection (issue 26
# bench, one run); 8 MiB kept the rate there, and fetched more unthrottled.
DEFAULT_AHEAD_PART_SIZE = 8 << 20
_DEFAULT_SHARDS_AHEAD = 4
# A throttling store's pace spaces request starts, not connections: measured on the 503
# bench server (issue 26), 8 shards ahead instead of 4 read 19-40% faster.
PACED_AHEAD_FACTOR = 2


def _positive_env(name: str, default: int, least: int = 1) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    kind = "a positive" if least == 1 else "a non-negative"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be {kind} integer, got {raw!r}") from None
    if value < least:
        raise ValueError(f"{name} must be {kind} integer, got {raw!r}")
    return value


def download_connections() -> int:
    """Connections the node's downloading processes share (``STREAMX_DOWNLOAD_CONNECTIONS``).

    Raises:
        ValueError: If the variable is set to something other than a positive integer.
    """
    return _positive_env("STREAMX_DOWNLOAD_CONNECTIONS", DEFAULT_CONNECTIONS)


def download_threads() -> int:
    """Threads of one process's download pool (``STREAMX_DOWNLOAD_THREADS``).

    Raises:
        ValueError: If the variable is set to something other than a positive integer.
    """
    return _positive_env("STREAMX_DOWNLOAD_THREADS", download_connections())


def part_size(size: int, connections: int) -> int:
    """Bytes per ranged GET for a file of ``size`` bytes over ``connections`` connections.

    Raises:
        ValueError: If ``STREAMX_DOWNLOAD_PART_SIZE`` is not a positive integer.
    """
    largest = _positive_env("STREAMX_DOWNLOAD_PART_SIZE", DEFAULT_PART_SIZE)
    spread = -(-size // max(connections, 1))
    return max(min(largest, spread), min(MIN_PART_SIZE, largest))


def ahead_part_size() -> int:
    """Bytes per ranged GET of a file fetched ahead of its reader
    (``STREAMX_DOWNLOAD_AHEAD_PART_SIZE``).

    Raises:
        ValueError: If the variable is set to something other than a positive integer.
    """
    return _positive_env("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", DEFAULT_AHEAD_PART_SIZE)


def shards_ahead(paced: bool = False) -> int:
    """Shards past the predownload window fetched ahead (``STREAMX_DOWNLOAD_SHARDS_AHEAD``),
    ``PACED_AHEAD_FACTOR`` times as many while some host ``paced`` this process.

    Raises:
        ValueError: If the variable is set to something other than a non-negative integer.
    """
    ahead = _positive_env("STREAMX_DOWNLOAD_SHARDS_AHEAD", _DEFAULT_SHARDS_AHEAD, least=0)
    return ahead * PACED_AHEAD_FACTOR if paced else ahead


def range_reads_enabled() -> bool:
    """Whether samples may be read by range from a shard still downloading
    (``STREAMX_RANGE_READS``, on unless ``0``).

    Raises:
        ValueError: If the variable is set to something other than ``0`` or ``1``.
    """
    raw = os.environ.get("STREAMX_RANGE_READS", "1") or "1"
    if raw not in ("0", "1"):
        raise ValueError(f"STREAMX_RANGE_READS must be 0 or 1, got {raw!r}")
    return raw == "1"


DEFAULT_MAX_INDEX_BYTES = 1 << 30


def max_index_bytes() -> int:
    """The most bytes fetched for a file whose size nothing declares (``index.json``):
    ``STREAMX_MAX_INDEX_BYTES``, default 1 GiB.

    Raises:
        ValueError: If the variable is set to something other than a positive integer.
    """
    raw = os.environ.get("STREAMX_MAX_INDEX_BYTES")
    if not raw:
        return DEFAULT_MAX_INDEX_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"STREAMX_MAX_INDEX_BYTES must be a positive integer, got {raw!r}")
    return value

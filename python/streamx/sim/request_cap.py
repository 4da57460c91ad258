"""A server's request-rate limit met by streamx's downloader, played out request by request.

A store that admits a fixed number of requests per second per client (nginx's ``limit_req``
with its ``rate`` and ``burst``, S3's requests per second per prefix) answers 503 or 429 to
every request past that. What the node then achieves is not the admitted rate: it follows
from how the downloader sends and asks again (:mod:`streamx.storage.throttle`,
:mod:`streamx.storage.retry_budget`):

* a file's parts are sent at once, one thread each, so requests arrive in clumps; a bucket
  of ``burst + 1`` requests refilled at ``rate`` per second refuses all of a clump but the
  first few (nginx refuses a request that comes less than ``1 / rate`` after the last one
  it admitted, when ``burst`` is 0);
* a refused part's thread sleeps for the ``Retry-After`` plus up to 0.5 s of jitter (or the
  full-jitter backoff without one), holding no connection, and asks again;
* the reader takes files in order, so the look-ahead moves on only when the oldest file it
  holds is complete: one part asked again late holds up the files behind it;
* the host's adaptive limit halves on a refusal of a request sent after its last cut and
  grows by one per answer, so fewer requests are sent at once after refusals.

No closed formula gives the result of these rules together, so :func:`capped_link` plays
them out: a window of ``files`` files fetched at once (the loader's look-ahead), each of ``parts``
parts, moving on as its oldest file is complete, until ``total`` files are complete, over a few
fixed seeds (the simulation stays deterministic). It returns the bytes per second and the
share of requests refused, which the link model uses for the node's rate and for the
throttled requests' count. :func:`range_read_start` adds the throttled start: the first
chunk's shards reached one after another through range reads, each refused once.
"""

from __future__ import annotations

import functools
import heapq
import random
from collections import deque
from dataclasses import dataclass

__all__ = ["RANGE_READS_PER_SHARD", "CapResult", "capped_link", "range_read_start"]

# streamx.storage.throttle's waits: Retry-After plus uniform(0, 0.5), or a full-jitter
# backoff from 0.5 s doubling to 20 s.
_JITTER_S = 0.5
_BASE_S = 0.5
_CAP_S = 20.0
_SEEDS = (0, 1, 2)
# Past this many simulated seconds a run stops (a limit far below the demand).
_MOST_S = 3600.0


# A missing shard's first sample is read in place before its download (the shard's header,
# then the sample: ``STREAMX_RANGE_READS``), two requests one after the other.
RANGE_READS_PER_SHARD = 2


def range_read_start(
    chunk_shards: float, burst: int, share: float, retry_after: float | None
) -> float:
    """Seconds the first chunk's range reads add at the start, under a request-rate limit.

    Each process starts on its first chunk's shards one after another: for each, the header
    and then the sample are read in place, and only then does the shard's download begin
    (as nginx's log of a throttled run shows). Each read follows an admitted request within
    milliseconds, so with no ``burst`` the store refuses it (with one, it is refused as
    often as any request, ``share``) and it waits one throttled wait; its second try comes
    alone and is admitted. The processes of a node do this side by side.

    Examples:
        >>> range_read_start(4.0, 0, 0.5, 1.0)  # 4 shards x 2 reads x (1 s + 0.25 s)
        10.0
        >>> range_read_start(4.0, 10, 0.0, 1.0)
        0.0
    """
    refused = 1.0 if burst == 0 else share
    wait = retry_after + _JITTER_S / 2 if retry_after is not None else _BASE_S / 2
    return chunk_shards * RANGE_READS_PER_SHARD * refused * wait


@dataclass(frozen=True)
class CapResult:
    """What a node achieves against a request-rate limit.

    Attributes:
        bytes_per_s: Bytes of completed files per second of the whole run.
        throttled_share: The share of requests answered 503/429 (of all tries).
    """

    bytes_per_s: float
    throttled_share: float


@dataclass(frozen=True)
class _Server:
    rate: float
    burst: int
    rtt: float
    transfer: float  # seconds one admitted part takes on its connection
    retry_after: float | None


class _Bucket:
    """nginx's ``limit_req`` for one key: the requests in excess of the rate, kept (with the
    time) only when a request is admitted; a request that would leave more than ``burst``
    in excess is refused."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self.excess = 0.0
        self.last: float | None = None

    def admit(self, now: float) -> bool:
        if self.last is None:  # the key's first request
            self.last = now
            return True
        excess = max(0.0, self.excess - self.rate * (now - self.last) + 1.0)
        if excess > self.burst + 1e-9:
            return False
        self.excess, self.last = excess, now
        return True


def _wait(tries: int, retry_after: float | None, rng: random.Random) -> float:
    if retry_after is not None:
        return retry_after + rng.uniform(0, _JITTER_S)
    return rng.uniform(0, min(_CAP_S, _BASE_S * 2 ** (tries - 1)))


def _play(
    server: _Server, connections: int, files: int, parts: int, total: int, seed: int
) -> tuple[float, int, int]:
    """(seconds until ``total`` files are complete, tries, refused tries) for one seed."""
    rng = random.Random(seed)
    bucket = _Bucket(server.rate, server.burst)
    limit, cut_at = float(connections), -1.0
    running, tries, refused = 0, 0, 0
    ready: deque[tuple[int, int]] = deque()  # (file, throttled tries of the part)
    left: dict[int, int] = {}
    events: list[tuple[float, int, int, int, int, float]] = []  # time, seq, kind, file, n, sent
    seq, started, oldest, done, now = 0, 0, 0, 0, 0.0

    def start_file() -> None:
        nonlocal started
        left[started] = parts
        ready.extend((started, 0) for _ in range(parts))
        started += 1

    for _ in range(min(files, total)):
        start_file()
    while done < total and now < _MOST_S:
        while ready and running < min(int(limit), connections):
            file, n = ready.popleft()
            running += 1
            tries += 1
            seq += 1
            if bucket.admit(now):
                end = now + server.rtt + server.transfer
                heapq.heappush(events, (end, seq, 0, file, n, now))
            else:
                refused += 1
                heapq.heappush(events, (now + server.rtt, seq, 1, file, n, now))
        if not events:
            break
        now, _, kind, file, n, sent = heapq.heappop(events)
        if kind == 2:  # a refused part's thread wakes up
            ready.append((file, n))
            continue
        running -= 1
        if kind == 1:  # refused: halve the limit once per round, sleep, ask again
            if sent >= cut_at:
                limit, cut_at = max(1.0, limit / 2), now
            seq += 1
            wake = now + _wait(n + 1, server.retry_after, rng)
            heapq.heappush(events, (wake, seq, 2, file, n + 1, sent))
            continue
        if limit < connections and sent >= cut_at:
            limit = min(float(connections), limit + 1)
        left[file] -= 1
        # The reader takes files in order, and the look-ahead moves past a file only once
        # it is read: a complete file behind an incomplete one frees no room.
        while oldest < started and not left[oldest]:
            del left[oldest]
            oldest += 1
            done += 1
            if started < total:
                start_file()
    return now, tries, refused


@functools.lru_cache(maxsize=256)
def capped_link(
    rate: float,
    burst: int,
    connections: int,
    files: int,
    file_bytes: int,
    part: int,
    rtt: float,
    connection_rate: float,
    retry_after: float | None,
    total: int,
) -> CapResult:
    """The bytes per second and refused share of ``total`` files of ``file_bytes`` bytes,
    ``files`` at once in ``part``-byte GETs over ``connections`` connections of
    ``connection_rate`` bytes per second each, against ``rate`` requests per second (plus
    ``burst``), the mean over a few fixed seeds.

    Examples:
        >>> fast = capped_link(1000.0, 0, 32, 4, 8 << 20, 1 << 20, 0.0, 40e6, 1.0, 16)
        >>> round(fast.throttled_share, 2) > 0
        True
        >>> slow = capped_link(5.0, 0, 32, 4, 8 << 20, 1 << 20, 0.0, 40e6, 1.0, 16)
        >>> slow.bytes_per_s < fast.bytes_per_s
        True
    """
    parts = max(-(-file_bytes // max(part, 1)), 1)
    each = file_bytes / parts
    server = _Server(rate, burst, rtt, each / connection_rate, retry_after)
    seconds, tries, refused = 0.0, 0, 0
    for seed in _SEEDS:
        s, t, r = _play(server, connections, max(files, 1), parts, max(total, 1), seed)
        seconds, tries, refused = seconds + s, tries + t, refused + r
    runs = len(_SEEDS)
    rate_bytes = max(total, 1) * file_bytes * runs / seconds if seconds else float("inf")
    return CapResult(rate_bytes, refused / tries if tries else 0.0)

"""A node's two download rates from what its requests cost: caps, round trips, TLS,
throttling and decompression.

The link model (:mod:`~streamx.sim.network`) runs on two rates: ``bandwidth``, what the
node's look-ahead moves over every connection, and ``shard_bandwidth``, what one process
gets fetching one shard alone. :func:`link_rates` derives both from the request model:

* a GET of ``p`` bytes holds its connection for ``rtt + p / r`` seconds, where ``r`` is the
  connection's rate: its cap (``connection_bandwidth``), or its share of the node's
  ``bandwidth`` among the connections busy at once, whichever is lower;
* a share ``q`` of answers are throttled (503/429) and asked again after the downloader's
  wait (:mod:`streamx.storage.throttle`: the ``Retry-After`` plus up to 0.5 s of jitter,
  0.25 s on average; without one, a full-jitter backoff whose ceiling starts at 0.5 s and
  doubles per try up to 20 s). A request is throttled ``t`` times or more with probability
  ``q**t``, so it waits ``sum(q**t * wait(t))`` on average, plus ``rtt`` per throttled try;
* every connection of the node is busy for the look-ahead: ``bandwidth`` becomes
  ``connections * p / seconds(p)`` (at most the node's), with ``p`` the part of an average
  shard spread over the connections (:func:`~streamx.sim.requests.part_bytes`);
* one shard of a process's first chunk is ``n`` parts on its share of the connections
  (the chunk's ``k`` shards split them), in ``ceil(n / share)`` rounds:
  ``shard_bandwidth`` is its size over their time (at most the calibrated one, when
  ``streamx bench`` measured one);
* the look-ahead holds ``files_at_once`` files (the window's shards and ``shards_ahead``
  per process), each in parts of at least ``STREAMX_DOWNLOAD_AHEAD_PART_SIZE``: at most one
  part per connection moves at once, so a small window bounds ``bandwidth``; and a file the
  look-ahead starts lands no sooner than alone on the connections (``ahead_seconds``, one
  8 MB GET at 40 MB/s: 0.2 s, however fast the node), which the link model waits for
  (:class:`~streamx.sim.network.SlowStart`);
* a compressed shard is decompressed as it arrives, by the process that fetches it, at
  ``decompression`` output bytes per second: in download bytes that is ``decompression *
  zip / raw`` per process, a ceiling on both rates (the node's: per process at once);
* each process opens its connections at the start, in parallel: ``tls_handshake`` once,
  before the first download (kept-alive connections pay no more);
* a store that admits ``request_rate`` requests per second (plus ``request_burst``) caps
  both rates at what :func:`~streamx.sim.request_cap.capped_link` finds when the
  downloader's pace, its split of files while paced and its waits meet that limit: one
  shard's from a cold start (the first chunk: its first shard read by range, then the
  wait its refusals leave, which is added to the start), the node's for the files its
  look-ahead holds at once (``files_at_once``) on the paced host that start leaves. The
  refusals the look-ahead's play draws (its cold start included) are the throttled share
  the request count uses, and its GETs per file replace the calm split's parts in it.
  Once the first shard's range read gave way, the first chunk's shards download side by
  side, each started as its range reads give way, at the node's rate, their starts one
  slot of the first pace apart (``chunk_gap``).

At the defaults (no cap, no round trip, no throttling, free decompression) both rates are
left as given, so the model is the one mosaic's simulator runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from streamx.sim.config import SimConfig
from streamx.sim.request_cap import CapResult, capped_link
from streamx.sim.requests import part_bytes
from streamx.storage.request_pace import FIRST_PACE
from streamx.storage.settings import DEFAULT_AHEAD_PART_SIZE

__all__ = ["LinkRates", "ahead_seconds", "link_rates", "request_seconds", "throttle_wait"]

# streamx.storage.throttle's waits: Retry-After plus uniform(0, 0.5) jitter, or a
# full-jitter backoff from 0.5 s doubling to 20 s; the tries it gives up after.
_JITTER_S = 0.5
_BASE_S = 0.5
_CAP_S = 20.0
_TRIES = 10
# The most files the request-rate play runs (its cost grows with them).
_MOST_FILES = 256


@dataclass(frozen=True)
class LinkRates:
    """The rates a run's link model uses.

    Attributes:
        bandwidth: Bytes per second of a node's look-ahead over all its connections.
        shard_bandwidth: Bytes per second one process gets for one shard alone, ``None``
            when the model is neutral and nothing was calibrated (one rate, as mosaic).
        startup: Seconds before the first download (the TLS handshake; under a request-rate
            limit, the wait the first shard's refused part adds).
        throttled: Share of requests answered 503/429: ``throttled`` as given, or what the
            request-rate limit draws.
        gets_per_file: Under a request-rate limit, the GETs a look-ahead file takes once the
            host is paced; ``None``: as the calm split says.
        chunk_gap: Seconds between the starts of a process's first-chunk downloads: one
            slot of the first pace once its range reads gave way to a throttling host, else
            0 (they start together).
        ahead_seconds: Seconds one file fetched ahead takes alone, from its start to its
            last byte (its few large parts at the connection's rate, round trips
            included): a file the look-ahead starts lands no sooner, however fast the
            node; 0 when the model is neutral.
    """

    bandwidth: float
    shard_bandwidth: float | None
    startup: float
    throttled: float = 0.0
    gets_per_file: float | None = None
    chunk_gap: float = 0.0
    ahead_seconds: float = 0.0


def throttle_wait(share: float, retry_after: float | None) -> float:
    """Seconds one request waits on throttled answers, on average.

    Examples:
        >>> throttle_wait(0.0, 1.0)
        0.0
        >>> round(throttle_wait(0.5, 1.0), 3)  # (0.5 + 0.25 + ...) tries of 1.25 s
        1.248
    """
    if not share:
        return 0.0
    total = 0.0
    for tries in range(1, _TRIES):
        if retry_after is not None:
            wait = retry_after + _JITTER_S / 2
        else:
            wait = min(_CAP_S, _BASE_S * 2 ** (tries - 1)) / 2
        total += share**tries * wait
    return total


def request_seconds(part: float, rate: float, config: SimConfig) -> float:
    """Seconds one GET of ``part`` bytes holds its connection at ``rate`` bytes per second,
    throttled tries included.

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, synth_shards
        >>> c = SimConfig((SimStream(synth_shards(10, 10, 100)),), rtt=0.01)
        >>> request_seconds(4e6, 40e6, c)  # 10 ms, then 4 MB at 40 MB/s
        0.11
    """
    tries = config.throttled / (1 - config.throttled) if config.throttled else 0.0
    wait = throttle_wait(config.throttled, config.retry_after)
    return config.rtt * (1 + tries) + wait + part / rate


def _neutral(config: SimConfig) -> bool:
    return (
        config.connection_bandwidth is None
        and not config.rtt
        and not config.throttled
        and config.request_rate is None
    )


def _connection_rate(config: SimConfig, busy: int) -> float:
    share = config.bandwidth / max(busy, 1)
    cap = config.connection_bandwidth
    return share if cap is None else min(cap, share)


def _capped(
    config: SimConfig, size: int, files: int, total: int, cold: bool = False, reads: bool = False
) -> CapResult:
    """The request-rate limit's result for ``files`` files of ``size`` bytes at once (a
    ``cold`` host: a process's first chunk, its first shard read by range when ``reads``)."""
    assert config.request_rate is not None
    # The files after the first are the look-ahead's: few large parts (part_plan).
    part = max(
        part_bytes(size, max(config.connections // files, 1), config.part_size),
        DEFAULT_AHEAD_PART_SIZE,
    )
    # Under the limit few requests move bytes at once (the others wait to ask again), so a
    # part moves at its connection's cap; the node's rate bounds the result afterwards.
    rate = _connection_rate(config, 1)
    return capped_link(
        config.request_rate,
        config.request_burst,
        config.connections,
        files,
        size,
        part,
        config.rtt,
        rate,
        config.retry_after,
        total,
        cold,
        reads,
        config.devices * config.processes,
        part_bytes(size, config.connections, config.part_size),
    )


def ahead_seconds(config: SimConfig, size: int, files: int) -> float:
    """Seconds one ``size``-byte file fetched ahead takes, while its process's look-ahead
    holds ``files`` files: parts of at least ``DEFAULT_AHEAD_PART_SIZE`` (as
    :mod:`streamx.storage.part_plan`), on the file's share of the connections.

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, synth_shards
        >>> c = SimConfig((SimStream(synth_shards(10, 10, 8_000_000)),), bandwidth=1e10,
        ...               connection_bandwidth=40e6, rtt=0.01)
        >>> round(ahead_seconds(c, 8_000_000, 4), 3)  # one GET: 10 ms, then 8 MB at 40 MB/s
        0.21
        >>> round(ahead_seconds(c, 64_000_000, 4), 3)  # 8 parts of 8 MB on 8 connections
        0.22
    """
    share = max(config.connections // max(files, 1), 1)
    part = min(max(part_bytes(size, share, config.part_size), DEFAULT_AHEAD_PART_SIZE), size)
    parts = math.ceil(size / max(part, 1))
    rounds = math.ceil(parts / share)
    busy = min(config.connections, files * min(parts, share))
    return rounds * request_seconds(part, _connection_rate(config, busy), config)


def _in_flight_rate(config: SimConfig, size: int, files: int) -> float:
    """Bytes per second of ``files`` look-ahead files at once: their parts (at most one per
    connection) each at its connection's rate."""
    share = max(config.connections // max(files, 1), 1)
    part = min(max(part_bytes(size, share, config.part_size), DEFAULT_AHEAD_PART_SIZE), size)
    parts = min(math.ceil(size / max(part, 1)), share)
    busy = min(config.connections, files * parts)
    return busy * part / request_seconds(part, _connection_rate(config, busy), config)


def link_rates(
    config: SimConfig, files_at_once: int = 0, chunk_shards: float = 0.0, paced_extra: int = 0
) -> LinkRates:
    """The node's look-ahead rate, one shard's rate and the start-up the model adds;
    ``files_at_once`` is how many files the node's look-ahead fetches at once (0: not
    known, one under a ``request_rate``; otherwise it bounds the node's rate, each file
    taking :func:`ahead_seconds`),
    ``paced_extra`` how many more it fetches once the store throttles it (the loader looks
    further ahead while paced; only under a ``request_rate``) and ``chunk_shards`` how many
    shards a process's first chunk reads (they split the connections for one shard's rate,
    and under a ``request_rate`` their range reads start the host's pace)."""
    shards = config.shards
    download = shards.download_bytes
    size = max(float(download.mean()), 1.0) if len(download) else 1.0
    bandwidth, alone = config.bandwidth, config.shard_bandwidth
    throttled = config.throttled
    startup = config.tls_handshake
    gets: float | None = None
    gap = 0.0
    ahead = 0.0
    if not _neutral(config):
        part = part_bytes(math.ceil(size), config.connections, config.part_size)
        per_conn = part / request_seconds(
            part, _connection_rate(config, config.connections), config
        )
        bandwidth = min(bandwidth, config.connections * per_conn)
        # A process's first chunk fetches its shards at once, the connections split
        # between them (part_plan): one of them is that share's parts.
        together = max(round(chunk_shards), 1)
        share = max(config.connections // together, 1)
        part = part_bytes(math.ceil(size), share, config.part_size)
        parts = math.ceil(size / part)
        busy = min(parts * together, config.connections)
        rounds = math.ceil(parts / share)
        seconds = rounds * request_seconds(part, _connection_rate(config, busy), config)
        # A calibrated rate (measured without these costs, or with them) is an upper bound.
        alone = min(alone or math.inf, bandwidth, size / seconds)
    if config.request_rate is not None:
        whole, count = math.ceil(size), len(download)
        reads = chunk_shards > 0
        solo = _capped(config, whole, 1, min(count, 8) or 1, True, reads)
        if solo.refused:  # the store throttles the start: the look-ahead deepens
            files_at_once += paced_extra
        files = max(1, min(files_at_once, count, _MOST_FILES))
        total = max(1, min(count, max(4 * files, 16), _MOST_FILES))
        node = _capped(config, whole, files, total, True, reads)
        bandwidth = min(bandwidth, node.bytes_per_s)
        alone = min(alone or math.inf, solo.bytes_per_s, bandwidth)
        throttled = node.throttled_share
        gets = node.gets_per_file
        gap = 1.0 / FIRST_PACE if solo.reads_gave_way else 0.0
        startup += solo.start_delay
    if not _neutral(config):
        # A file fetched ahead lands no sooner than its parts move alone on the connections
        # (the link's bytes model the node's sharing); all ``files_at_once`` in flight,
        # split over the connections, move no more bytes per second than their parts at
        # once do.
        ahead = ahead_seconds(config, math.ceil(size), 1)
        if files_at_once > 0:
            bandwidth = min(bandwidth, _in_flight_rate(config, math.ceil(size), files_at_once))
    if config.decompression is not None and (shards.zip_bytes > 0).any():
        zipped = shards.zip_bytes > 0
        ratio = float(shards.zip_bytes[zipped].sum() / max(shards.raw_bytes[zipped].sum(), 1))
        one = config.decompression * ratio  # download bytes per second of one process
        processes = config.devices * config.processes
        bandwidth = min(bandwidth, processes * one)
        alone = min(alone, one) if alone is not None else None
    return LinkRates(float(bandwidth), alone, startup, throttled, gets, gap, ahead)

"""Simulate a run: plan every epoch with the Rust planner, then run the links over it.

A ``cache_limit`` below what the run holds at once switches to the LRU model
(:mod:`~streamx.sim.lru`): evictions and downloads again, step by step in Python.
"""

from __future__ import annotations

import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np
from numpy.typing import NDArray

from streamx.dataset.iteration import chunk_samples
from streamx.order.epoch import plan_config, plan_epoch
from streamx.order.world import World
from streamx.sim.config import SimConfig
from streamx.sim.first_chunks import first_chunk_ready
from streamx.sim.first_reads import first_now_files, range_read_gets, reads_by_range
from streamx.sim.link_model import link_rates
from streamx.sim.lru import node_uses, run_lru
from streamx.sim.network import LinkTrace, SlowStart, run_links
from streamx.sim.requests import backlog_files, count_requests
from streamx.sim.result import SimResult
from streamx.sim.schedule import NO_CHECK, Checks, NodeQueue, ShardOf, node_queue
from streamx.sim.window import window_samples
from streamx.storage.settings import DEFAULT_AHEAD_PART_SIZE, PACED_AHEAD_FACTOR

__all__ = ["epoch_order", "run_steps", "simulate"]

# Samples per epoch below which the node queues are built on the calling thread: a node's
# queue then takes a millisecond or so, about what starting threads for it costs.
_THREADED_SAMPLES = 1 << 18


def epoch_order(config: SimConfig, epoch: int) -> NDArray[np.int64]:
    """The whole world's ids for ``epoch``: (nodes, devices, workers, batches, batch).

    The very order training will read, from the same planner StreamingDataset uses.
    """
    world = World(config.nodes, config.devices, 0, config.processes)
    plan = plan_config(config.plan_streams(), config.settings(), epoch, 0, world)
    return plan_epoch(plan)


def run_steps(config: SimConfig) -> tuple[int, list[int]]:
    """(steps per epoch, steps run in each epoch), mosaic's count: full global batches."""
    epoch_size = sum(choose for _, choose, _ in config.plan_streams())
    per_epoch = epoch_size // (config.batch_size * config.devices * config.nodes)
    if per_epoch < 1:
        raise ValueError(
            f"An epoch of {epoch_size} samples holds no full global batch of "
            f"{config.batch_size} x {config.devices} devices x {config.nodes} nodes"
        )
    if config.max_batches is None:
        return per_epoch, [per_epoch] * config.epochs
    full, rest = divmod(config.max_batches, per_epoch)
    return per_epoch, [per_epoch] * full + ([rest] if rest else [])


def _cache_bound(
    queues: list[NodeQueue],
    last_use: list[NDArray[np.int64]],
    raw: NDArray[np.int64],
    done: NDArray[np.int64],
    steps: int,
) -> int:
    """The largest bytes any node holds in shards between their download and last use."""
    best, start = 0, 0
    for n, queue in enumerate(queues):
        got = done[start : start + len(queue.shards)]
        start += len(queue.shards)
        # Look-ahead past the last step that never completed is not in the cache.
        kept = got < steps
        got, shards = got[kept], queue.shards[kept]
        # A shard is held from its download until just after its last use.
        ends = np.maximum(last_use[n][shards], got) + 0.5
        times = np.concatenate([got.astype(np.float64), ends])
        sizes = raw[shards]
        deltas = np.concatenate([sizes, -sizes])
        order = np.argsort(times, kind="stable")
        if len(order):
            best = max(best, int(np.cumsum(deltas[order]).max()))
    return best


def _join(epochs: list[NodeQueue], first_steps: list[int]) -> NodeQueue:
    """One node's epochs as one list (checks renumbered into the joined list and run)."""
    starts = np.cumsum([0] + [len(q.shards) for q in epochs[:-1]])
    first, horizon, before = [], [], []
    for queue, start, step in zip(epochs, starts, first_steps):
        got = queue.checks.first
        first.append(np.where((got >= 0) & (got != NO_CHECK), got + start, got))
        horizon.append(np.where(queue.checks.horizon >= 0, queue.checks.horizon + step, -1))
        before.append(np.where(queue.checks.before >= 0, queue.checks.before + start, -1))
    return NodeQueue(
        np.concatenate([q.shards for q in epochs]),
        np.concatenate([q.need for q in epochs]),
        np.concatenate([q.release for q in epochs]),
        Checks(np.concatenate(first), np.concatenate(horizon), np.concatenate(before)),
    )


def _slow_start(
    config: SimConfig,
    queues: list[NodeQueue],
    ready: NDArray[np.float64] | None,
    chunk_shards: float,
    ahead_seconds: float = 0.0,
) -> SlowStart | None:
    """The loader's slow start (a chunk's missing shards before the look-ahead), when
    ``shard_bandwidth`` is calibrated."""
    if config.shard_bandwidth is None:
        return None
    # A worker missing its chunk's next shard fetches every shard of the chunk at once
    # (``chunk_shards`` of them on average), and every worker of every device does (the
    # link); but a step's shards are fetched by the one worker of each device that reads it.
    shard_rate = max(chunk_shards, 1.0) * config.shard_bandwidth
    processes = config.devices * config.processes
    return SlowStart(
        np.stack([q.checks.first for q in queues], axis=1),
        np.stack([q.checks.horizon for q in queues], axis=1),
        np.stack([q.checks.before for q in queues], axis=1),
        min(config.bandwidth, processes * shard_rate),
        min(config.bandwidth, config.devices * shard_rate),
        ready,
        ahead_seconds,
    )


def _first_round(
    config: SimConfig,
    ids: NDArray[np.int64],
    shard_of: ShardOf,
    chunk: int,
    steps: int,
    gap: float = 0.0,
) -> tuple[NDArray[np.float64], float]:
    """Per (step, node) of the first round, when its readers have their first chunks; and
    how many distinct shards a chunk fetches at once, on average over those first chunks
    (``gap``: seconds between a process's download starts, on a paced host)."""
    assert config.shard_bandwidth is not None  # a chunk is modelled only with it
    sizes = config.shards.download_bytes
    rates = (config.shard_bandwidth, config.bandwidth, gap)
    ready = np.stack(
        [first_chunk_ready(ids[n], shard_of, chunk, sizes, *rates) for n in range(config.nodes)],
        axis=1,
    )
    firsts = ids[0].reshape(-1, ids.shape[3] * ids.shape[4])
    counts = [len(np.unique(shard_of(row[row >= 0][:chunk]))) for row in firsts]
    if not counts:
        return ready[:steps], 1.0
    return ready[:steps], float(np.mean(counts))


def _chunk(config: SimConfig) -> int | None:
    """The loader's chunk, when the slow start is modelled."""
    if config.shard_bandwidth is None:
        return None
    shards = config.shards
    return chunk_samples(int(shards.raw_bytes.sum()), shards.num_samples)


def simulate(config: SimConfig) -> SimResult:
    """Simulates ``config``: step times, downloads and the cache it needs.

    Args:
        config: The run to simulate.

    Returns:
        The per-step trace and derived figures.

    Raises:
        ValueError: If the configuration is inconsistent (e.g. no full batch per epoch).

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, simulate, synth_shards
        >>> shards = synth_shards(100_000, 1_000, 50_000_000)
        >>> cfg = SimConfig((SimStream(shards),), nodes=2, devices=8, workers=4, batch_size=16)
        >>> result = simulate(cfg)
        >>> result.summary()["bytes_downloaded"] > 0
        True
    """
    began = time.perf_counter()
    asked = config
    # The first epoch's order says how many files the look-ahead holds at once (and, under
    # a request-rate limit, how the first chunks start); it is the first epoch's plan too.
    first_ids = epoch_order(config, 0)
    rates = link_rates(
        config,
        _files_at_once(config, first_ids),
        _first_chunk_shards(config, first_ids),
        _paced_extra(config),
    )
    # The request model only changes the rates the link runs at (the same values when
    # neutral): every step below reads them from ``config``.
    config = config.with_(
        bandwidth=rates.bandwidth,
        shard_bandwidth=rates.shard_bandwidth,
        startup_time=config.startup_time + rates.startup,
    )
    shards = config.shards
    num_shards = len(shards.samples)
    shard_of = shards.shard_of()
    per_epoch, epoch_steps = run_steps(config)
    present = [np.zeros(num_shards, bool) for _ in range(config.nodes)]
    last_use = [np.full(num_shards, -1, np.int64) for _ in range(config.nodes)]
    parts: list[list[NodeQueue]] = [[] for _ in range(config.nodes)]
    chunk = _chunk(config)
    # The window's reach in this order (``shards_ahead`` shards come soon when shuffled).
    window = window_samples(config, first_ids, shard_of)
    # The first epoch's first chunks: their range reads, and the downloads needed now.
    loader_chunk = chunk_samples(int(shards.raw_bytes.sum()), shards.num_samples)
    now = first_now_files(first_ids, shard_of, loader_chunk)
    range_gets = sum(range_read_gets(config, first_ids, shard_of, loader_chunk))
    first = [first_ids]  # the first epoch's plan, dropped once used (it can be large)
    del first_ids
    ready, chunk_shards = None, 1.0
    limited = config.limited
    reads: list[list[tuple[NDArray[np.int64], int, int]]] = [[] for _ in range(config.nodes)]
    # Nodes are independent and numpy releases the GIL in their array work: one thread per
    # CPU, unless the epochs are too small for threads to pay for their start.
    threads = min(config.nodes, os.cpu_count() or 1)
    if per_epoch * config.batch_size * config.devices * config.nodes < _THREADED_SAMPLES:
        threads = 1
    with ThreadPoolExecutor(max_workers=threads) if threads > 1 else nullcontext() as pool:
        for epoch, steps in enumerate(epoch_steps):
            ids = first.pop() if first else epoch_order(config, epoch)
            if epoch == 0 and chunk is not None:
                ready, chunk_shards = _first_round(
                    config, ids, shard_of, chunk, steps, rates.chunk_gap
                )
            args = [
                (
                    ids[n],
                    shard_of,
                    steps,
                    epoch * per_epoch,
                    window,
                    present[n],
                    last_use[n],
                    chunk,
                )
                for n in range(config.nodes)
            ]
            if pool is None:
                queued = [node_queue(*a) for a in args]
            else:
                queued = [f.result() for f in [pool.submit(node_queue, *a) for a in args]]
            for n, queue in enumerate(queued):
                if limited:
                    reads[n].append((ids[n], steps, epoch * per_epoch))
                parts[n].append(queue)
            del ids, args, queued
    queues = [_join(qs, [e * per_epoch for e in range(len(epoch_steps))]) for qs in parts]
    trace = run_links(
        queues,
        shards.download_bytes,
        sum(epoch_steps),
        config.step_compute_time,
        config.bandwidth,
        _slow_start(config, queues, ready, chunk_shards, rates.ahead_seconds),
        config.mosaic_rounding,
    )
    cache = _cache_bound(queues, last_use, shards.raw_bytes, trace.done_step, sum(epoch_steps))
    files = _files(config, queues, trace, sum(epoch_steps), now)
    if config.cache_limit and cache > config.cache_limit:
        uses = [node_uses(r, shard_of, window) for r in reads]
        trace, peak, _, fetched = run_lru(
            uses,
            shards.download_bytes,
            shards.raw_bytes,
            sum(epoch_steps),
            config.step_compute_time,
            config.bandwidth,
            config.cache_limit,
            config.mosaic_rounding,
        )
        # The LRU model does not track what is in flight: each shard counts as fetched
        # alone (the most requests).
        files = (fetched, np.ones(len(fetched), np.int64), np.zeros(len(fetched), bool))
        if peak > config.cache_limit:
            warnings.warn(
                f"cache_limit ({config.cache_limit:,} bytes) is below what single steps read at "
                f"once (up to {peak:,} bytes per node); streamx would fail to hold them",
                UserWarning,
                stacklevel=2,
            )
    step_times = trace.step_times
    if config.startup_time and len(step_times):
        # The loader starts its workers before anything is read or downloaded: every
        # step moves later by that much, so only the first step is longer.
        step_times = step_times.copy()
        step_times[0] += config.startup_time
    requests = count_requests(
        shards.download_bytes[files[0]],
        files[1],
        config.connections,
        config.part_size,
        _index_requests(config),
        rates.throttled,
        rates.gets_per_file,
        (files[2], DEFAULT_AHEAD_PART_SIZE),
        range_gets,
        reads_by_range(config)[files[0]],  # needed now after range reads: ramped parts
    )
    return SimResult(
        asked,
        step_times,
        trace.step_bytes,
        trace.stall,
        cache,
        time.perf_counter() - began,
        requests,
        per_epoch,
    )


def _files_at_once(config: SimConfig, ids: NDArray[np.int64] | None) -> int:
    """Files one node's look-ahead holds at once as its first epoch starts: per process, the
    shards of its first ``predownload`` samples (a shuffled order spreads them over many)
    and the ``shards_ahead`` past them; 1 without ``ids``."""
    if ids is None:
        return 1
    window = config.predownload if config.predownload is not None else 8 * config.batch_size
    shard_of = config.shards.shard_of()
    node = ids[0].reshape(ids.shape[1] * ids.shape[2], -1)
    files = 0
    for row in node:
        row = row[row >= 0][: max(window, 1)]
        files += len(np.unique(shard_of(row))) + config.shards_ahead if len(row) else 0
    return max(files, 1)


def _paced_extra(config: SimConfig) -> int:
    """Files one node's look-ahead adds while a store paces it: each process fetches
    ``PACED_AHEAD_FACTOR`` times its ``shards_ahead`` then."""
    processes = config.devices * config.processes
    return processes * config.shards_ahead * (PACED_AHEAD_FACTOR - 1)


def _first_chunk_shards(config: SimConfig, ids: NDArray[np.int64] | None) -> float:
    """Distinct shards of a process's first chunk, on average over the first node's
    processes (they read side by side); 0 without ``ids``."""
    if ids is None:
        return 0.0
    shards = config.shards
    chunk = chunk_samples(int(shards.raw_bytes.sum()), shards.num_samples)
    shard_of = shards.shard_of()
    firsts = ids[0].reshape(-1, ids.shape[3] * ids.shape[4])
    counts = [len(np.unique(shard_of(row[row >= 0][:chunk]))) for row in firsts]
    return float(np.mean(counts)) if counts else 0.0


def _index_requests(config: SimConfig) -> tuple[int, int]:
    """(GETs, HEADs) of the index files: each stream's, on every node."""
    files = len(config.streams) * config.nodes
    return files * min(config.index_requests, 1), files * max(config.index_requests - 1, 0)


def _files(
    config: SimConfig, queues: list[NodeQueue], trace: LinkTrace, steps: int, now: list[int]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """(shard, files its process fetched at once, whether fetched ahead) of every download
    completed in the run: one file for a shard fetched alone (the loader's slow start), the
    backlog for the look-ahead's (:func:`~streamx.sim.requests.backlog_files`). A node's
    first ``now`` downloads (its processes' first two chunks,
    :func:`~streamx.sim.first_reads.first_now_files`) are needed now; the later ones are
    fetched ahead."""
    processes = config.devices * config.processes
    sizes = config.shards.download_bytes
    shards, files, ahead, start = [], [], [], 0
    for n, queue in enumerate(queues):
        got = trace.done_step[start : start + len(queue.shards)]
        start += len(queue.shards)
        kept = got < steps
        count = backlog_files(queue.release[kept], got[kept], processes)
        if trace.ahead_end is not None:
            ends = trace.ahead_end[got[kept], n]
            count = np.where(_byte_starts(queues, sizes, n)[kept] < ends, count, 1)
        shards.append(queue.shards[kept])
        files.append(count)
        ahead.append(np.arange(len(count)) >= max(now[n], 1))
    # A process's pool has one thread per connection: no more files at once.
    most = np.minimum(np.concatenate(files), config.connections)
    return np.concatenate(shards), most, np.concatenate(ahead)


def _byte_starts(
    queues: list[NodeQueue], sizes: NDArray[np.int64], node: int
) -> NDArray[np.float64]:
    """Where each of ``node``'s downloads starts in the concatenated lists' bytes (the
    coordinates of :attr:`LinkTrace.ahead_end`)."""
    before = sum(float(sizes[q.shards].sum()) for q in queues[:node])
    own = sizes[queues[node].shards].astype(np.float64)
    starts = before + np.concatenate([[0.0], np.cumsum(own)[:-1]])
    return starts.astype(np.float64)

"""A simulated run: the cluster, the timing model and the dataset settings, as one value."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from streamx.dataset.weights import derive_weights, validate_weights
from streamx.order.settings import (
    BatchingMethod,
    EpochSettings,
    PartitionAlgo,
    PlanStream,
    SamplingMethod,
    ShuffleAlgo,
)
from streamx.sim.calibrate import loader_step_time
from streamx.sim.requests import DEFAULT_CONNECTIONS, DEFAULT_PART_SIZE, S3_GET_PER_1000
from streamx.sim.shard_table import ShardTable
from streamx.sim.units import MAX_BYTES, MAX_COUNT, check_finite

__all__ = ["SimConfig", "SimStream"]


def _check_int(name: str, value: object, minimum: int, maximum: int = MAX_COUNT) -> None:
    """Refuses a non-integer or out-of-range ``value``, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"`{name}` must be a whole number, got {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"`{name}` must be between {minimum} and {maximum:,}, got {value!r}")


def _check_float(name: str, value: object, *, positive: bool) -> None:
    """Refuses NaN, infinities, negatives (and zero when ``positive``), naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"`{name}` must be a number, got {value!r}")
    check_finite(name, float(value))
    if value < 0 or (positive and value == 0):
        raise ValueError(f"`{name}` must be {'> 0' if positive else '>= 0'}, got {value!r}")


class _Weights:
    """A stream's weights as :func:`derive_weights` reads them: attributes only when given."""

    proportion: float
    repeat: float
    choose: int


@dataclass(frozen=True)
class SimStream:
    """One stream of the simulated dataset.

    Attributes:
        shards: Its shard table.
        proportion: Relative weight, as ``Stream(proportion=...)``.
        repeat: Absolute up/down-sampling factor, as ``Stream(repeat=...)``.
        choose: Absolute samples per epoch, as ``Stream(choose=...)``.
    """

    shards: ShardTable
    proportion: float | None = None
    repeat: float | None = None
    choose: int | None = None

    def __post_init__(self) -> None:
        for key in ("proportion", "repeat"):
            if getattr(self, key) is not None:
                _check_float(key, getattr(self, key), positive=True)
        if self.choose is not None:
            _check_int("choose", self.choose, 0)


@dataclass(frozen=True)
class SimConfig:
    """Everything one simulation depends on.

    Attributes:
        streams: The dataset's streams.
        nodes: Physical nodes.
        devices: Devices (ranks) per node.
        workers: DataLoader workers per device; 0 reads in the training process (torch's
            ``num_workers=0``), which then loads each sample before its step (the loader's
            cost adds to the model's) and plans as one worker, as mosaic does.
        batch_size: Per-device batch size.
        time_per_sample: Seconds a device spends on one sample (the model's, when
            ``loader_time_per_sample`` is given).
        loader_time_per_sample: Seconds one DataLoader worker takes to deliver a sample
            from a warm cache (``--calibrate``: what ``streamx bench``'s DataLoader
            delivered, per worker); the ``workers`` share it, so a step takes at least
            ``loader_time_per_sample / workers`` per sample. ``None``: the loader is free,
            as in mosaic's simulator.
        loader_time_per_byte: Seconds one loader process loses per byte it downloads: the
            node's cores decrypt TLS, copy bodies (and serve them, when the server shares
            the node) beside the decoding (``--calibrate``: what ``streamx bench``'s
            DataLoader lost per byte downloaded beside it, per worker). Each sample's loader
            time grows by this times its share of the download (the dataset's download bytes
            per sample; when the cache holds the dataset only the first epoch downloads, so a
            run of more epochs spreads it over them; a ``cache_limit`` below it re-downloads
            every epoch). ``None``: downloading costs the loader nothing.
        bandwidth: Download bytes per second of each node.
        shard_bandwidth: Bytes per second one process gets fetching one shard alone, as
            streamx's loader does while the shard it reads next is missing (``streamx
            bench`` measures it). ``None`` runs every download at ``bandwidth``, as
            mosaic's simulator does.
        startup_time: Seconds before the first step can start and any download begins: the
            DataLoader starting its workers (``--calibrate`` takes what ``streamx bench``
            measured from a warm cache). 0 by default, as in mosaic's simulator.
        epochs: Epochs to run (ignored when ``max_batches`` is set).
        max_batches: Stop after this many global batches, if given.
        predownload: Samples each worker downloads ahead; ``None`` is ``8 * batch_size``.
        cache_limit: Bytes a node's cache may hold; ``None`` or ``0`` means unlimited.
        epoch_size: Samples per epoch across streams (``None``: from the weights).
        shuffle: Whether samples are shuffled (off by default, as in StreamingDataset).
        shuffle_algo: The shuffle algorithm.
        shuffle_seed: The shuffle seed.
        shuffle_block_size: Shuffle block size (``None``: mosaic's default).
        num_canonical_nodes: Canonical nodes (``None``: mosaic's default).
        partition_algo: The partition algorithm.
        batching_method: How batches draw from streams.
        sampling_method: How streams are subsampled.
        sampling_granularity: Samples drawn from one shard at a time when subsampling.
        mosaic_rounding: Drop each node's download wait per step to whole seconds, as
            mosaic's simulator does (it keeps waits in an integer array); for parity runs.
        connections: HTTP connections a node's processes share
            (``STREAMX_DOWNLOAD_CONNECTIONS``): they split files into parts and, with
            ``connection_bandwidth``, bound the node's rate.
        part_size: The largest ranged GET in bytes (``STREAMX_DOWNLOAD_PART_SIZE``).
        connection_bandwidth: Bytes per second one connection gets (a server's or a store's
            per-request cap); ``None``: no cap.
        rtt: Seconds each request waits before its first byte (round trip, server latency).
        tls_handshake: Seconds a new TLS connection takes before its first request.
        throttled: Share of requests answered 503 or 429 and asked again (0 to < 1).
        retry_after: The ``Retry-After`` seconds throttled answers carry; ``None``: none, so
            the downloader's full-jitter backoff (:mod:`streamx.storage.throttle`).
        request_rate: Requests per second the store admits from a node (nginx's
            ``limit_req`` rate, a store's per-prefix limit), answering 503/429 past it;
            ``None``: no limit. The model then finds the throttled share itself
            (:mod:`~streamx.sim.request_cap`), so ``throttled`` stays 0.
        request_burst: Requests past ``request_rate`` the store admits in a burst
            (``limit_req``'s ``burst``); 0 by default.
        decompression: Bytes per second one process decompresses a compressed shard at
            (output bytes); ``None``: free.
        price_per_1000: Dollars per 1,000 GET or HEAD requests (S3 Standard's by default).
        index_requests: Requests for each stream's ``index.json`` per node: 1 (one GET, as
            streamx fetches it from any remote); 2 models a loader that sends a HEAD first.
        shards_ahead: Shards past the ``predownload`` window each process fetches ahead
            (``STREAMX_DOWNLOAD_SHARDS_AHEAD``: streamx's loader fetches 4); modelled as that
            many average shards' samples added to the window. 0 by default, as mosaic.
        (:mod:`~streamx.sim.link_model`: these fields at their defaults change nothing.)
    """

    streams: tuple[SimStream, ...]
    nodes: int = 1
    devices: int = 8
    workers: int = 8
    batch_size: int = 32
    time_per_sample: float = 0.01
    loader_time_per_sample: float | None = None
    loader_time_per_byte: float | None = None
    bandwidth: float = 100e6
    shard_bandwidth: float | None = None
    startup_time: float = 0.0
    epochs: int = 1
    max_batches: int | None = None
    predownload: int | None = None
    cache_limit: int | None = None
    epoch_size: int | None = None
    shuffle: bool = False
    shuffle_algo: ShuffleAlgo = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    num_canonical_nodes: int | None = None
    partition_algo: PartitionAlgo = "relaxed"
    batching_method: BatchingMethod = "random"
    sampling_method: SamplingMethod = "balanced"
    sampling_granularity: int = 1
    mosaic_rounding: bool = False
    connections: int = DEFAULT_CONNECTIONS
    part_size: int = DEFAULT_PART_SIZE
    connection_bandwidth: float | None = None
    rtt: float = 0.0
    tls_handshake: float = 0.0
    throttled: float = 0.0
    retry_after: float | None = None
    request_rate: float | None = None
    request_burst: int = 0
    decompression: float | None = None
    price_per_1000: float = S3_GET_PER_1000
    shards_ahead: int = 0
    index_requests: int = 1
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for key in ("nodes", "devices", "batch_size", "epochs"):
            _check_int(key, getattr(self, key), 1)
        _check_int("workers", self.workers, 0)
        for key in ("max_batches", "predownload", "epoch_size", "num_canonical_nodes"):
            if getattr(self, key) is not None:
                _check_int(key, getattr(self, key), 0 if key == "predownload" else 1)
        if self.shuffle_block_size is not None:
            _check_int("shuffle_block_size", self.shuffle_block_size, 1)
        _check_int("sampling_granularity", self.sampling_granularity, 1)
        _check_int("shuffle_seed", self.shuffle_seed, 0)
        if self.cache_limit is not None:
            _check_int("cache_limit", self.cache_limit, 0, MAX_BYTES)
        _check_float("time_per_sample", self.time_per_sample, positive=False)
        for key in ("loader_time_per_sample", "loader_time_per_byte"):
            if getattr(self, key) is not None:
                _check_float(key, getattr(self, key), positive=False)
        _check_float("startup_time", self.startup_time, positive=False)
        _check_float("bandwidth", self.bandwidth, positive=True)
        if self.shard_bandwidth is not None:
            _check_float("shard_bandwidth", self.shard_bandwidth, positive=True)
        _check_int("connections", self.connections, 1)
        _check_int("shards_ahead", self.shards_ahead, 0)
        _check_int("index_requests", self.index_requests, 0, 2)
        _check_int("part_size", self.part_size, 1, MAX_BYTES)
        _check_int("request_burst", self.request_burst, 0)
        for key in ("connection_bandwidth", "decompression", "retry_after", "request_rate"):
            if getattr(self, key) is not None:
                _check_float(key, getattr(self, key), positive=True)
        for key in ("rtt", "tls_handshake", "price_per_1000", "throttled"):
            _check_float(key, getattr(self, key), positive=False)
        if self.throttled >= 1:
            raise ValueError(f"`throttled` must be a share below 1, got {self.throttled!r}")
        if self.throttled and self.request_rate is not None:
            raise ValueError(
                "give `request_rate` (the model finds the throttled share) or `throttled` "
                "(a share measured elsewhere), not both"
            )
        if not isinstance(self.shuffle, bool):
            raise ValueError(f"`shuffle` must be true or false, got {self.shuffle!r}")
        if not self.streams:
            raise ValueError("A simulation needs at least one stream")

    @property
    def limited(self) -> bool:
        """Whether a cache limit is in force (``None`` and ``0`` mean none, as in mosaic)."""
        return bool(self.cache_limit)

    @property
    def shards(self) -> ShardTable:
        """All streams' shards, numbered globally."""
        return ShardTable.concat([s.shards for s in self.streams])

    @property
    def predownload_samples(self) -> int:
        """The predownload in force (mosaic's default is eight batches), and the samples of
        ``shards_ahead`` average shards past it."""
        window = self.predownload if self.predownload is not None else 8 * self.batch_size
        if self.shards_ahead:
            shards = self.shards
            window += self.shards_ahead * -(-shards.num_samples // max(len(shards.samples), 1))
        return window

    @property
    def processes(self) -> int:
        """Loader processes per device: its ``workers``, or the training process itself."""
        return max(self.workers, 1)

    @property
    def step_time_per_sample(self) -> float:
        """A device's seconds per sample with its ``workers``: the model's, or the loader's
        share per worker when that is slower (added to the model's without workers).

        Examples:
            >>> from streamx.sim import synth_shards
            >>> run = SimConfig((SimStream(synth_shards(100, 10, 1000)),), workers=2,
            ...                 time_per_sample=0.001, loader_time_per_sample=0.02)
            >>> run.step_time_per_sample, run.with_(workers=4).step_time_per_sample
            (0.01, 0.005)
            >>> run.with_(workers=0).step_time_per_sample
            0.021
        """
        if self.loader_time_per_sample is None and self.loader_time_per_byte is None:
            return self.time_per_sample
        loader = (self.loader_time_per_sample or 0.0) + self.download_time_per_sample
        return loader_step_time(self.time_per_sample, loader, self.workers)

    @property
    def download_time_per_sample(self) -> float:
        """Seconds a loader process spends per sample it reads on that sample's share of the
        run's download (``loader_time_per_byte``; see there).

        Examples:
            >>> from streamx.sim import synth_shards
            >>> run = SimConfig((SimStream(synth_shards(100, 10, 10_000)),),
            ...                 loader_time_per_byte=1e-6)  # 1,000 bytes per sample
            >>> run.download_time_per_sample, run.with_(epochs=4).download_time_per_sample
            (0.001, 0.00025)
        """
        if not self.loader_time_per_byte:
            return 0.0
        shards = self.shards
        samples = max(shards.num_samples, 1)
        per_sample = float(shards.download_bytes.sum()) / samples
        if self.max_batches is not None:
            run = self.max_batches * self.batch_size * self.devices * self.nodes
        else:
            run = self.epochs * (self.epoch_size or samples)
        # A cache limit below the dataset evicts, so each epoch downloads again.
        evicts = self.limited and (self.cache_limit or 0) < int(shards.raw_bytes.sum())
        cold = 1.0 if evicts else min(1.0, samples / max(run, 1))
        return self.loader_time_per_byte * per_sample * cold

    @property
    def step_compute_time(self) -> float:
        """Seconds of one step when no download holds it up (devices run in parallel)."""
        return self.batch_size * self.step_time_per_sample

    def with_(self, **changes: object) -> SimConfig:
        """A copy with some fields changed (for side-by-side comparisons)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def settings(self) -> EpochSettings:
        """The order settings, resolved for this node count as StreamingDataset does."""
        return EpochSettings(
            batch_size=self.batch_size,
            shuffle=self.shuffle,
            shuffle_algo=self.shuffle_algo,
            shuffle_seed=self.shuffle_seed,
            shuffle_block_size=self.shuffle_block_size,
            num_canonical_nodes=self.num_canonical_nodes,
            initial_physical_nodes=None,
            partition_algo=self.partition_algo,
            batching_method=self.batching_method,
            sampling_method=self.sampling_method,
            sampling_granularity=self.sampling_granularity,
        ).resolve(None, self.nodes)

    def plan_streams(self) -> list[PlanStream]:
        """Streams with their per-epoch sample counts, as the planner takes them."""
        weighted = []
        for stream in self.streams:
            obj = _Weights()
            for key in ("proportion", "repeat", "choose"):
                if getattr(stream, key) is not None:
                    setattr(obj, key, getattr(stream, key))
            weighted.append(obj)
        relative, unspecified = validate_weights(weighted)
        samples = np.array([s.shards.num_samples for s in self.streams], np.int64)
        derive_weights(weighted, samples, self.epoch_size, self.shuffle_seed, relative, unspecified)
        return [
            (s.shards.samples.tolist(), int(w.choose), float(w.proportion))
            for s, w in zip(self.streams, weighted)
        ]

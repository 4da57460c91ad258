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
from streamx.sim.shards import ShardTable

__all__ = ["SimConfig", "SimStream"]


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


@dataclass(frozen=True)
class SimConfig:
    """Everything one simulation depends on.

    Attributes:
        streams: The dataset's streams.
        nodes: Physical nodes.
        devices: Devices (ranks) per node.
        workers: DataLoader workers per device.
        batch_size: Per-device batch size.
        time_per_sample: Seconds a device spends on one sample.
        bandwidth: Download bytes per second of each node.
        shard_bandwidth: Bytes per second one process gets fetching one shard alone, as
            streamx's loader does while the shard it reads next is missing (``streamx
            bench`` measures it). ``None`` runs every download at ``bandwidth``, as
            mosaic's simulator does.
        epochs: Epochs to run (ignored when ``max_batches`` is set).
        max_batches: Stop after this many global batches, if given.
        predownload: Samples each worker downloads ahead; ``None`` is ``8 * batch_size``.
        cache_limit: Bytes a node's cache may hold; ``None`` means unlimited.
        epoch_size: Samples per epoch across streams (``None``: from the weights).
        shuffle: Whether samples are shuffled.
        shuffle_algo: The shuffle algorithm.
        shuffle_seed: The shuffle seed.
        shuffle_block_size: Shuffle block size (``None``: mosaic's default).
        num_canonical_nodes: Canonical nodes (``None``: mosaic's default).
        partition_algo: The partition algorithm.
        batching_method: How batches draw from streams.
        sampling_method: How streams are subsampled.
        sampling_granularity: Samples drawn from one shard at a time when subsampling.
    """

    streams: tuple[SimStream, ...]
    nodes: int = 1
    devices: int = 8
    workers: int = 8
    batch_size: int = 32
    time_per_sample: float = 0.01
    bandwidth: float = 100e6
    shard_bandwidth: float | None = None
    epochs: int = 1
    max_batches: int | None = None
    predownload: int | None = None
    cache_limit: int | None = None
    epoch_size: int | None = None
    shuffle: bool = True
    shuffle_algo: ShuffleAlgo = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    num_canonical_nodes: int | None = None
    partition_algo: PartitionAlgo = "relaxed"
    batching_method: BatchingMethod = "random"
    sampling_method: SamplingMethod = "balanced"
    sampling_granularity: int = 1
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for key in ("nodes", "devices", "workers", "batch_size", "epochs"):
            if getattr(self, key) < 1:
                raise ValueError(f"`{key}` must be at least 1, got {getattr(self, key)}")
        if self.time_per_sample < 0 or self.bandwidth <= 0:
            raise ValueError(
                f"`time_per_sample` must be >= 0 and `bandwidth` > 0, got "
                f"{self.time_per_sample} and {self.bandwidth}"
            )
        if self.shard_bandwidth is not None and self.shard_bandwidth <= 0:
            raise ValueError(f"`shard_bandwidth` must be > 0, got {self.shard_bandwidth}")
        if not self.streams:
            raise ValueError("A simulation needs at least one stream")

    @property
    def shards(self) -> ShardTable:
        """All streams' shards, numbered globally."""
        return ShardTable.concat([s.shards for s in self.streams])

    @property
    def predownload_samples(self) -> int:
        """The predownload in force (mosaic's default is eight batches)."""
        return self.predownload if self.predownload is not None else 8 * self.batch_size

    @property
    def step_compute_time(self) -> float:
        """Seconds of one step when no download holds it up (devices run in parallel)."""
        return self.batch_size * self.time_per_sample

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

"""Oracles for the epoch-order parity tests: the same configuration run through both libraries.

The world-shape sweeps do not build mosaicml-streaming ``StreamingDataset`` objects (each one
leaks descriptors and shared memory). Its ``generate_work`` only reads a handful of dataset
attributes and calls ``dataset.resample_streams``, so both libraries are driven through a
plain namespace carrying those attributes, with each library's own ``Stream`` objects and
weighting code deriving ``choose``/``proportion``.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import NDArray

import streamx.dataset.stream
from streamx import _core
from streamx.order.epoch import plan_config
from streamx.order.settings import EpochSettings, PlanConfig
from streamx.order.world import World as XWorld

# Weight of one stream: ("proportion", 0.5), ("repeat", 1.5), ("choose", 30) or None.
Weight = tuple[str, float] | None


@dataclass(frozen=True)
class OrderSpec:
    """One dataset configuration, as both libraries' order code sees it."""

    shards: tuple[tuple[int, ...], ...]  # shard sizes, per stream
    weights: tuple[Weight, ...] = ()
    epoch_size: int | None = None
    seed: int = 9176
    shuffle: bool = True
    shuffle_algo: str = "py1e"
    shuffle_block_size: int = 1 << 18
    num_canonical_nodes: int = 1
    partition_algo: str = "relaxed"
    batching_method: str = "random"
    batch_size: int = 1
    initial_physical_nodes: int | None = None
    sampling_method: str = "balanced"
    sampling_granularity: int = 1
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def with_(self, **changes: Any) -> OrderSpec:
        """A copy with some fields replaced."""
        return replace(self, **changes)


def _make_streams(cls: Any, spec: OrderSpec) -> list[Any]:
    weights = spec.weights or (None,) * len(spec.shards)
    streams = []
    for i, weight in enumerate(weights):
        kwargs = {} if weight is None else {weight[0]: weight[1]}
        streams.append(cls(local=f"/nonexistent/streamx-order/{i}", **kwargs))
    return streams


def _namespace(spec: OrderSpec, streams: list[Any]) -> SimpleNamespace:
    sizes = np.array([s for stream in spec.shards for s in stream], np.int64)
    per_stream = np.array([len(s) for s in spec.shards], np.int64)
    samples_per_stream = np.array([sum(s) for s in spec.shards], np.int64)
    return SimpleNamespace(
        streams=streams,
        num_streams=len(streams),
        shard_offset_per_stream=per_stream.cumsum() - per_stream,
        shards_per_stream=per_stream,
        samples_per_shard=sizes,
        sample_offset_per_shard=sizes.cumsum() - sizes,
        samples_per_stream=samples_per_stream,
        shuffle_seed=spec.seed,
        shuffle=spec.shuffle,
        shuffle_algo=spec.shuffle_algo,
        shuffle_block_size=spec.shuffle_block_size,
        num_canonical_nodes=spec.num_canonical_nodes,
        partition_algo=spec.partition_algo,
        batching_method=spec.batching_method,
        batch_size=spec.batch_size,
        initial_physical_nodes=spec.initial_physical_nodes,
        sampling_method=spec.sampling_method,
        sampling_granularity=spec.sampling_granularity,
        epoch_seed_change=spec.shuffle and spec.sampling_method == "balanced",
    )


def mosaic_dataset(spec: OrderSpec) -> SimpleNamespace:
    """What mosaicml-streaming's ``generate_work`` needs of a dataset, built by its own code."""
    import streaming
    from streaming.base.dataset import StreamingDataset

    streams = _make_streams(streaming.Stream, spec)
    ns = _namespace(spec, streams)
    ns.epoch_size = streaming.Stream.apply_weights(
        streams, ns.samples_per_stream, spec.epoch_size, spec.seed
    )
    # The namespace stands in for the dataset as upstream's method's ``self``.
    ns.resample_streams = functools.partial(StreamingDataset.resample_streams, ns)  # type: ignore[arg-type]
    return ns


def streamx_settings(spec: OrderSpec) -> EpochSettings:
    """The resolved epoch settings of this configuration."""
    return EpochSettings(
        batch_size=spec.batch_size,
        shuffle=spec.shuffle,
        shuffle_algo=spec.shuffle_algo,  # type: ignore[arg-type]  # invalid ones are tested too
        shuffle_seed=spec.seed,
        shuffle_block_size=spec.shuffle_block_size,
        num_canonical_nodes=spec.num_canonical_nodes,
        initial_physical_nodes=spec.initial_physical_nodes,
        partition_algo=spec.partition_algo,  # type: ignore[arg-type]
        batching_method=spec.batching_method,  # type: ignore[arg-type]
        sampling_method=spec.sampling_method,  # type: ignore[arg-type]
        sampling_granularity=spec.sampling_granularity,
    )


def streamx_streams(spec: OrderSpec) -> tuple[list[streamx.dataset.stream.Stream], int]:
    """streamx's streams of this configuration, weighted by its own code, and the epoch size."""
    streams = _make_streams(streamx.dataset.stream.Stream, spec)
    samples_per_stream = np.array([sum(s) for s in spec.shards], np.int64)
    epoch_size = streamx.dataset.stream.apply_weights(
        streams, samples_per_stream, spec.epoch_size, spec.seed
    )
    return streams, epoch_size


def streamx_plan_streams(spec: OrderSpec) -> list[tuple[list[int], int, float]]:
    """Each stream's shard sizes and weights, the weights derived by streamx's own code."""
    streams, _ = streamx_streams(spec)
    return [
        (list(sizes), int(stream.choose), float(stream.proportion))
        for sizes, stream in zip(spec.shards, streams)
    ]


@dataclass
class Outcome:
    """A call's result (or exception type) plus the ``UserWarning`` messages it emitted."""

    value: Any = None
    error: type[BaseException] | None = None
    message: str = ""
    warnings: list[str] = field(default_factory=list)


def capture(fn: Callable[[], Any]) -> Outcome:
    """Runs ``fn`` recording its result or exception and its user warnings."""
    out = Outcome()
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out.value = fn()
            except Exception as err:
                out.error, out.message = type(err), str(err)
    finally:
        logging.disable(logging.NOTSET)
    out.warnings = [_squash(str(w.message)) for w in caught if issubclass(w.category, UserWarning)]
    return out


def _squash(message: str) -> str:
    """Collapses whitespace (upstream wraps some messages with backslash continuations)."""
    return " ".join(message.split())


def emit(messages: Sequence[tuple[str, bool]]) -> None:
    """Re-emits ``_core`` warnings as ``streamx.order.epoch`` does (user ones as UserWarning)."""
    for message, is_user in messages:
        if is_user:
            warnings.warn(message, UserWarning, stacklevel=2)


def assert_same_outcome(mosaic: Outcome, ours: Outcome, what: str) -> None:
    """Equal values (or both raising) and equal user warnings."""
    if mosaic.error is not None:
        assert ours.error is not None, f"{what}: streaming raised {mosaic.error} ({mosaic.message})"
        # streaming raises KeyError for an unknown algorithm, we raise ValueError; elsewhere
        # both raise ValueError.
        if mosaic.error is not KeyError:
            assert issubclass(ours.error, mosaic.error), (what, mosaic.error, ours.error)
        return
    assert ours.error is None, f"{what}: streamx raised {ours.error}: {ours.message}"
    np.testing.assert_array_equal(ours.value, mosaic.value, err_msg=what)
    assert np.asarray(ours.value).shape == np.asarray(mosaic.value).shape, what
    assert ours.warnings == mosaic.warnings, what


def mosaic_world(nodes: int, ranks: int, workers: int) -> Any:
    """mosaicml-streaming's ``World`` as seen by the local leader."""
    from streaming.base.world import World

    return World(num_nodes=nodes, ranks_per_node=ranks, workers_per_rank=workers, worker=0)


def mosaic_work(
    spec: OrderSpec, shape: tuple[int, int, int], epoch: int, sample_in_epoch: int
) -> Outcome:
    """``generate_work`` of mosaicml-streaming for this configuration and world."""
    from streaming.base.batching import generate_work

    def run() -> NDArray[np.int64]:
        ds = mosaic_dataset(spec)
        world = mosaic_world(*shape)
        # A namespace stands in for upstream's dataset: it has what ``generate_work`` reads.
        return generate_work(spec.batching_method, ds, world, epoch, sample_in_epoch)  # type: ignore[arg-type]

    return capture(run)


def streamx_config(
    spec: OrderSpec, shape: tuple[int, int, int], epoch: int, sample_in_epoch: int
) -> PlanConfig:
    """The ``_core.plan_epoch`` config that ``streamx.order.epoch`` builds for a dataset."""
    nodes, ranks, workers = shape
    world = XWorld(num_nodes=nodes, ranks_per_node=ranks, rank=0, workers_per_rank=workers)
    return plan_config(
        streamx_plan_streams(spec), streamx_settings(spec), epoch, sample_in_epoch, world
    )


def streamx_work(
    spec: OrderSpec, shape: tuple[int, int, int], epoch: int, sample_in_epoch: int
) -> Outcome:
    """streamx's whole-world plan for the same configuration and world."""

    def run() -> NDArray[np.int64]:
        ids, messages = _core.plan_epoch(streamx_config(spec, shape, epoch, sample_in_epoch))
        emit(messages)
        return ids

    return capture(run)

"""Validation of ``StreamingDataset``'s arguments, with mosaicml-streaming's messages."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from streamx.dataset.in_place_stream import InPlaceStream
from streamx.dataset.layout import DatasetLayout
from streamx.dataset.stream import Stream
from streamx.order.settings import (
    BATCHING_METHODS,
    PARTITION_ALGOS,
    SAMPLING_METHODS,
    SHUFFLE_ALGOS,
    EpochSettings,
)
from streamx.sizes import bytes_to_int, number_abbrev_to_int

__all__ = [
    "StreamDefaults",
    "build_streams",
    "check_settings",
    "check_sources",
    "checked_cache_limit",
    "default_predownload",
    "parse_epoch_size",
]


@dataclass(frozen=True)
class StreamDefaults:
    """The dataset-level arguments every stream takes where it sets none of its own."""

    remote: str | None
    local: str | None
    split: str | None
    download_retry: int
    download_timeout: float
    validate_hash: str | None
    keep_zip: bool


def check_sources(streams: Sequence[Stream] | None, remote: str | None, local: str | None) -> None:
    """Raises ``ValueError`` unless exactly one of ``streams`` and ``remote``/``local`` is given."""
    if bool(streams) == (bool(remote) or bool(local)):
        raise ValueError("You must provide either `streams` or `remote`/`local`, but not both.")


def check_settings(settings: EpochSettings) -> None:
    """Checks the order options, raising ``ValueError`` with upstream's wording."""
    if settings.sampling_method not in SAMPLING_METHODS:
        raise ValueError(
            f"Invalid sampling method: {settings.sampling_method}. Must be one of `balanced` "
            "or `fixed`."
        )
    if settings.sampling_granularity <= 0:
        raise ValueError(
            "`sampling_granularity` must be a positive integer, but got: "
            f"{settings.sampling_granularity}."
        )
    if settings.batching_method not in BATCHING_METHODS:
        raise ValueError(
            f"Invalid batching method: {settings.batching_method}. Must be one of `random`, "
            "`stratified`, `per_stream`, or `device_per_stream`."
        )
    if settings.shuffle_seed < 0:
        raise ValueError(
            f"`shuffle_seed` must be a non-negative integer, but got: {settings.shuffle_seed}."
        )
    if settings.partition_algo not in PARTITION_ALGOS:
        raise ValueError(
            f"Invalid partition algorithm: {settings.partition_algo}. Must be one of "
            f"{list(PARTITION_ALGOS)}."
        )
    if settings.shuffle_algo not in SHUFFLE_ALGOS:
        raise ValueError(
            f"Invalid shuffle algorithm: {settings.shuffle_algo}. Must be one of "
            f"{list(SHUFFLE_ALGOS)}."
        )


def default_predownload(predownload: int | None, batch_size: int | None) -> int:
    """``predownload``, by default ``8 * batch_size`` (64 without a batch size)."""
    if predownload is not None and batch_size is not None and predownload < batch_size:
        warnings.warn(
            f"predownload < batch_size ({predownload} < {batch_size}).This may result in slower "
            "batch time. Recommendation is to set predownload to at-least batch_size.",
            UserWarning,
            stacklevel=3,
        )
    if predownload is None:
        return 8 * batch_size if batch_size is not None else 64
    return predownload


def parse_epoch_size(epoch_size: int | str | None) -> int | None:
    """``epoch_size`` as a number of samples (``'100k'`` allowed), or ``None``."""
    if not epoch_size:
        return None
    size = number_abbrev_to_int(epoch_size)
    if size < 0:
        raise ValueError(f"Epoch size cannot be negative. Received {size}.")
    return size


def build_streams(
    streams: Sequence[Stream] | None,
    defaults: StreamDefaults,
    stream_name: str,
    stream_config: Mapping[str, Any] | None,
) -> list[Stream]:
    """Returns the dataset's streams, with the dataset-level arguments as their defaults.

    ``stream_config`` holds keyword arguments of the registered Stream class
    ``stream_name``, whatever they are.
    """
    given = asdict(defaults)
    if streams:
        out = list(streams)
        for stream in out:
            stream.apply_default(given)
        return out
    cls: type[Stream] = Stream
    if stream_name != "stream":
        from streamx.dataset.registry import streams_registry  # catalogue: only when named

        cls = streams_registry.get(stream_name)
    config = {**(stream_config or {}), **given}
    stream = cls(**config)
    stream.apply_default(given)
    return [stream]


def checked_cache_limit(cache_limit: int | str, layout: DatasetLayout) -> int:
    """``cache_limit`` in bytes, refused (as mosaicml-streaming refuses it) below the
    streams' indexes or below four of the largest shard (raw plus zip). Only a shard the
    limit can count is weighed: an MDS shard (mosaic's rule weighs every one, a local
    stream's too) or one copied into the cache; the units of a source read where it lies
    (local Parquet, tars, LitData chunks) are the user's own files, never counted."""
    limit = bytes_to_int(cache_limit)
    streams = layout.streams
    min_usage = sum(stream.get_index_size() for stream in streams)
    if limit <= min_usage:
        raise ValueError(
            f"Minimum cache usage ({min_usage} bytes) is larger than the cache limit "
            f"({limit} bytes). Please raise `cache_limit`. Recommendation is to "
            "provide a `cache_limit` as high as possible to avoid thrashing."
        )
    weighed_streams = np.array([_weighed(s) for s in streams], bool)
    sizes = layout.shards.max_sizes()[weighed_streams[layout.stream_per_shard]]
    weighed = int(sizes.max()) if len(sizes) else 0
    if limit < 4 * weighed:
        raise ValueError(
            f"Cache limit ({limit} bytes) is too low. Increase the `cache_limit` "
            f"to at-least four times the largest shard size ({weighed} bytes) which includes "
            "raw (decompressed) and zip (compressed) file size. Recommendation is to provide "
            "a `cache_limit` as high as possible to avoid thrashing."
        )
    return limit


def _weighed(stream: Stream) -> bool:
    return stream.copies_into_cache or not isinstance(stream, InPlaceStream)

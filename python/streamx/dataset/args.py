"""Validation of ``StreamingDataset``'s arguments, with mosaicml-streaming's messages."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from typing import Any

from streamx.dataset.stream import Stream
from streamx.sizes import number_abbrev_to_int

__all__ = ["DatasetArgs", "build_streams"]

logger = logging.getLogger(__name__)

SHUFFLE_ALGOS = ("py1e", "py1br", "py1s", "py2s", "naive")
PARTITION_ALGOS = ("orig", "relaxed")
BATCHING_METHODS = ("random", "stratified", "per_stream", "device_per_stream")
_STREAM_DEFAULTS = (
    "remote",
    "local",
    "split",
    "download_retry",
    "download_timeout",
    "validate_hash",
    "keep_zip",
)


@dataclass
class DatasetArgs:
    """The constructor arguments after checks and defaults."""

    values: dict[str, Any]
    epoch_size: int | None = None
    stream_defaults: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def validate(cls, given: dict[str, Any]) -> DatasetArgs:
        """Checks every argument, raising ``ValueError`` with upstream's wording."""
        values = {k: v for k, v in given.items() if k not in ("self", "__class__")}
        if bool(values["streams"]) == (bool(values["remote"]) or bool(values["local"])):
            raise ValueError("You must provide either `streams` or `remote`/`local`, but not both.")
        _check_choices(values)
        _default_predownload(values)
        epoch_size = None
        if values["epoch_size"]:
            epoch_size = number_abbrev_to_int(values["epoch_size"])
            if epoch_size < 0:
                raise ValueError(f"Epoch size cannot be negative. Received {epoch_size}.")
        defaults = {k: values[k] for k in _STREAM_DEFAULTS}
        return cls(values, epoch_size, defaults)


def _check_choices(values: dict[str, Any]) -> None:
    if values["sampling_method"] not in ("balanced", "fixed"):
        raise ValueError(
            f"Invalid sampling method: {values['sampling_method']}. Must be one of `balanced` "
            "or `fixed`."
        )
    if values["sampling_granularity"] <= 0:
        raise ValueError(
            "`sampling_granularity` must be a positive integer, but got: "
            f"{values['sampling_granularity']}."
        )
    if values["batching_method"] not in BATCHING_METHODS:
        raise ValueError(
            f"Invalid batching method: {values['batching_method']}. Must be one of `random`, "
            "`stratified`, `per_stream`, or `device_per_stream`."
        )
    if values["shuffle_seed"] < 0:
        raise ValueError(
            f"`shuffle_seed` must be a non-negative integer, but got: {values['shuffle_seed']}."
        )
    if values["partition_algo"] not in PARTITION_ALGOS:
        raise ValueError(
            f"Invalid partition algorithm: {values['partition_algo']}. Must be one of "
            f"{list(PARTITION_ALGOS)}."
        )
    if values["shuffle_algo"] not in SHUFFLE_ALGOS:
        raise ValueError(
            f"Invalid shuffle algorithm: {values['shuffle_algo']}. Must be one of "
            f"{list(SHUFFLE_ALGOS)}."
        )


def _default_predownload(values: dict[str, Any]) -> None:
    predownload, batch_size = values["predownload"], values["batch_size"]
    if predownload is not None and batch_size is not None and predownload < batch_size:
        warnings.warn(
            f"predownload < batch_size ({predownload} < {batch_size}).This may result in slower "
            "batch time. Recommendation is to set predownload to at-least batch_size.",
            UserWarning,
            stacklevel=4,
        )
    elif predownload is None:
        values["predownload"] = 8 * batch_size if batch_size is not None else 64


def build_streams(args: DatasetArgs) -> list[Stream]:
    """Returns the dataset's streams, with the dataset-level arguments as their defaults."""
    values = args.values
    if values["streams"]:
        streams = list(values["streams"])
        for stream in streams:
            stream.apply_default(args.stream_defaults)
        return streams
    if values["stream_name"] != "stream":
        from streamx.dataset.registry import streams_registry

        cls = streams_registry.get(values["stream_name"])
    else:
        cls = Stream
    config = dict(values["stream_config"] or {})
    config.update(args.stream_defaults)
    stream = cls(**config)
    stream.apply_default(args.stream_defaults)
    return [stream]

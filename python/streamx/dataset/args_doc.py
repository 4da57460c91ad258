"""The :class:`~streamx.StreamingDataset` arguments' descriptions, written once for the
docstrings of the domain datasets (``streamx.text``, ``streamx.vision``,
``streamx.multimodal``), which take them with mosaicml-streaming's defaults per class."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

__all__ = ["PLACEHOLDER", "streaming_args_doc", "with_streaming_args"]

T = TypeVar("T", bound=type)

# The line of a class docstring's ``Args:`` that the shared descriptions replace.
PLACEHOLDER = "        {streaming_args}\n"

_ARGS: dict[str, str] = {
    "remote": "Remote directory or URL to stream from; ``None`` if the data is local.",
    "local": "Local cache directory.",
    "split": "Sub-directory of ``remote`` and ``local``.",
    "download_retry": "Download attempts per file.",
    "download_timeout": "Seconds allowed per download.",
    "validate_hash": "Hash algorithm checked on download.",
    "keep_zip": "Keep compressed shards after decompressing them.",
    "epoch_size": "Samples per epoch.",
    "predownload": "Samples each worker prepares ahead.",
    "cache_limit": "Byte limit of the shard cache.",
    "partition_algo": "``'orig'`` or ``'relaxed'``.",
    "num_canonical_nodes": "Canonical node count of the sample order.",
    "batch_size": "Per-device batch size of the DataLoader.",
    "shuffle": "Shuffle the samples.",
    "shuffle_algo": "Shuffle algorithm.",
    "shuffle_seed": "Seed of the shuffle.",
    "shuffle_block_size": "Block size of the block-based shuffles.",
}


def streaming_args_doc(overrides: Mapping[str, str] | None = None) -> str:
    """The ``Args:`` lines of the shared arguments, indented for a class docstring.

    Args:
        overrides: Argument name to a description that replaces the shared one.

    Raises:
        KeyError: for an override naming no shared argument.

    Examples:
        >>> streaming_args_doc({"local": "Where shards go."}).splitlines()[1]
        '        local: Where shards go.'
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(_ARGS))
    if unknown:
        raise KeyError(f"not shared StreamingDataset arguments: {unknown}")
    return "".join(f"        {name}: {overrides.get(name, text)}\n" for name, text in _ARGS.items())


def with_streaming_args(**overrides: str) -> Callable[[T], T]:
    """A class decorator: the docstring's ``{streaming_args}`` line becomes the shared
    arguments' descriptions (with `overrides`).

    Raises:
        ValueError: if the class docstring has no ``{streaming_args}`` line.
    """

    def decorate(cls: T) -> T:
        doc = cls.__doc__ or ""
        if PLACEHOLDER not in doc:
            raise ValueError(f"{cls.__qualname__}'s docstring has no {PLACEHOLDER.strip()} line")
        cls.__doc__ = doc.replace(PLACEHOLDER, streaming_args_doc(overrides))
        return cls

    return decorate

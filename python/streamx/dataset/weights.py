"""Stream weights: from each stream's ``proportion``/``repeat``/``choose`` (or none) to the
samples every stream contributes to an epoch, exactly as mosaicml-streaming derives them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["derive_weights", "validate_weights"]

_KEYS = ("proportion", "repeat", "choose")


class Weighted(Protocol):
    """A stream as seen here: weights are attributes, present only once given or derived."""

    proportion: float
    repeat: float
    choose: int


def validate_weights(streams: Sequence[Weighted]) -> tuple[bool, bool]:
    """Returns ``(relative, unspecified)``: whether streams are weighted by ``proportion``,
    and whether no stream gives any weight.

    Raises:
        ValueError: If a stream gives more than one weight, or relative and absolute weights
            are mixed.
    """
    relative = hasattr(streams[0], "proportion")
    unspecified = True
    for stream_id, stream in enumerate(streams):
        given = [hasattr(stream, key) for key in _KEYS]
        if sum(given) > 1:
            raise ValueError(
                "Streams must provide at most one of `proportion`, `repeat`, or `choose` "
                f"(error in stream {stream_id})"
            )
        if given[0] != relative:
            raise ValueError(
                "Relative (`proportion`) and absolute (`repeat`, `choose`, none) stream weights "
                f"are incompatible with each other (error in stream {stream_id})"
            )
        unspecified = unspecified and not any(given)
    return relative, unspecified


def derive_weights(
    streams: Sequence[Weighted],
    samples_per_stream: NDArray[np.int64],
    choose_per_epoch: int | None,
    seed: int,
    relative: bool,
    unspecified: bool,
) -> int:
    """Sets every stream's ``proportion``, ``repeat`` and ``choose``; returns the epoch size.

    Relative weights (or none, with an epoch size) split the epoch by weight; the rounding
    shortfall goes one sample each to streams drawn with ``default_rng(seed)``.

    Raises:
        ValueError: If an epoch size is given with absolute weights.
    """
    if relative or (unspecified and choose_per_epoch):
        if relative:
            weights = np.array([s.proportion for s in streams], np.float64)
        else:
            weights = samples_per_stream.astype(np.float64)
        total = int(choose_per_epoch or samples_per_stream.sum())
        weights /= weights.sum()
        choose = (total * weights).astype(np.int64)
        shortfall = total - int(choose.sum())
        picked = np.random.default_rng(seed).choice(len(streams), shortfall, False)
        choose[picked] += 1
        proportions = weights
    else:
        if choose_per_epoch:
            raise ValueError("Only provide `choose` when weighting streams relatively")
        choose = np.array(
            [_absolute_choose(s, int(n)) for s, n in zip(streams, samples_per_stream)], np.int64
        )
        proportions = choose / choose.sum()
        total = int(choose.sum())
    repeats = choose / samples_per_stream
    for stream, proportion, repeat, count in zip(streams, proportions, repeats, choose):
        stream.proportion, stream.repeat, stream.choose = proportion, repeat, count
    return total


def _absolute_choose(stream: Weighted, samples: int) -> int:
    if hasattr(stream, "repeat"):
        return int(stream.repeat * samples)
    if hasattr(stream, "choose"):
        return int(stream.choose)
    return samples

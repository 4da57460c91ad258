"""How many ranged GETs a file is fetched in: many for a file a reader waits for, few for a
file fetched ahead.

Object stores bill per request, and each GET runs at the store's per-connection rate, so
parts are what buy a file's speed. A file a reader waits for now (the first shard, a shard
the look-ahead did not reach, a compressed shard that cannot be read by range) spreads over
its share of the node's connections: it arrives in about the time of one small part. A
file fetched ahead (:func:`looking_ahead`: a shard the reader reaches later) has until then,
and the connections are busy with the other files in flight anyway, so its parts are as
large as ``STREAMX_DOWNLOAD_AHEAD_PART_SIZE`` (default 8 MiB: a fifth of a second at the
40 MB/s S3 gives each GET), a quarter of the requests of 2 MiB parts.
While the host throttles, both take the larger parts the request pace allows
(:meth:`~streamx.storage.throttle.AdaptiveLimit.requests_for_files`).

A shard whose reader read its first samples by range (:func:`after_ranges`) is read on from
its parts as they land, in order (:mod:`streamx.cache.landed_reads`): its parts *ramp*, each
twice the one before from the size of a file needed now up to the look-ahead's, so its first
bytes land as soon as a small part's and the rest in few requests, by the time the reader
reaches them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from streamx.storage.parts import split
from streamx.storage.settings import ahead_part_size, part_size

__all__ = ["after_ranges", "is_look_ahead", "looking_ahead", "plan_part_size", "plan_parts"]

_AHEAD: contextvars.ContextVar[bool] = contextvars.ContextVar("streamx_look_ahead", default=False)
_RAMP: contextvars.ContextVar[bool] = contextvars.ContextVar("streamx_ramp", default=False)


@contextlib.contextmanager
def after_ranges(ramp: bool = True) -> Iterator[None]:
    """Marks the downloads started in this context as read on from their parts as they land
    (their reader read the first samples by range): their parts ramp."""
    token = _RAMP.set(ramp)
    try:
        yield
    finally:
        _RAMP.reset(token)


@contextlib.contextmanager
def looking_ahead(ahead: bool = True) -> Iterator[None]:
    """Marks the downloads started in this context as fetched ahead of their reader
    (``ahead=False``: as needed now, the default outside any such context)."""
    token = _AHEAD.set(ahead)
    try:
        yield
    finally:
        _AHEAD.reset(token)


def is_look_ahead() -> bool:
    """Whether downloads started here are fetched ahead (set by :func:`looking_ahead`)."""
    return _AHEAD.get()


def plan_part_size(size: int, connections: int, files: int, throttled: int = 0) -> int:
    """Bytes per ranged GET for a ``size``-byte file: ``connections`` node slots shared by
    the ``files`` this process fetches at once; ``throttled`` is the smallest part a
    throttling host allows (0 while calm).

    Raises:
        ValueError: If ``STREAMX_DOWNLOAD_PART_SIZE`` or ``STREAMX_DOWNLOAD_AHEAD_PART_SIZE``
            is not a positive integer.
    """
    part = part_size(size, max(connections // max(files, 1), 1))
    if is_look_ahead():
        part = max(part, ahead_part_size())
    return max(part, throttled)


def plan_parts(
    size: int, connections: int, files: int, throttled: int = 0
) -> list[tuple[int, int]]:
    """``(start, length)`` of each ranged GET of a ``size``-byte file (arguments as
    :func:`plan_part_size`): one size for all, or ramping up under :func:`after_ranges`.

    Raises:
        ValueError: As :func:`plan_part_size`.
    """
    part = plan_part_size(size, connections, files, throttled)
    if not _RAMP.get() or is_look_ahead():
        return split(size, part)
    largest = max(part, ahead_part_size())
    parts = []
    start = 0
    while start < size:
        length = min(part, size - start)
        parts.append((start, length))
        start += length
        part = min(part * 2, largest) if len(parts) > 1 else part
    return parts

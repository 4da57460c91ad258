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
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from streamx.storage.settings import ahead_part_size, part_size

__all__ = ["is_look_ahead", "looking_ahead", "plan_part_size"]

_AHEAD: contextvars.ContextVar[bool] = contextvars.ContextVar("streamx_look_ahead", default=False)


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

"""The cache ledger of a complete cache this process may not write (a shared read-only
mirror): every shard is already local, nothing is downloaded, pinned or evicted."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from streamx.cache.cached_files import bytes_present, files_ready
from streamx.format.index import ShardInfo

__all__ = ["ReadOnlyLedger", "mirror_ledger"]


class ReadOnlyLedger:
    """Stands in for :class:`streamx._core.CacheLedger` over a read-only, complete cache.

    Args:
        sizes: Bytes on disk of each shard (0 for a shard that is not tracked).
    """

    limit: int | None = None
    path = ""  # no ledger file: nothing here is shared with other processes

    def __init__(self, sizes: list[int]) -> None:
        self._sizes = sizes
        self.usage = sum(sizes)

    def begin_download(
        self, shard: int, nbytes: int, must_fit: bool = False
    ) -> tuple[str, list[int]]:
        return ("local", [])

    def finish_download(self, shard: int, nbytes: int) -> None:
        raise PermissionError(f"shard {shard}: the cache is read-only")

    def touch(self, shard: int) -> None:
        return None

    def pin(self, shard: int) -> bool:
        return False

    def unpin(self, shard: int) -> None:
        return None

    def abort_download(self, shard: int) -> None:
        return None

    def state(self, shard: int) -> str:
        return "local"

    def bytes(self, shard: int) -> int:
        return self._sizes[shard]

    def pins(self, shard: int) -> int:
        return 0

    def set_evictable(self, start: int, stop: int, evictable: bool) -> None:
        return None

    def sync(self, shard: int, nbytes: int | None = None) -> bool:
        return False

    def evict(self, shard: int) -> int | None:
        raise PermissionError(f"shard {shard} cannot be evicted: the cache is read-only")

    def evict_coldest(self) -> int | None:
        return None

    def trim_to_limit(self) -> list[int]:
        return []  # no limit applies to a read-only cache

    def recover(self) -> tuple[int, int]:
        return (0, 0)

    def held_shards(self) -> list[int]:
        return list(range(len(self._sizes)))  # every shard reads as local


def mirror_ledger(
    home: str, shards: Sequence[ShardInfo], remote: NDArray[np.bool_]
) -> ReadOnlyLedger:
    """The ledger of the read-only cache directory `home`: usable as it is when every shard
    with a remote (``remote``) is there.

    Raises:
        PermissionError: If a shard is missing (it could not be downloaded).
    """
    missing = [s.raw_data.basename for s, r in zip(shards, remote) if r and not files_ready(s)]
    if missing:
        raise PermissionError(
            f"Cache directory {home} is read-only and lacks {len(missing)} shard(s) "
            f"(first: {missing[0]}), which cannot be downloaded there. Use a writable "
            "`local`, or complete the mirror."
        )
    warnings.warn(
        f"Cache directory {home} is read-only: reading the shards already there, with no "
        "cache ledger (nothing is downloaded or evicted, and cache_limit is not applied)",
        UserWarning,
        stacklevel=4,
    )
    return ReadOnlyLedger([bytes_present(s) if r else 0 for s, r in zip(shards, remote)])

"""The cache ledger of a complete cache this process may not write (a shared read-only
mirror): every shard is already local, nothing is downloaded, pinned or evicted."""

from __future__ import annotations

__all__ = ["ReadOnlyLedger"]


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

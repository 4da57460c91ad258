"""The shape of ``streamx._core.ledger_snapshot``'s answer: a cache ledger read at one moment."""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = ["LedgerPinSnapshot", "LedgerShardSnapshot", "LedgerSnapshot"]


class LedgerShardSnapshot(TypedDict):
    """One shard's entry. ``owner_*`` name the process preparing it (None when none)."""

    state: Literal["remote", "preparing", "local"]
    bytes: int
    pins: int
    last_access_ns: int
    evictable: bool
    owner_pid: int | None
    owner_alive: bool | None


class LedgerPinSnapshot(TypedDict):
    """A process's ``count`` nested pins on ``shard``; ``alive`` is False once it died."""

    pid: int
    alive: bool
    shard: int
    count: int


class LedgerSnapshot(TypedDict):
    """A whole ledger: its byte ``limit`` (None: none), ``usage``, shards and pin table."""

    path: str
    limit: int | None
    usage: int
    shards: list[LedgerShardSnapshot]
    pins: list[LedgerPinSnapshot]

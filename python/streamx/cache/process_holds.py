"""The pins this process holds on a ledger, across every dataset open over it.

A shard needed now waits for room only where another process holds what fills the limit
(:mod:`.room`): waiting on this process's own pins would never end. Two datasets over one
cache directory share a ledger, so the count is kept per ledger file and process, not per
dataset. A forked child starts with none: its parent's pins are not its own.
"""

from __future__ import annotations

import os
import threading

__all__ = ["add", "held", "remove"]

_lock = threading.Lock()
_pid = -1
_by_ledger: dict[str, dict[int, int]] = {}


def _mine() -> dict[str, dict[int, int]]:
    """The table of this process (emptied after a fork). Caller holds the lock."""
    global _pid
    if _pid != os.getpid():
        _pid = os.getpid()
        _by_ledger.clear()
    return _by_ledger


def add(ledger: str, shard: int) -> None:
    """Records one pin this process took on ``shard`` of ``ledger``."""
    with _lock:
        counts = _mine().setdefault(ledger, {})
        counts[shard] = counts.get(shard, 0) + 1


def remove(ledger: str, shard: int) -> None:
    """Records that this process released one pin on ``shard`` of ``ledger``."""
    with _lock:
        counts = _mine().get(ledger, {})
        left = counts.pop(shard, 0) - 1
        if left > 0:
            counts[shard] = left


def held(ledger: str) -> set[int]:
    """The shards of ``ledger`` this process pins now."""
    with _lock:
        return set(_mine().get(ledger, {}))

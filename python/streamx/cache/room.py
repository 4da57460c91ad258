"""Reserving a shard needed now without going over ``cache_limit``.

A shard a reader needs right now used to be reserved even when nothing could be evicted,
going over the limit until a pin dropped. Now its reservation waits for room, which other
processes make as they finish their downloads and move their windows on: each process pins
at most its share of what the cache holds, so the windows of all the node's processes fit
together and the wait ends. Two cases would never end, and only there does the reservation go
over the limit (the cache is trimmed back once a pin drops):

- this process's own holds (with the shard itself) already fill the limit: nobody else can
  make the room, and waiting on ourselves would deadlock;
- the ledger's usage has not moved for :data:`STALL_S` (the node runs more readers than the
  share was cut for, say): the run goes on, with a warning naming the limit.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

from streamx import _core

__all__ = ["STALL_S", "begin_within_limit"]

# How long usage may stand still before waiting for room is given up as hopeless.
STALL_S = 30.0
_FIRST_PAUSE_S = 0.002
_MAX_PAUSE_S = 0.05


def begin_within_limit(
    ledger: _core.CacheLedger,
    shard_id: int,
    needed: int,
    held_here: Callable[[int], int],
    stall_s: float = STALL_S,
) -> tuple[str, list[int]]:
    """Reserves ``needed`` bytes for ``shard_id``, waiting for room under the limit.

    Args:
        ledger: The node's cache ledger.
        shard_id: The shard a reader needs now.
        needed: The bytes its download may take on disk at most.
        held_here: Bytes of local shards this process itself holds, ``shard_id`` left out.
        stall_s: How long usage may stand still before the reservation goes over the limit.

    Returns:
        The ledger's answer, as ``begin_download`` gives it (never ``"noroom"``).
    """
    seen, since = ledger.usage, time.monotonic()
    pause = _FIRST_PAUSE_S
    while True:
        decision, evicted = ledger.begin_download(shard_id, needed, must_fit=True)
        if decision != "noroom":
            return decision, evicted
        limit = ledger.limit
        if limit is None or held_here(shard_id) + needed > limit:
            return ledger.begin_download(shard_id, needed)
        now, usage = time.monotonic(), ledger.usage
        if usage != seen:
            seen, since = usage, now
        elif now - since > stall_s:
            warnings.warn(
                f"cache_limit ({limit} bytes of shards) is full of shards other readers hold "
                f"and nothing changed for {stall_s:g} s: shard {shard_id} ({needed} bytes) "
                "goes over the limit until a hold is released (more readers on this node "
                "than the cache was shared between?)",
                UserWarning,
                stacklevel=2,
            )
            return ledger.begin_download(shard_id, needed)
        time.sleep(pause)
        pause = min(pause * 2, _MAX_PAUSE_S)
